/* test_graph_cuda.c — GPU test (run by scripts/gpu-check.sh): CUDA graph capture and replay
 * (cuda/graph_cuda.cu) of the pieces a decode step is made of, used the way
 * src/model/step_graph.c uses them (warm-up call first, capture on the stream of its own, new
 * per-step values copied into fixed buffers before each replay):
 *  - a decode "layer" over the ops table — embedding, per-head RMSNorm, RoPE, KV write (with a
 *    dummy row of slot -1 in some steps), split-KV paged attention — recorded once, then replayed
 *    with new token ids, positions, slots and block tables: the output and the KV cache equal,
 *    bit for bit, the same steps run eagerly on a twin cache; again over an FP8 E4M3 cache
 *    (--kv-cache-dtype fp8: the quantizing write and the dequantizing attention in the graph);
 *  - the linear kernels (cublaslt BF16, cublaslt FP8 per-channel x per-token, marlin FP8,
 *    emulation FP8) recorded at m = 1, 4 and 16 and replayed on new activations: equal to eager
 *    calls bit for bit;
 *  - clean failures: an allocation inside a capture is refused, marlin's padded-activation copy
 *    refuses to grow inside one, and eager work right after is right.
 * Prints "N passed, N failed, N skipped". */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_test_util.h"
#include "core/ops.h"
#include "core/tensor.h"
#include "model/kv_cache.h"
#include "device_query.h"
#include "qs_cuda_kernels.h"
#include "qs_cuda_ops.h"
#include "core/fp8.h"

static int g_passed, g_failed, g_skipped;
static uint64_t g_rng = 0x2545F4914F6CDD1Dull;
static const qs_ops *gpu;
static const qs_graph_ops *G;
static void *g_stream; /* every op and kernel of the test runs on it, as the forward pass does */

static void report(const char *what, bool ok, const char *detail)
{
    printf("%-64s %s%s%s\n", what, ok ? "ok" : "FAIL", detail && *detail ? "  " : "", detail ? detail : "");
    ok ? g_passed++ : g_failed++;
}

static float *host_of(const void *dev, int64_t n)
{
    qs_err err;
    float *h = malloc(sizeof(float) * (size_t)n);
    if (gpu->acts_to_host_f32(h, dev, n, &err))
        printf("acts_to_host: %s\n", err.msg);
    return h;
}

/* Bitwise equal and finite. */
static bool same(const float *a, const float *b, int64_t n, char *detail, size_t cap)
{
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(a[i]) || memcmp(&a[i], &b[i], sizeof(float))) {
            snprintf(detail, cap, "element %lld: replay %g, eager %g", (long long)i, a[i], b[i]);
            return false;
        }
    return true;
}

static void *upload_f32_weight(const float *v, int64_t d0, int64_t d1)
{
    qs_tensor t;
    qs_err err;
    qs_test_set_tensor(&t, "test.weight", QS_DT_F32, d1 ? 2 : 1, d0, d1, v, sizeof(float) * (size_t)(d0 * (d1 ? d1 : 1)));
    return gpu->upload_tensor(&t, &err);
}

static void *acts(const float *v, int64_t n)
{
    qs_err err;
    void *p = gpu->alloc(gpu->act_size * (size_t)n, &err);
    gpu->acts_from_host_f32(p, v, n, &err);
    return p;
}

/* ---------------- a decode layer over the ops ---------------- */

enum { B = 4, S = 8, HEADS = 8, KV = 2, HD = 64, VOCAB = 64, BLOCKS = 32 };
/* index buffer: ids, pos, slots, seq [B] each, then tables [B][S] */
enum { I_IDS = 0, I_POS = B, I_SLOTS = 2 * B, I_SEQ = 3 * B, I_TABLES = 4 * B, I_TOTAL = 4 * B + B * S };

typedef struct {
    void *eq, *ek, *ev, *norm, *inv_freq;     /* weights shared by both sides */
} layer_w;

typedef struct {
    int32_t *idx;                             /* device index buffer */
    void *q, *k, *v, *out, *kc, *vc;
} side;

