/* step_graph.c — decode steps recorded once and replayed (on by default; QSERVE_CUDA_GRAPHS=0 off).
 * A decode step of an 8B model is ~450 small launches issued one by one from the host; a graph
 * issues them in one call. Device-neutral: it drives the device through ops->graph, which only
 * the CUDA ops fill.
 *
 *  - Which steps: decode steps (every sequence brings one token and wants logits). Prefill and
 *    mixed steps, and batches beyond QS_GRAPH_MAX_SEQS, run eagerly as before.
 *  - Buckets: a batch of n sequences runs in the graph of the next bucket (1, 2, 4, 8, 16, 24,
 *    ... every multiple of 8, up to max-num-seqs), padded with dummy rows (step_graph_plan.h)
 *    whose outputs are ignored and whose KV writes are skipped. Padding changes nothing in the
 *    real rows except where a layer quantizes its activations with one dynamic scale over the
 *    whole batch: then every batch size is a bucket of its own and nothing is padded.
 *  - Fixed buffers: everything that changes per step lives in one device buffer (token ids,
 *    positions, KV slots, block tables of a fixed row stride), refreshed before each replay by
 *    two asynchronous copies from page-locked memory on the model's stream. The graphs bind
 *    to one KV cache (its buffers' addresses are in them); another cache rebuilds everything.
 *  - Warm-up: the first step of a bucket runs eagerly over those buffers (its logits are used),
 *    so every scratch buffer, workspace, cuBLASLt algorithm and kernel attribute the step needs
 *    exists; the next step of that bucket is captured and replayed, and later ones replayed.
 *  - Moved buffers: the model's step scratch and the device's kernel scratch grow with larger
 *    (prefill) steps, and a graph holds the old addresses. Both keep a generation counter; when
 *    one moved, every captured graph is dropped and captured again at its bucket's next step.
 *  - Sampling: on a device with the sampling op (and QSERVE_DEVICE_SAMPLING not 0) every graph
 *    also records ops->sample after the lm_head, reading the rows' parameters from a fixed device
 *    buffer refreshed by a third asynchronous copy from page-locked memory. A step that samples on
 *    the host (qs_model_forward), its rows left to the host sampler and the dummy rows are marked
 *    skip there: the op writes -1 for them and their logits are copied out as before. So one graph
 *    serves both kinds of step and only token ids (and the skipped rows' logits) come back.
 *  - Fallbacks: a capture that fails (a kernel path that allocates or synchronises, which the
 *    device refuses inside a capture) leaves that bucket eager with one warning; a model with an MoE
 *    layer whose kernel routes through the host (cublaslt, emulation) runs eagerly, said once. */
#include "model/step_graph.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model/kv_cache.h"
#include "model/step_graph_plan.h"
#include "util/log.h"

enum { BUCKET_NEW, BUCKET_WARM, BUCKET_CAPTURED, BUCKET_EAGER };

typedef struct {
    int state;
    void *exec;                /* the executable graph once captured */
} graph_bucket;

typedef struct qs_step_graphs qs_step_graphs;
struct qs_step_graphs {
    int max_num_seqs;          /* from the config */
    int max_len;               /* positions a sequence may reach; 0: only the cache bounds it */
    bool exact;                /* no padding (see the top of the file) */
    bool off;                  /* binding failed: every step runs eagerly */
    /* Bound to one KV cache: */
    qs_kv_cache *kv;
    int kv_blocks;
    void **kv_bufs;            /* [2 * num_layers]: the K and V buffers the graphs hold */
    qs_graph_plan plan;
    qs_graph_layout lay;
    int32_t *host;             /* page-locked mirror of dev */
    int32_t *dev;              /* the fixed index buffer */
    qs_sample_row *host_rows;  /* page-locked [plan.max_seqs] sampling parameters; NULL: no sampling */
    qs_sample_row *dev_rows;   /* their fixed device buffer */
    graph_bucket *b;           /* [plan.n_buckets] */
    uint64_t model_epoch, device_epoch; /* the buffer generations the captured graphs hold */
};

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

/* Whether padding rows would change real rows: a dynamic per-tensor activation scale is the
 * maximum over every row of the GEMM, the dummy rows included. */
