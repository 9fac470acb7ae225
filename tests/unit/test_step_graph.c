/* test_step_graph.c — decode-step graphs without a GPU.
 *  - The bookkeeping of model/step_graph_plan.c: which bucket a batch maps to (1, 2, 4, then
 *    every multiple of 8 up to max-num-seqs, exact sizes when padding is unsafe, none beyond the
 *    cap), the fixed index buffer's layout, which steps qualify, and how a step and its dummy
 *    rows fill the buffer.
 *  - QSERVE_CUDA_GRAPHS: a bad value is an error naming it; the CPU ignores it.
 *  - model/step_graph.c on stories260K over the CPU ops plus a stand-in graph device whose
 *    "capture" runs the work as it is issued: the warm-up step (padded with a dummy row, over the
 *    fixed buffers and the fixed table stride) gives the eager logits; a refused capture falls
 *    back to eager steps with the same logits; an accepted one is captured once per bucket and
 *    replayed, captured again when the device's or the model's buffers moved, and dropped when
 *    the KV cache changes. (Whether the replay of a real CUDA graph gives the same tokens is
 *    checked on the GPU: scripts/gpu_e2e.py, "graphs".) Skips the model part without
 *    ../shared/data. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/config.h"
#include "cpu/backend_cpu.h"
#include "model/kv_cache.h"
#include "model/model_internal.h"
#include "model/step_graph.h"
#include "model/step_graph_plan.h"
#include "util/fileio.h"

#include "test_helpers.h"

/* ---------------- bookkeeping ---------------- */

static void buckets_double_to_8_then_step_by_8_up_to_max(void **state)
{
    qs_graph_plan p;
    qs_err err;
    assert_int_equal(qs_graph_plan_init(&p, 16, 8, false, &err), 0);
    assert_int_equal(p.n_buckets, 5); /* 1 2 4 8 16 */
    int want_size[17] = {0, 1, 2, 4, 4, 8, 8, 8, 8, 16, 16, 16, 16, 16, 16, 16, 16};
    int want_idx[17] = {0, 0, 1, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 4, 4, 4, 4};
    for (int n = 1; n <= 16; n++) {
        int size = 0;
        assert_int_equal(qs_graph_bucket(&p, n, &size), want_idx[n]);
        assert_int_equal(size, want_size[n]);
    }
    int size;
    assert_int_equal(qs_graph_bucket(&p, 17, &size), -1);
    assert_int_equal(qs_graph_bucket(&p, 0, &size), -1);

    /* max-num-seqs that is not a multiple of 8 is the last bucket: never pad beyond it */
    assert_int_equal(qs_graph_plan_init(&p, 20, 8, false, &err), 0);
    assert_int_equal(p.n_buckets, 6); /* 1 2 4 8 16 20 */
    assert_int_equal(qs_graph_bucket(&p, 17, &size), 5);
    assert_int_equal(size, 20);
    assert_int_equal(qs_graph_bucket(&p, 16, &size), 4);
    assert_int_equal(size, 16);
    assert_int_equal(qs_graph_plan_init(&p, 64, 8, false, &err), 0);
    assert_int_equal(p.n_buckets, 11); /* 1 2 4 8 16 24 32 40 48 56 64 */
    assert_int_equal(qs_graph_bucket(&p, 33, &size), 7);
    assert_int_equal(size, 40);
    assert_int_equal(qs_graph_bucket(&p, 17, &size), 5);
    assert_int_equal(size, 24);
    assert_int_equal(qs_graph_bucket(&p, 64, &size), 10);
    assert_int_equal(size, 64);

    assert_int_equal(qs_graph_plan_init(&p, 1, 8, false, &err), 0);
    assert_int_equal(p.n_buckets, 1);
    assert_int_equal(qs_graph_bucket(&p, 1, &size), 0);
    assert_int_equal(size, 1);
    assert_int_equal(qs_graph_bucket(&p, 2, &size), -1);

    /* batches above the cap run eagerly */
    assert_int_equal(qs_graph_plan_init(&p, 1000, 8, false, &err), 0);
    assert_int_equal(p.max_seqs, QS_GRAPH_MAX_SEQS);
    assert_int_equal(qs_graph_bucket(&p, 200, &size), 27); /* 1 2 4, then 8 .. 200 in steps of 8 */
    assert_int_equal(size, 200);
    assert_int_equal(qs_graph_bucket(&p, 201, &size), 28);
    assert_int_equal(size, 208);
    assert_int_equal(p.n_buckets, 3 + QS_GRAPH_MAX_SEQS / 8);
    assert_int_equal(qs_graph_bucket(&p, QS_GRAPH_MAX_SEQS + 1, &size), -1);

    assert_int_equal(qs_graph_plan_init(&p, 0, 8, false, &err), -1);
    assert_int_equal(qs_graph_plan_init(&p, 4, 0, false, &err), -1);
}