static int run_layer(const layer_w *w, side *s, bool fp8, qs_err *err)
{
    qs_attn_batch b = {.n_tokens = B, .n_seqs = B, .max_blocks = S, .tok_seq = s->idx + I_SEQ,
                       .tok_pos = s->idx + I_POS, .block_tables = s->idx + I_TABLES,
                       .slot_mapping = s->idx + I_SLOTS, .sliding_window = 0,
                       .kv_dtype = fp8 ? QS_KV_FP8_E4M3 : QS_KV_ACT, .k_scale = 1.f / 64, .v_scale = 1.f / 32};
    const int32_t *ids = s->idx + I_IDS;
    return gpu->embedding(s->q, w->eq, ids, B, HEADS * HD, err) || gpu->embedding(s->k, w->ek, ids, B, KV * HD, err) ||
                   gpu->embedding(s->v, w->ev, ids, B, KV * HD, err) ||
                   gpu->rmsnorm(s->q, s->q, w->norm, B * HEADS, HD, 1e-5f, err) ||
                   gpu->rope(s->q, b.tok_pos, w->inv_freq, B, HEADS, HD, err) ||
                   gpu->rope(s->k, b.tok_pos, w->inv_freq, B, KV, HD, err) ||
                   gpu->kv_write(s->kc, s->vc, s->k, s->v, &b, KV, HD, err) ||
                   gpu->attention(s->out, s->q, s->kc, s->vc, &b, HEADS, KV, HD, 0.125f, QS_ACT_NATURAL, err)
               ? -1
               : 0;
}

/* Step st's indices: every row its own 8 blocks (distinct slots within a step), permuted from
 * step to step; rows 3 of odd steps are dummy rows. */
static void make_indices(int st, int32_t *h)
{
    for (int r = 0; r < B; r++) {
        bool dummy = (st & 1) && r == B - 1;
        int pos = dummy ? 0 : 20 + 7 * st + 3 * r;
        for (int j = 0; j < S; j++)
            h[I_TABLES + r * S + j] = ((r + st) % B) * S + j;
        h[I_IDS + r] = dummy ? 0 : (int32_t)((st * 13 + r * 29 + 5) % VOCAB);
        h[I_POS + r] = pos;
        h[I_SLOTS + r] = dummy ? -1 : h[I_TABLES + r * S + pos / QS_KV_BLOCK_SIZE] * QS_KV_BLOCK_SIZE +
                                          pos % QS_KV_BLOCK_SIZE;
        h[I_SEQ + r] = r;
    }
}

/* A cache of n elements: random bf16 activations, or random finite E4M3 codes. */
static void *random_cache(int64_t n, bool fp8)
{
    qs_err err;
    if (!fp8) {
        float *v = qs_test_rand_bf16(&g_rng, n, 1.f);
        void *p = acts(v, n);
        free(v);
        return p;
    }
    unsigned char *c = malloc((size_t)n);
    for (int64_t i = 0; i < n; i++) {
        float r = qs_test_frand(&g_rng);
        c[i] = (unsigned char)((int)((r + 1.f) * 63.f) % 0x7E) | (r < 0 ? 0x80 : 0); /* never 0x7F / 0xFF (NaN) */
    }
    void *p = gpu->alloc((size_t)n, &err);
    gpu->copy_to_device(p, c, (size_t)n, &err);
    free(c);
    return p;
}

/* Whether two device caches of n elements hold the same bytes. */
static bool same_cache(const void *a, const void *b, int64_t n, bool fp8, char *detail, size_t cap)
{
    qs_err err;
    size_t bytes = (size_t)n * (fp8 ? 1 : gpu->act_size);
    unsigned char *x = malloc(bytes), *y = malloc(bytes);
    gpu->copy_to_host(x, a, bytes, &err);
    gpu->copy_to_host(y, b, bytes, &err);
    size_t i = 0;
    while (i < bytes && x[i] == y[i])
        i++;
    if (i < bytes)
        snprintf(detail, cap, "byte %zu differs: %02x vs %02x", i, x[i], y[i]);
    free(x), free(y);
    return i == bytes;
}