static bool needs_exact_batches(const qs_model *m)
{
    for (int i = 0; i < m->mc.num_layers; i++) {
        const qs_layer *L = &m->layers[i];
        const qs_linear *ls[] = {&L->q, &L->k, &L->v, &L->qkv, &L->o, &L->gate, &L->up, &L->gate_up, &L->down};
        for (size_t j = 0; j < sizeof ls / sizeof *ls; j++)
            if (ls[j]->kernel && ls[j]->desc.aquant == QS_AQUANT_DYNAMIC_TENSOR)
                return true;
    }
    return m->lm_head.kernel && m->lm_head.desc.aquant == QS_AQUANT_DYNAMIC_TENSOR;
}

/* The first MoE layer whose kernel sends its routing through the host, or NULL. */
static const qs_layer *host_routed_moe(const qs_model *m)
{
    for (int i = 0; i < m->mc.num_layers; i++)
        if (m->layers[i].is_moe && !m->layers[i].moe.kernel->moe_device_routed)
            return &m->layers[i];
    return NULL;
}

int qs_step_graphs_init(qs_model *m, const qs_config *cfg, qs_err *err)
{
    const char *v = getenv("QSERVE_CUDA_GRAPHS");
    bool asked = v && *v, on = true; /* on by default; only an explicit request is worth a log line where ignored */
    if (asked && qs_parse_bool(v, &on))
        return qs_errf(err, "QSERVE_CUDA_GRAPHS: expected 1 or 0 (or true/false), got '%s'", v);
    if (!on)
        return 0;
    const qs_graph_ops *g = m->ops->graph;
    if (cfg->enforce_eager) {
        if (g)
            qs_info("decode graphs off (--enforce-eager): every step runs eagerly");
        return 0;
    }
    if (!g) {
        if (asked)
            qs_info("QSERVE_CUDA_GRAPHS=1 ignored: the %s device has no graphs", m->ops->name);
        return 0;
    }
    const qs_layer *host_moe = host_routed_moe(m);
    if (host_moe) {
        qs_info("decode graphs off: the %s MoE kernel of %s sends its routing through the host every step, which "
                "a graph cannot hold; decode steps run eagerly (--moe-backend marlin routes on the device)",
                host_moe->moe.kernel->name, host_moe->moe.desc.name);
        return 0;
    }
    qs_step_graphs *G = calloc(1, sizeof *G);
    if (!G)
        return qs_errf(err, "out of memory");
    G->max_num_seqs = qs_config_max_num_seqs(cfg, true);
    G->max_len = cfg->max_model_len > 0 ? cfg->max_model_len : m->mc.max_position_embeddings;
    G->exact = needs_exact_batches(m);
    if (!(m->stream = g->stream_create(err))) {
        free(G);
        return qs_err_prefix(err, "QSERVE_CUDA_GRAPHS: ");
    }
    m->graphs = G;
    int top = G->max_num_seqs < QS_GRAPH_MAX_SEQS ? G->max_num_seqs : QS_GRAPH_MAX_SEQS;
    qs_info("decode graphs on (QSERVE_CUDA_GRAPHS=0 turns them off): decode steps of up to %d sequences are "
            "captured once per %s and replayed; prefill and mixed steps run eagerly",
            top, G->exact ? "batch size (dynamic per-tensor activation scales: no padding)" : "bucket of 1, 2, 4, 8, 16, 24, ...");
    return 0;
}

/* Drops every captured graph and the buffers bound to a cache. */
static void unbind(qs_model *m, qs_step_graphs *G)
{
    const qs_graph_ops *g = m->ops->graph;
    for (int i = 0; G->b && i < G->plan.n_buckets; i++)
        g->graph_destroy(G->b[i].exec);
    free(G->b);
    G->b = NULL;
    if (G->host)
        g->host_free(G->host);
    if (G->dev)
        m->ops->free(G->dev);
    G->host = G->dev = NULL;
    if (G->host_rows)
        g->host_free(G->host_rows);
    if (G->dev_rows)
        m->ops->free(G->dev_rows);
    G->host_rows = G->dev_rows = NULL;
    free(G->kv_bufs);
    G->kv_bufs = NULL;
    G->kv = NULL;
}

void qs_step_graphs_free(qs_model *m)
{
    if (!m->graphs)
        return;
    m->ops->graph->stream_destroy(m->stream); /* waits for the stream first */
    m->stream = NULL;
    unbind(m, m->graphs);
    free(m->graphs);
    m->graphs = NULL;
}