static void exact_buckets_never_pad(void **state)
{
    qs_graph_plan p;
    qs_err err;
    assert_int_equal(qs_graph_plan_init(&p, 12, 4, true, &err), 0);
    assert_int_equal(p.n_buckets, 12);
    for (int n = 1; n <= 12; n++) {
        int size = 0;
        assert_int_equal(qs_graph_bucket(&p, n, &size), n - 1);
        assert_int_equal(size, n);
    }
}

static void layout_has_disjoint_arrays(void **state)
{
    qs_graph_plan p;
    qs_err err;
    assert_int_equal(qs_graph_plan_init(&p, 6, 5, false, &err), 0);
    qs_graph_layout l;
    qs_graph_layout_of(&p, &l);
    /* ids, pos, slots first (the one per-step copy), then the tables, then the constant arrays */
    assert_int_equal(l.ids, 0);
    assert_int_equal(l.pos, 6);
    assert_int_equal(l.slots, 12);
    assert_int_equal(l.per_step, 18);
    assert_int_equal(l.tables, 18);
    assert_int_equal(l.seq, 18 + 6 * 5);
    assert_int_equal(l.out_rows, l.seq + 6);
    assert_int_equal(l.total, l.out_rows + 6);
}

static void only_decode_steps_qualify(void **state)
{
    int32_t tok[2] = {5, 6}, table[1] = {0};
    qs_seq_step s[2] = {{.tokens = tok, .n_tokens = 1, .start_pos = 3, .block_table = table, .n_blocks = 1,
                         .want_logits = true},
                        {.tokens = tok, .n_tokens = 1, .start_pos = 0, .block_table = table, .n_blocks = 1,
                         .want_logits = true}};
    assert_true(qs_graph_step_is_decode(s, 2));
    assert_false(qs_graph_step_is_decode(s, 0));
    s[1].n_tokens = 2; /* a prefill chunk in the batch: mixed step */
    assert_false(qs_graph_step_is_decode(s, 2));
    s[1].n_tokens = 1;
    s[1].want_logits = false; /* a chunk that does not end its prompt */
    assert_false(qs_graph_step_is_decode(s, 2));
}