static void test_decode_layer(bool fp8)
{
    qs_err err = {{0}};
    float *eq = qs_test_rand_bf16(&g_rng, VOCAB * HEADS * HD, 1.f), *ek = qs_test_rand_bf16(&g_rng, VOCAB * KV * HD, 1.f),
          *ev = qs_test_rand_bf16(&g_rng, VOCAB * KV * HD, 1.f), *nw = qs_test_rand_bf16(&g_rng, HD, 1.f);
    float inv[HD / 2];
    for (int i = 0; i < HD / 2; i++)
        inv[i] = powf(10000.f, -2.f * i / HD);
    layer_w w = {upload_f32_weight(eq, VOCAB, HEADS * HD), upload_f32_weight(ek, VOCAB, KV * HD),
                 upload_f32_weight(ev, VOCAB, KV * HD), upload_f32_weight(nw, HD, 0), gpu->alloc(sizeof inv, &err)};
    gpu->copy_to_device(w.inv_freq, inv, sizeof inv, &err);
    int64_t cache_n = (int64_t)BLOCKS * KV * QS_KV_BLOCK_SIZE * HD;
    side sd[2]; /* 0: replayed graph, 1: eager twin */
    for (int i = 0; i < 2; i++) {
        sd[i].idx = gpu->alloc(sizeof(int32_t) * I_TOTAL, &err);
        sd[i].q = gpu->alloc(gpu->act_size * B * HEADS * HD, &err);
        sd[i].k = gpu->alloc(gpu->act_size * B * KV * HD, &err);
        sd[i].v = gpu->alloc(gpu->act_size * B * KV * HD, &err);
        sd[i].out = gpu->alloc(gpu->act_size * B * HEADS * HD, &err);
        sd[i].kc = random_cache(cache_n, fp8);
        sd[i].vc = random_cache(cache_n, fp8);
    }
    /* both sides start from the same cache contents */
    size_t cache_bytes = (size_t)cache_n * (fp8 ? 1 : gpu->act_size);
    void *tmp = malloc(cache_bytes);
    gpu->copy_to_host(tmp, sd[0].kc, cache_bytes, &err);
    gpu->copy_to_device(sd[1].kc, tmp, cache_bytes, &err);
    gpu->copy_to_host(tmp, sd[0].vc, cache_bytes, &err);
    gpu->copy_to_device(sd[1].vc, tmp, cache_bytes, &err);
    free(tmp);
    int32_t *pinned = G->host_alloc(sizeof(int32_t) * I_TOTAL, &err);
    int32_t h[I_TOTAL];
    void *graph = NULL;
    char detail[160] = "";
    bool ok = true;
    for (int st = 0; st < 4 && ok; st++) {
        make_indices(st, h);
        /* eager twin: plain synchronous upload, the ops on the same stream */
        if (gpu->copy_to_device(sd[1].idx, h, sizeof h, &err) || run_layer(&w, &sd[1], fp8, &err)) {
            snprintf(detail, sizeof detail, "eager step %d: %s", st, err.msg);
            ok = false;
            break;
        }
        memcpy(pinned, h, sizeof h);
        if (G->copy_async(sd[0].idx, pinned, sizeof h, &err)) {
            snprintf(detail, sizeof detail, "copy_async: %s", err.msg);
            ok = false;
            break;
        }
        if (st == 0) { /* warm-up, then record */
            size_t nodes = 0;
            if (run_layer(&w, &sd[0], fp8, &err) || G->capture_begin(&err) || run_layer(&w, &sd[0], fp8, &err) ||
                G->capture_end(&graph, &nodes, &err)) {
                snprintf(detail, sizeof detail, "warm-up or capture: %s", err.msg);
                ok = false;
                break;
            }
            printf("  decode layer graph: %zu nodes\n", nodes);
        } else if (G->graph_launch(graph, &err)) {
            snprintf(detail, sizeof detail, "launch: %s", err.msg);
            ok = false;
            break;
        }
        float *a = host_of(sd[0].out, B * HEADS * HD), *e = host_of(sd[1].out, B * HEADS * HD);
        if (!same(a, e, B * HEADS * HD, detail, sizeof detail)) {
            ok = false;
            char step[32];
            snprintf(step, sizeof step, " (step %d)", st);
            strncat(detail, step, sizeof detail - strlen(detail) - 1);
        }
        free(a);
        free(e);
    }
    report(fp8 ? "decode layer, FP8 KV: replays == eager (outputs)" : "decode layer: replays == eager (outputs)", ok,
           detail);
    bool kv_ok = ok && same_cache(sd[0].kc, sd[1].kc, cache_n, fp8, detail, sizeof detail) &&
                 same_cache(sd[0].vc, sd[1].vc, cache_n, fp8, detail, sizeof detail);
    report(fp8 ? "decode layer, FP8 KV: replays == eager (KV cache, dummy rows unwritten)"
               : "decode layer: replays == eager (KV cache, dummy rows unwritten)",
           kv_ok, kv_ok ? "" : detail);
    G->graph_destroy(graph);
    G->host_free(pinned);
    for (int i = 0; i < 2; i++) {
        void *bufs[] = {sd[i].idx, sd[i].q, sd[i].k, sd[i].v, sd[i].out, sd[i].kc, sd[i].vc};
        for (size_t j = 0; j < sizeof bufs / sizeof *bufs; j++)
            gpu->free(bufs[j]);
    }
    void *wb[] = {w.eq, w.ek, w.ev, w.norm, w.inv_freq};
    for (size_t j = 0; j < sizeof wb / sizeof *wb; j++)
        gpu->free(wb[j]);
    free(eq), free(ek), free(ev), free(nw);
}