static bool bound_to(qs_model *m, const qs_step_graphs *G, qs_kv_cache *kv)
{
    if (G->kv != kv || G->kv_blocks != qs_kv_cache_num_blocks(kv))
        return false;
    for (int l = 0; l < m->mc.num_layers; l++)
        if (G->kv_bufs[2 * l] != qs_kv_cache_k(kv, l) || G->kv_bufs[2 * l + 1] != qs_kv_cache_v(kv, l))
            return false;
    return true;
}

/* Makes the graphs serve kv: the plan (the table stride is the most blocks a sequence of this
 * cache can hold), the fixed buffers with their constant parts, no graph captured yet. */
static int bind(qs_model *m, qs_step_graphs *G, qs_kv_cache *kv, qs_err *err)
{
    if (bound_to(m, G, kv))
        return 0;
    unbind(m, G);
    const qs_graph_ops *g = m->ops->graph;
    int nb = qs_kv_cache_num_blocks(kv);
    int per_seq = G->max_len > 0 ? (G->max_len + QS_KV_BLOCK_SIZE - 1) / QS_KV_BLOCK_SIZE : nb;
    if (per_seq > nb)
        per_seq = nb;
    if (qs_graph_plan_init(&G->plan, G->max_num_seqs, per_seq, G->exact, err))
        return -1;
    qs_graph_layout_of(&G->plan, &G->lay);
    size_t bytes = sizeof(int32_t) * (size_t)G->lay.total;
    G->b = calloc((size_t)G->plan.n_buckets, sizeof *G->b);
    G->kv_bufs = malloc(sizeof(void *) * 2 * (size_t)m->mc.num_layers);
    if (!G->b || !G->kv_bufs)
        return qs_errf(err, "out of memory");
    if (!(G->host = g->host_alloc(bytes, err)) || !(G->dev = m->ops->alloc(bytes, err)))
        return qs_err_prefix(err, "decode graph index buffers (%zu bytes): ", bytes);
    qs_graph_fill_constant(&G->plan, G->host);
    if (m->ops->copy_to_device(G->dev, G->host, bytes, err))
        return -1;
    if (m->sample_on_device) {
        size_t rb = sizeof(qs_sample_row) * (size_t)G->plan.max_seqs;
        if (!(G->host_rows = g->host_alloc(rb, err)) || !(G->dev_rows = m->ops->alloc(rb, err)))
            return qs_err_prefix(err, "decode graph sampling parameters (%zu bytes): ", rb);
    }
    for (int l = 0; l < m->mc.num_layers; l++) {
        G->kv_bufs[2 * l] = qs_kv_cache_k(kv, l);
        G->kv_bufs[2 * l + 1] = qs_kv_cache_v(kv, l);
    }
    G->kv = kv;
    G->kv_blocks = nb;
    G->model_epoch = m->s.epoch;
    G->device_epoch = g->buffers_epoch();
    qs_info("decode graphs: bound to a KV cache of %d blocks; block tables of %d entries a row; %d buckets", nb,
            per_seq, G->plan.n_buckets);
    return 0;
}

/* A captured graph holds the addresses of the step scratch and of the device's kernel scratch;
 * when either moved, the graphs are dropped (their buckets stay warm: buffers only grow). */
static void check_buffers(qs_model *m, qs_step_graphs *G)
{
    uint64_t me = m->s.epoch, de = m->ops->graph->buffers_epoch();
    if (me == G->model_epoch && de == G->device_epoch)
        return;
    for (int i = 0; i < G->plan.n_buckets; i++) {
        graph_bucket *bk = &G->b[i];
        if (bk->state != BUCKET_CAPTURED)
            continue;
        m->ops->graph->graph_destroy(bk->exec);
        bk->exec = NULL;
        bk->state = BUCKET_WARM;
    }
    G->model_epoch = me;
    G->device_epoch = de;
}

/* Records the step into bk's graph. On failure the bucket runs eagerly from now on. */
static bool capture(qs_model *m, graph_bucket *bk, qs_kv_cache *kv, const qs_attn_batch *b, const int32_t *ids,
                    const int32_t *rows, const qs_sample_row *d_rows, int size)
{
    const qs_graph_ops *g = m->ops->graph;
    qs_err cerr = {{0}};
    double t0 = now_ms();
    void *exec = NULL;
    size_t nodes = 0;
    int rc = g->capture_begin(&cerr);
    if (rc == 0) {
        rc = qs_forward_run_sample(m, kv, b, ids, rows, size, d_rows, &cerr);
        qs_err eerr = {{0}};
        int end = g->capture_end(&exec, &nodes, &eerr);
        if (rc == 0 && end != 0) {
            rc = -1;
            cerr = eerr;
        }
    }
    if (rc != 0) {
        g->graph_destroy(exec);
        bk->state = BUCKET_EAGER;
        qs_warn("the decode graph of the %d-row bucket could not be captured, so decode steps in that bucket run "
                "eagerly: %s",
                size, cerr.msg);
        return false;
    }
    bk->exec = exec;
    bk->state = BUCKET_CAPTURED;
    qs_info("decode graph captured for the %d-row bucket: %zu nodes, %.1f ms", size, nodes, now_ms() - t0);
    return true;
}