static void step_and_dummy_rows_fill_the_buffer(void **state)
{
    qs_graph_plan p;
    qs_err err;
    assert_int_equal(qs_graph_plan_init(&p, 8, 4, false, &err), 0);
    qs_graph_layout l;
    qs_graph_layout_of(&p, &l);
    int32_t *h = malloc(sizeof(int32_t) * (size_t)l.total);
    qs_graph_fill_constant(&p, h);
    for (int i = 0; i < 8; i++) {
        assert_int_equal(h[l.seq + i], i);
        assert_int_equal(h[l.out_rows + i], i);
    }
    for (int64_t i = l.tables; i < l.seq; i++)
        assert_int_equal(h[i], 0);
    /* a stale table row (an earlier step's sequence) that the dummy row must leave alone */
    h[l.tables + 3 * 4 + 0] = 9;
    int32_t t0[3] = {11, 7, 4}, t1[1] = {2}, t2[2] = {5, 6};
    int32_t ids[3] = {100, 101, 102};
    qs_seq_step s[3] = {
        {.tokens = &ids[0], .n_tokens = 1, .start_pos = 33, .block_table = t0, .n_blocks = 3, .want_logits = true},
        {.tokens = &ids[1], .n_tokens = 1, .start_pos = 0, .block_table = t1, .n_blocks = 1, .want_logits = true},
        {.tokens = &ids[2], .n_tokens = 1, .start_pos = 16, .block_table = t2, .n_blocks = 2, .want_logits = true},
    };
    int size;
    assert_int_equal(qs_graph_bucket(&p, 3, &size), 2);
    assert_int_equal(size, 4);
    assert_int_equal(qs_graph_fill_step(&p, s, 3, size, h), 3); /* position 33 reads 3 blocks */
    int want_pos[3] = {33, 0, 16}, want_slot[3] = {4 * 16 + 1, 2 * 16 + 0, 6 * 16 + 0};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(h[l.ids + i], ids[i]);
        assert_int_equal(h[l.pos + i], want_pos[i]);
        assert_int_equal(h[l.slots + i], want_slot[i]);
    }
    assert_memory_equal(h + l.tables + 0 * 4, t0, sizeof t0);
    assert_int_equal(h[l.tables + 1 * 4], 2);
    assert_memory_equal(h + l.tables + 2 * 4, t2, sizeof t2);
    /* the dummy row: token 0, position 0, no KV write, its table row untouched */
    assert_int_equal(h[l.ids + 3], 0);
    assert_int_equal(h[l.pos + 3], 0);
    assert_int_equal(h[l.slots + 3], -1);
    assert_int_equal(h[l.tables + 3 * 4], 9);
    /* a sequence that reads more blocks than the stride holds, too many sequences, or a prefill
     * chunk: no graph for this step */
    s[0].start_pos = 64;
    int32_t t5[5] = {0, 1, 2, 3, 4};
    s[0].block_table = t5;
    s[0].n_blocks = 5;
    assert_int_equal(qs_graph_fill_step(&p, s, 3, 4, h), -1);
    s[0].start_pos = 33;
    assert_int_equal(qs_graph_fill_step(&p, s, 3, 2, h), -1);
    s[1].n_tokens = 2;
    assert_int_equal(qs_graph_fill_step(&p, s, 3, 4, h), -1);
    free(h);
}

static void environment_value_is_checked(void **state)
{
    qs_config cfg;
    qs_config_defaults(&cfg);
    qs_model m = {0};
    m.ops = qs_ops_cpu();
    qs_err err = {{0}};
    setenv("QSERVE_CUDA_GRAPHS", "sometimes", 1);
    assert_int_equal(qs_step_graphs_init(&m, &cfg, &err), -1);
    assert_non_null(strstr(err.msg, "QSERVE_CUDA_GRAPHS"));
    setenv("QSERVE_CUDA_GRAPHS", "1", 1); /* the CPU has no graphs: ignored */
    assert_int_equal(qs_step_graphs_init(&m, &cfg, &err), 0);
    assert_null(m.graphs);
    assert_null(m.stream);
    setenv("QSERVE_CUDA_GRAPHS", "0", 1);
    assert_int_equal(qs_step_graphs_init(&m, &cfg, &err), 0);
    assert_null(m.graphs);
    unsetenv("QSERVE_CUDA_GRAPHS");
}

/* ---------------- the graph driver over a stand-in device ---------------- */

static struct {
    bool refuse;        /* capture_end refuses, as CUDA does when a captured path allocates */
    bool capturing;
    int captures, refused, launches, destroyed;
    uint64_t epoch;
    void *stream;
} dev;