/* ---------------- linear kernels ---------------- */

typedef struct {
    qs_linear_desc d;
    qs_tensor weight, scale;
    void *w, *s;
} test_layer;

/* Random weights: BF16, or FP8 E4M3 with one scale per output row (dynamic per-token activations). */
static void make_layer(test_layer *t, bool fp8, int64_t n, int64_t k)
{
    memset(t, 0, sizeof *t);
    snprintf(t->d.name, sizeof t->d.name, "test.%s", fp8 ? "fp8" : "bf16");
    t->d.scheme = fp8 ? QS_SCHEME_FP8_W8A8 : QS_SCHEME_BF16;
    t->d.n = n;
    t->d.k = k;
    t->d.wscale = fp8 ? QS_WSCALE_CHANNEL : QS_WSCALE_NONE;
    t->d.aquant = fp8 ? QS_AQUANT_DYNAMIC_TOKEN : QS_AQUANT_NONE;
    t->d.act_group_size = 128;
    t->d.weight_global_scale = 1.f;
    float *w = malloc(sizeof(float) * (size_t)(n * k));
    for (int64_t i = 0; i < n * k; i++)
        w[i] = qs_test_frand(&g_rng) * 0.05f;
    if (!fp8) {
        uint16_t *wb = malloc(2 * (size_t)(n * k));
        for (int64_t i = 0; i < n * k; i++)
            wb[i] = qs_f32_to_bf16(w[i]);
        qs_test_set_tensor(&t->weight, "test.weight", QS_DT_BF16, 2, n, k, wb, 2 * (size_t)(n * k));
        t->w = wb;
    } else {
        float *sc = malloc(sizeof(float) * (size_t)n);
        uint8_t *wq = malloc((size_t)(n * k));
        for (int64_t r = 0; r < n; r++) {
            float a = 0;
            for (int64_t j = 0; j < k; j++)
                a = fmaxf(a, fabsf(w[r * k + j]));
            sc[r] = a > 0 ? a / 448.f : 1.f;
            for (int64_t j = 0; j < k; j++)
                wq[r * k + j] = qs_f32_to_e4m3(w[r * k + j] / sc[r]);
        }
        qs_test_set_tensor(&t->weight, "test.weight", QS_DT_F8_E4M3, 2, n, k, wq, (size_t)(n * k));
        qs_test_set_tensor(&t->scale, "test.weight_scale", QS_DT_F32, 2, n, 1, sc, sizeof(float) * (size_t)n);
        t->d.weight_scale = &t->scale;
        t->w = wq;
        t->s = sc;
    }
    t->d.weight = &t->weight;
    free(w);
}