/* The sampling parameters of the bucket's `size` rows: the step's n rows as given (all skipped when
 * sample is NULL), the dummy rows skipped. */
static void fill_rows(qs_sample_row *host_rows, const qs_sample_row *sample, int n, int size)
{
    for (int i = 0; i < size; i++) {
        if (sample && i < n) {
            host_rows[i] = sample[i];
        } else {
            memset(&host_rows[i], 0, sizeof host_rows[i]);
            host_rows[i].skip = 1;
        }
    }
}

int qs_step_graphs_forward(qs_model *m, qs_kv_cache *kv, const qs_seq_step *seqs, int n_seqs,
                           const qs_sample_row *sample, int32_t *tokens, float *logits, qs_err *err)
{
    qs_step_graphs *G = m->graphs;
    if (!G || G->off || !qs_graph_step_is_decode(seqs, n_seqs))
        return 0;
    const qs_graph_ops *g = m->ops->graph;
    qs_err berr = {{0}};
    if (bind(m, G, kv, &berr)) {
        qs_warn("decode graphs off, every step runs eagerly: %s", berr.msg);
        unbind(m, G);
        G->off = true;
        return 0;
    }
    int size, bi = qs_graph_bucket(&G->plan, n_seqs, &size);
    if (bi < 0 || G->b[bi].state == BUCKET_EAGER)
        return 0;
    if (qs_scratch_reserve(m, size, size, 1, size, err))
        return -1;
    check_buffers(m, G);
    int width = qs_graph_fill_step(&G->plan, seqs, n_seqs, size, G->host);
    if (width < 0)
        return 0;
    const qs_graph_layout *l = &G->lay;
    size_t pitch = sizeof(int32_t) * (size_t)G->plan.stride;
    if (g->copy_async(G->dev, G->host, sizeof(int32_t) * (size_t)l->per_step, err) ||
        g->copy_2d_async(G->dev + l->tables, pitch, G->host + l->tables, pitch, sizeof(int32_t) * (size_t)width,
                         (size_t)n_seqs, err))
        return -1;
    const qs_sample_row *d_rows = G->dev_rows;
    if (d_rows) {
        fill_rows(G->host_rows, sample, n_seqs, size);
        if (g->copy_async(G->dev_rows, G->host_rows, sizeof(qs_sample_row) * (size_t)size, err))
            return -1;
    }
    qs_attn_batch b = {.n_tokens = size, .n_seqs = size, .max_blocks = G->plan.stride, .tok_seq = G->dev + l->seq,
                       .tok_pos = G->dev + l->pos, .block_tables = G->dev + l->tables,
                       .slot_mapping = G->dev + l->slots, .sliding_window = m->mc.sliding_window};
    const int32_t *ids = G->dev + l->ids, *rows = G->dev + l->out_rows;
    graph_bucket *bk = &G->b[bi];
    if (bk->state == BUCKET_NEW) {
        /* Warm-up: this step runs eagerly over the fixed buffers, and its logits are used. */
        if (qs_forward_run_sample(m, kv, &b, ids, rows, size, d_rows, err))
            return -1;
        bk->state = BUCKET_WARM;
        check_buffers(m, G); /* what the warm-up grew leaves other buckets' graphs stale */
    } else {
        if (bk->state == BUCKET_WARM && !capture(m, bk, kv, &b, ids, rows, d_rows, size))
            return 0; /* the indices are uploaded again by the eager step */
        if (g->graph_launch(bk->exec, err))
            return -1;
    }
    /* a sampling step (only asked of a model that samples on the device, so the graphs recorded
     * the op): tokens, and the skipped rows' logits; else every row's logits */
    if (qs_forward_outputs(m, sample ? G->host_rows : NULL, n_seqs, logits, tokens, err))
        return -1;
    return 1;
}