static int the_stream;
static void *f_stream_create(qs_err *err) { return &the_stream; }
static void f_stream_destroy(void *s) {}
static void *f_set_stream(void *s)
{
    void *prev = dev.stream;
    dev.stream = s;
    return prev;
}
static void *f_host_alloc(size_t bytes, qs_err *err) { return calloc(1, bytes ? bytes : 1); }
static void f_host_free(void *p) { free(p); }
static int f_copy(void *dst, const void *src, size_t bytes, qs_err *err)
{
    assert_false(dev.capturing); /* index uploads happen before a capture, never inside one */
    memcpy(dst, src, bytes);
    return 0;
}
static int f_copy_2d(void *dst, size_t dp, const void *src, size_t sp, size_t width, size_t rows, qs_err *err)
{
    assert_false(dev.capturing);
    assert_true(width <= dp && width <= sp);
    for (size_t r = 0; r < rows; r++)
        memcpy((char *)dst + r * dp, (const char *)src + r * sp, width);
    return 0;
}
static int f_begin(qs_err *err)
{
    assert_ptr_equal(dev.stream, &the_stream); /* captures run on the model's own stream */
    dev.capturing = true;
    return 0;
}
static int f_end(void **graph, size_t *nodes, qs_err *err)
{
    dev.capturing = false;
    *graph = NULL;
    if (dev.refuse) {
        dev.refused++;
        return qs_errf(err, "operation not permitted when stream is capturing (test device)");
    }
    dev.captures++;
    *graph = malloc(1);
    if (nodes)
        *nodes = 1;
    return 0;
}
static int f_launch(void *graph, qs_err *err)
{
    assert_non_null(graph);
    dev.launches++;
    return 0;
}
static void f_destroy(void *graph)
{
    if (graph) {
        dev.destroyed++;
        free(graph);
    }
}
static uint64_t f_epoch(void) { return dev.epoch; }

static const qs_graph_ops FAKE_GRAPH = {f_stream_create, f_stream_destroy, f_set_stream, f_host_alloc,
                                        f_host_free,     f_copy,           f_copy_2d,    f_begin,
                                        f_end,           f_launch,         f_destroy,    f_epoch};
static qs_ops fake_ops;

static char model_dir[256];

static int group_setup(void **state)
{
    int made = qs_test_stories_make("graph", model_dir, sizeof model_dir, NULL);
    if (made <= 0)
        return made;
    fake_ops = *qs_ops_cpu();
    fake_ops.graph = &FAKE_GRAPH;
    return 0;
}

static int group_teardown(void **state)
{
    return qs_test_stories_remove(model_dir);
}

/* A model on the CPU; with graphs, its ops gain the stand-in device (weights stay CPU buffers). */
static qs_model *load(bool graphs)
{
    qs_config cfg;
    qs_config_defaults(&cfg);
    snprintf(cfg.model_dir, sizeof cfg.model_dir, "%s", model_dir);
    cfg.device = QS_DEVICE_CPU;
    cfg.max_num_seqs = 8;
    qs_model *m;
    qs_err err;
    if (qs_model_load(&cfg, &m, &err) != 0)
        fail_msg("load: %s", err.msg);
    if (graphs) {
        m->ops = &fake_ops;
        setenv("QSERVE_CUDA_GRAPHS", "1", 1);
        int rc = qs_step_graphs_init(m, &cfg, &err);
        unsetenv("QSERVE_CUDA_GRAPHS");
        if (rc)
            fail_msg("graphs: %s", err.msg);
        assert_non_null(m->graphs);
        assert_ptr_equal(m->stream, &the_stream);
    }
    return m;
}