static void test_linear(const qs_kernel *kern, bool fp8, int64_t m, int64_t n, int64_t k)
{
    char what[96], why[QS_REASON_MAX] = "", detail[160] = "";
    snprintf(what, sizeof what, "linear %s %s m=%lld n=%lld k=%lld: replays == eager", kern->name, fp8 ? "fp8" : "bf16",
             (long long)m, (long long)n, (long long)k);
    test_layer t;
    make_layer(&t, fp8, n, k);
    qs_device_caps caps;
    qs_err err = {{0}};
    if (qs_cuda_device_caps(0, &caps, &err) || !kern->is_supported(&caps, why, sizeof why) ||
        !kern->can_implement_linear(&t.d, why, sizeof why)) {
        printf("%-64s skip  %s\n", what, why);
        g_skipped++;
        free(t.w), free(t.s);
        return;
    }
    void *state = NULL, *graph = NULL;
    float *x1 = qs_test_rand_bf16(&g_rng, m * k, 1.f);
    void *x = acts(x1, m * k);
    void *yg = gpu->alloc(gpu->act_size * (size_t)(m * n), &err), *ye = gpu->alloc(gpu->act_size * (size_t)(m * n), &err);
    void *s = g_stream;
    bool ok = kern->prepare_linear(&t.d, &state, &err) == 0;
    /* warm-up (eager), capture, then replays on new activations against eager calls */
    ok = ok && kern->apply_linear(state, x, ye, m, s, &err) == 0 && G->capture_begin(&err) == 0;
    if (ok) {
        int rc = kern->apply_linear(state, x, yg, m, s, &err);
        qs_err e2;
        int end = G->capture_end(&graph, NULL, &e2);
        if (rc == 0 && end != 0)
            err = e2;
        ok = rc == 0 && end == 0;
    }
    for (int rep = 0; rep < 2 && ok; rep++) {
        float *xr = qs_test_rand_bf16(&g_rng, m * k, 1.f);
        gpu->acts_from_host_f32(x, xr, m * k, &err);
        free(xr);
        ok = G->graph_launch(graph, &err) == 0;
        float *a = ok ? host_of(yg, m * n) : NULL;
        ok = ok && kern->apply_linear(state, x, ye, m, s, &err) == 0;
        float *e = ok ? host_of(ye, m * n) : NULL;
        if (ok && !same(a, e, m * n, detail, sizeof detail))
            ok = false;
        free(a);
        free(e);
    }
    report(what, ok, ok ? "" : (detail[0] ? detail : err.msg));
    G->graph_destroy(graph);
    if (state)
        kern->release(state);
    gpu->free(x), gpu->free(yg), gpu->free(ye);
    free(x1), free(t.w), free(t.s);
}

/* ---------------- failures inside a capture ---------------- */

static void test_alloc_inside_capture_fails(void)
{
    qs_err err = {{0}};
    bool began = G->capture_begin(&err) == 0;
    void *p = began ? gpu->alloc(4096, &err) : NULL;
    void *graph = NULL;
    qs_err e2 = {{0}};
    int end = began ? G->capture_end(&graph, NULL, &e2) : 0;
    char detail[200];
    snprintf(detail, sizeof detail, "alloc %s; capture_end: %s", p ? "allowed" : "refused",
             end ? e2.msg : "succeeded");
    /* The runtime refuses the allocation; whether it also invalidates the capture does not matter,
     * since step_graph.c discards a capture whose body failed. */
    report("an allocation inside a capture is refused", began && !p, detail);
    if (p)
        gpu->free(p);
    G->graph_destroy(graph);
    /* eager work right after: an embedding gather is exact */
    float tab[4 * 8];
    for (int i = 0; i < 32; i++)
        tab[i] = (float)i;
    void *t = upload_f32_weight(tab, 4, 8), *out = gpu->alloc(gpu->act_size * 16, &err);
    int32_t ids[2] = {3, 1};
    int32_t *dids = gpu->alloc(sizeof ids, &err);
    gpu->copy_to_device(dids, ids, sizeof ids, &err);
    bool ok = gpu->embedding(out, t, dids, 2, 8, &err) == 0;
    float *h = ok ? host_of(out, 16) : NULL;
    for (int i = 0; ok && i < 8; i++)
        ok = h[i] == (float)(24 + i) && h[8 + i] == (float)(8 + i);
    report("eager ops right after a failed capture", ok, ok ? "" : err.msg);
    free(h);
    gpu->free(t), gpu->free(out), gpu->free(dids);
}