/* On a device with graphs they are on unless QSERVE_CUDA_GRAPHS=0 or --enforce-eager says no. */
static void graphs_are_on_by_default_and_off_when_asked(void **state)
{
    qs_model *m = load(false);
    m->ops = &fake_ops;
    qs_config cfg;
    qs_config_defaults(&cfg);
    qs_err err = {{0}};
    unsetenv("QSERVE_CUDA_GRAPHS");
    assert_int_equal(qs_step_graphs_init(m, &cfg, &err), 0);
    assert_non_null(m->graphs);
    qs_step_graphs_free(m);
    assert_null(m->graphs);
    cfg.enforce_eager = true;
    assert_int_equal(qs_step_graphs_init(m, &cfg, &err), 0);
    assert_null(m->graphs);
    cfg.enforce_eager = false;
    setenv("QSERVE_CUDA_GRAPHS", "off", 1);
    assert_int_equal(qs_step_graphs_init(m, &cfg, &err), 0);
    assert_null(m->graphs);
    unsetenv("QSERVE_CUDA_GRAPHS");
    qs_model_free(m);
}

/* Three sequences over scattered blocks of a 16-block cache, fed the same tokens in both runs. */
typedef struct {
    int32_t tokens[3][64];
    int len[3];
    int32_t table[3][4];
} batch;

static void make_batch(batch *b)
{
    memset(b, 0, sizeof *b);
    int prompt[3] = {5, 17, 2};
    int32_t blocks[3][4] = {{7, 2, 12, 14}, {0, 9, 5, 13}, {3, 11, 1, 15}};
    for (int s = 0; s < 3; s++) {
        b->len[s] = prompt[s];
        for (int i = 0; i < prompt[s]; i++)
            b->tokens[s][i] = 1 + (i * 37 + s * 101) % 500;
        memcpy(b->table[s], blocks[s], sizeof blocks[s]);
    }
}

static qs_kv_cache *cache_for(qs_model *m)
{
    qs_kv_cache *kv;
    qs_err err;
    assert_int_equal(qs_kv_cache_create(qs_model_get_config(m), QS_PLATFORM_CPU, 16, &kv, &err), 0);
    return kv;
}

/* One step over the sequences in `which` (n of them): their whole prompt when prefill, else
 * their next token. */
static void step(qs_model *m, qs_kv_cache *kv, batch *b, const int *which, int n, bool prefill, float *logits)
{
    qs_seq_step s[3];
    for (int i = 0; i < n; i++) {
        int q = which[i];
        int start = prefill ? 0 : b->len[q] - 1;
        int count = prefill ? b->len[q] : 1;
        s[i] = (qs_seq_step){.tokens = b->tokens[q] + start, .n_tokens = count, .start_pos = start,
                             .block_table = b->table[q], .n_blocks = 4, .want_logits = true};
    }
    qs_err err = {{0}};
    if (qs_model_forward(m, kv, s, n, logits, &err) != 0)
        fail_msg("forward: %s", err.msg);
}

static void same_logits(const float *want, const float *got, int n, int V, const char *what)
{
    for (int i = 0; i < n * V; i++)
        if (fabsf(want[i] - got[i]) > 1e-5f * (1 + fabsf(want[i])))
            fail_msg("%s: row %d logit %d: graphs %g, eager %g", what, i / V, i % V, got[i], want[i]);
}

/* Appends each sequence's greedy token (from the eager logits) to both runs' sequences. */
static void advance(batch *b, const int *which, int n, const float *logits, int V)
{
    for (int i = 0; i < n; i++)
        b->tokens[which[i]][b->len[which[i]]++] = qs_test_argmax(logits + i * V, V);
}

/* The two models every graph case compares (eager reference, graph path), their caches, logits
 * buffers for three rows, and a batch of three sequences after its prefill (logits of both in
 * want / got, not yet advanced). */
typedef struct {
    qs_model *ref, *gm;
    qs_kv_cache *kv_ref, *kv_g;
    int V;
    float *want, *got;
    batch b;
} model_pair;

/* Skips the case when stories260K is absent; resets the stand-in device (refuse: it refuses
 * every capture). */
static void pair_open(model_pair *p, bool refuse)
{
    static const int all[3] = {0, 1, 2};
    if (!model_dir[0])
        skip();
    memset(&dev, 0, sizeof dev);
    dev.refuse = refuse;
    p->ref = load(false);
    p->gm = load(true);
    p->kv_ref = cache_for(p->ref);
    p->kv_g = cache_for(p->gm);
    p->V = qs_model_get_config(p->ref)->vocab_size;
    p->want = malloc(sizeof(float) * 3 * p->V);
    p->got = malloc(sizeof(float) * 3 * p->V);
    make_batch(&p->b);
    step(p->ref, p->kv_ref, &p->b, all, 3, true, p->want); /* a prefill: eager in both */
    step(p->gm, p->kv_g, &p->b, all, 3, true, p->got);
}

static void pair_close(model_pair *p)
{
    free(p->want);
    free(p->got);
    qs_kv_cache_free(p->kv_ref);
    qs_kv_cache_free(p->kv_g);
    qs_model_free(p->ref);
    qs_model_free(p->gm);
}

static void warm_up_and_refused_capture_match_eager(void **state)
{
    model_pair mp;
    pair_open(&mp, true);
    int all[3] = {0, 1, 2}, two[2] = {2, 0}, one[1] = {1};
    same_logits(mp.want, mp.got, 3, mp.V, "prefill");
    advance(&mp.b, all, 3, mp.want, mp.V);
    struct {
        const int *which;
        int n, steps;
    } phases[3] = {{all, 3, 3}, {two, 2, 2}, {one, 1, 2}};
    for (int p = 0; p < 3; p++)
        for (int k = 0; k < phases[p].steps; k++) {
            /* first step of a bucket: the padded warm-up (3 rows in a bucket of 4: one dummy);
             * second: the capture is refused and the step runs eagerly; then eager */
            step(mp.ref, mp.kv_ref, &mp.b, phases[p].which, phases[p].n, false, mp.want);
            step(mp.gm, mp.kv_g, &mp.b, phases[p].which, phases[p].n, false, mp.got);
            char what[64];
            snprintf(what, sizeof what, "%d sequences, step %d", phases[p].n, k);
            same_logits(mp.want, mp.got, phases[p].n, mp.V, what);
            advance(&mp.b, phases[p].which, phases[p].n, mp.want, mp.V);
        }
    assert_int_equal(dev.refused, 3); /* once per bucket (4, 2, 1), then those buckets stay eager */
    assert_int_equal(dev.captures, 0);
    assert_int_equal(dev.launches, 0);
    assert_null(dev.stream); /* the forward pass puts the thread's stream back */
    pair_close(&mp);
}

/* qs_model_forward_sample through the graph path (the padded warm-up, then a refused capture and
 * eager steps): rows 0 and 2 sampled greedily by the sampling op give the eager logits' argmax,
 * the skipped row 1 gives -1 and its logits. */
static void device_sampling_through_the_graph_path(void **state)
{
    model_pair mp;
    pair_open(&mp, true);
    assert_true(qs_model_samples_on_device(mp.gm));
    int all[3] = {0, 1, 2};
    advance(&mp.b, all, 3, mp.want, mp.V);
    for (int k = 0; k < 3; k++) {
        step(mp.ref, mp.kv_ref, &mp.b, all, 3, false, mp.want);
        qs_seq_step s[3];
        for (int q = 0; q < 3; q++)
            s[q] = (qs_seq_step){.tokens = mp.b.tokens[q] + mp.b.len[q] - 1, .n_tokens = 1, .start_pos = mp.b.len[q] - 1,
                                 .block_table = mp.b.table[q], .n_blocks = 4, .want_logits = true};
        qs_sample_row rows[3] = {{.log_min_p = -INFINITY}, {.skip = 1}, {.log_min_p = -INFINITY}};
        int32_t tokens[3] = {-7, -7, -7};
        qs_err err = {{0}};
        if (qs_model_forward_sample(mp.gm, mp.kv_g, s, 3, rows, tokens, mp.got, &err) != 0)
            fail_msg("forward_sample: %s", err.msg);
        assert_int_equal(tokens[0], qs_test_argmax(mp.want, mp.V));
        assert_int_equal(tokens[1], -1);
        assert_int_equal(tokens[2], qs_test_argmax(mp.want + 2 * mp.V, mp.V));
        same_logits(mp.want + mp.V, mp.got + mp.V, 1, mp.V, "the skipped row");
        advance(&mp.b, all, 3, mp.want, mp.V);
    }
    assert_int_equal(dev.refused, 1);
    pair_close(&mp);
}