static void test_marlin_growth_inside_capture_fails(void)
{
    char why[QS_REASON_MAX] = "";
    qs_device_caps caps;
    qs_err err = {{0}};
    test_layer t;
    /* k = 196: not a multiple of 8, so no marlin kernel reads x in place (the Hopper stream
     * kernel's tensor map, which would, needs 16-byte rows): every step runs on a zero-padded copy
     * of x, which a larger step must grow. With k = 200 the stream kernel took the 48-token step on
     * the H200 and nothing grew (found in session 12). */
    const int64_t k = 196;
    make_layer(&t, true, 256, k);
    if (qs_cuda_device_caps(0, &caps, &err) || !qs_kernel_marlin_linear.is_supported(&caps, why, sizeof why) ||
        !qs_kernel_marlin_linear.can_implement_linear(&t.d, why, sizeof why)) {
        printf("%-64s skip  %s\n", "marlin: growth inside a capture is refused", why);
        g_skipped++;
        free(t.w), free(t.s);
        return;
    }
    void *state = NULL, *graph = NULL;
    int64_t big = 48; /* the padded copy was sized for m = 1 only */
    float *xh = qs_test_rand_bf16(&g_rng, big * k, 1.f);
    void *x = acts(xh, big * k), *y = gpu->alloc(gpu->act_size * (size_t)(big * 256), &err);
    void *s = g_stream;
    bool ok = qs_kernel_marlin_linear.prepare_linear(&t.d, &state, &err) == 0 &&
              qs_kernel_marlin_linear.apply_linear(state, x, y, 1, s, &err) == 0 && G->capture_begin(&err) == 0;
    int rc = ok ? qs_kernel_marlin_linear.apply_linear(state, x, y, big, s, &err) : 0;
    qs_err e2 = {{0}};
    if (ok)
        G->capture_end(&graph, NULL, &e2); /* the body failed: what capture_end says does not matter */
    G->graph_destroy(graph);
    bool refused = ok && rc != 0 && strstr(err.msg, "during a CUDA graph capture");
    report("marlin: growth inside a capture is refused", refused, ok ? err.msg : "setup failed");
    qs_err e3 = {{0}};
    bool eager = state && qs_kernel_marlin_linear.apply_linear(state, x, y, big, s, &e3) == 0;
    float *h = eager ? host_of(y, big * 256) : NULL;
    for (int64_t i = 0; eager && i < big * 256; i++)
        eager = isfinite(h[i]);
    report("marlin: the same call eagerly afterwards", eager, eager ? "" : e3.msg);
    free(h);
    if (state)
        qs_kernel_marlin_linear.release(state);
    gpu->free(x), gpu->free(y);
    free(xh), free(t.w), free(t.s);
}

int main(void)
{
    if (qs_cuda_device_count() == 0) {
        printf("skip: no CUDA device (%s)\n0 passed, 0 failed, 1 skipped\n", qs_cuda_unavailable_reason());
        return 0;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    gpu = qs_ops_cuda();
    G = gpu->graph;
    qs_err err = {{0}};
    g_stream = G ? G->stream_create(&err) : NULL;
    if (!g_stream) {
        printf("no graph ops or no stream: %s\n0 passed, 1 failed, 0 skipped\n", err.msg);
        return 1;
    }
    G->set_stream(g_stream);
    test_decode_layer(false);
    test_decode_layer(true);
    static const int64_t shapes[][3] = {{1, 4096, 4096}, {4, 1024, 512}, {16, 256, 640}};
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
        test_linear(&qs_kernel_cublaslt_bf16, false, shapes[i][0], shapes[i][1], shapes[i][2]);
        test_linear(&qs_kernel_cublaslt_fp8, true, shapes[i][0], shapes[i][1], shapes[i][2]);
        test_linear(&qs_kernel_marlin_linear, true, shapes[i][0], shapes[i][1], shapes[i][2]);
        test_linear(&qs_kernel_emulation_linear, true, shapes[i][0], shapes[i][1], shapes[i][2]);
    }
    test_alloc_inside_capture_fails();
    test_marlin_growth_inside_capture_fails();
    G->set_stream(NULL);
    G->stream_destroy(g_stream);
    printf("%d passed, %d failed, %d skipped\n", g_passed, g_failed, g_skipped);
    return g_failed ? 1 : 0;
}