static void graphs_are_captured_once_and_recaptured_when_buffers_move(void **state)
{
    model_pair mp;
    pair_open(&mp, false);
    int all[3] = {0, 1, 2};
    advance(&mp.b, all, 3, mp.want, mp.V);

    step(mp.ref, mp.kv_ref, &mp.b, all, 3, false, mp.want); /* warm-up: runs, nothing captured */
    step(mp.gm, mp.kv_g, &mp.b, all, 3, false, mp.got);
    same_logits(mp.want, mp.got, 3, mp.V, "warm-up");
    assert_int_equal(dev.captures, 0);
    assert_int_equal(dev.launches, 0);
    advance(&mp.b, all, 3, mp.want, mp.V);

    step(mp.ref, mp.kv_ref, &mp.b, all, 3, false, mp.want); /* captured (the stand-in runs it) and launched */
    step(mp.gm, mp.kv_g, &mp.b, all, 3, false, mp.got);
    same_logits(mp.want, mp.got, 3, mp.V, "capture");
    assert_int_equal(dev.captures, 1);
    assert_int_equal(dev.launches, 1);
    advance(&mp.b, all, 3, mp.want, mp.V);

    /* from here the stand-in's replays do no work, so only the bookkeeping is checked */
    step(mp.gm, mp.kv_g, &mp.b, all, 3, false, mp.got); /* replayed */
    assert_int_equal(dev.captures, 1);
    assert_int_equal(dev.launches, 2);

    dev.epoch++; /* a device scratch buffer moved: captured again */
    step(mp.gm, mp.kv_g, &mp.b, all, 3, false, mp.got);
    assert_int_equal(dev.destroyed, 1);
    assert_int_equal(dev.captures, 2);
    assert_int_equal(dev.launches, 3);

    /* a prefill larger than any step so far grows the model's step buffers */
    batch big;
    make_batch(&big);
    big.len[0] = 60;
    for (int i = 0; i < 60; i++)
        big.tokens[0][i] = 1 + (i * 13) % 500;
    int32_t spare[4] = {4, 6, 8, 10};
    memcpy(big.table[0], spare, sizeof spare);
    int first[1] = {0};
    step(mp.gm, mp.kv_g, &big, first, 1, true, mp.got);
    step(mp.gm, mp.kv_g, &mp.b, all, 3, false, mp.got);
    assert_int_equal(dev.destroyed, 2);
    assert_int_equal(dev.captures, 3);
    assert_int_equal(dev.launches, 4);

    /* another KV cache: everything is rebuilt, and its first step is a warm-up again */
    qs_kv_cache *kv2 = cache_for(mp.gm);
    step(mp.gm, kv2, &mp.b, all, 3, false, mp.got);
    assert_int_equal(dev.destroyed, 3);
    assert_int_equal(dev.captures, 3);
    assert_int_equal(dev.launches, 4);
    qs_kv_cache_free(kv2);
    pair_close(&mp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(buckets_double_to_8_then_step_by_8_up_to_max),
        cmocka_unit_test(exact_buckets_never_pad),
        cmocka_unit_test(layout_has_disjoint_arrays),
        cmocka_unit_test(only_decode_steps_qualify),
        cmocka_unit_test(step_and_dummy_rows_fill_the_buffer),
        cmocka_unit_test(environment_value_is_checked),
        cmocka_unit_test(graphs_are_on_by_default_and_off_when_asked),
        cmocka_unit_test(warm_up_and_refused_capture_match_eager),
        cmocka_unit_test(device_sampling_through_the_graph_path),
        cmocka_unit_test(graphs_are_captured_once_and_recaptured_when_buffers_move),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
