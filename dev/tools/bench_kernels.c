/* bench_kernels.c — linear-kernel benchmark on the GPU (issue 7/8 figures): for the Llama-3.1-8B
 * linear shapes and a list of M, times each registered CUDA kernel on fresh random weights,
 * rotating several weight copies so the working set exceeds the L2 cache, and prints time,
 * TFLOP/s and weight bytes / time beside the device-to-device copy bandwidth measured in the same
 * run, and first, per shape, the read ceiling: one plain streaming read of as many bytes as the
 * layer's FP8 and NVFP4 weights (`read-fp8-bytes`, `read-nvfp4-bytes`; --kernels read selects it).
 * On request only (--kernels ring), the stream kernel's weight transport alone on the FP8 bytes
 * (dev/cuda/ring_probe.h): rings of 4, 8 and 12 stages of 16 KB on the stream kernel's CTAs, each
 * alone on its SM as the stream kernel is (`ring4-fp8-bytes`...), 8 stages on every SM
 * (`ring8-allsms-fp8-bytes`), and 4 stages leaving room for the next call's CTAs
 * (`ring4-shared-fp8-bytes`).
 * torch's baselines for the same shapes come from dev/scripts/bench_torch_kernels.py in the same
 * device call.
 * Usage: bench_kernels [--kernels a,b,...] [--m 1,4,16,...] [--shapes NxK,...] [--iters N] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef QS_HAVE_CUDA
#include "device_query.h"
#include "qs_cuda_mem.h"
#include "qs_cuda_ops.h"
#include "read_probe.h"
#include "ring_probe.h"
#include "core/fp4.h"
#include "core/fp8.h"
#include "registry/registry.h"

typedef struct {
    const char *label;   /* what the table says */
    const char *kernel;  /* registry name */
    qs_scheme scheme;
    qs_weight_scale_layout wscale;
    qs_act_quant aquant;
    bool ordered; /* x in the order the kernel asks for at M (input_order), as the model's ops write it */
} bench_kernel;

static const bench_kernel KERNELS[] = {
    {"cublaslt-bf16", "cublaslt", QS_SCHEME_BF16, QS_WSCALE_NONE, QS_AQUANT_NONE, false},
    {"cublaslt-fp8-tensor", "cublaslt", QS_SCHEME_FP8_W8A8, QS_WSCALE_TENSOR, QS_AQUANT_STATIC_TENSOR, false},
    {"cublaslt-fp8-channel", "cublaslt", QS_SCHEME_FP8_W8A8, QS_WSCALE_CHANNEL, QS_AQUANT_DYNAMIC_TOKEN, false},
    {"marlin-fp8", "marlin", QS_SCHEME_W8A16_FP8, QS_WSCALE_CHANNEL, QS_AQUANT_NONE, false},
    {"marlin-nvfp4", "marlin", QS_SCHEME_NVFP4_W4A16, QS_WSCALE_NVFP4, QS_AQUANT_NONE, false},
    /* the same, given x in the packed order the stream kernel reads where it asks for it (the
     * op before the layer writes it so in the model: core/act_order.h), so no permute pass */
    {"marlin-fp8-ordered", "marlin", QS_SCHEME_W8A16_FP8, QS_WSCALE_CHANNEL, QS_AQUANT_NONE, true},
    {"marlin-nvfp4-ordered", "marlin", QS_SCHEME_NVFP4_W4A16, QS_WSCALE_NVFP4, QS_AQUANT_NONE, true},
    {"emulation-fp8", "emulation", QS_SCHEME_W8A16_FP8, QS_WSCALE_CHANNEL, QS_AQUANT_NONE, false},
};

static int64_t SHAPES[8][2] = {{6144, 4096}, {4096, 4096}, {28672, 4096}, {4096, 14336}}; /* N, K */
static int n_shapes = 4;

/* "NxK,NxK,..." into SHAPES; 0 when the list is malformed. */
static int parse_shapes(const char *s)
{
    n_shapes = 0;
    while (*s && n_shapes < 8) {
        char *end;
        long long n = strtoll(s, &end, 10);
        if (*end != 'x' || n <= 0)
            return 0;
        long long k = strtoll(end + 1, &end, 10);
        if (k <= 0 || (*end && *end != ','))
            return 0;
        SHAPES[n_shapes][0] = n, SHAPES[n_shapes][1] = k, n_shapes++;
        s = *end ? end + 1 : end;
    }
    return n_shapes > 0 && !*s;
}

static uint64_t rng = 88172645463325252ull;
static uint32_t next_u32(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 32);
}

typedef struct {
    qs_tensor w, s;
    void *wbuf, *sbuf;
    qs_linear_desc d;
} host_layer;

static void fill_layer(const bench_kernel *bk, int64_t n, int64_t k, host_layer *h)
{
    memset(h, 0, sizeof *h);
    qs_linear_desc *d = &h->d;
    snprintf(d->name, sizeof d->name, "bench.%lldx%lld", (long long)n, (long long)k);
    d->scheme = bk->scheme;
    d->n = n;
    d->k = k;
    d->wscale = bk->wscale;
    d->aquant = bk->aquant;
    d->block_n = d->block_k = d->act_group_size = 128;
    d->weight_global_scale = 1e-3f;
    d->input_scale = 1.f / 448.f;
    h->w.name = "bench.weight";
    h->w.file = "bench";
    h->w.ndim = 2;
    h->w.shape[0] = n;
    h->s.name = "bench.weight_scale";
    h->s.file = "bench";
    if (bk->scheme == QS_SCHEME_BF16) {
        uint16_t *w = malloc(2 * n * k);
        for (int64_t i = 0; i < n * k; i++)
            w[i] = qs_f32_to_bf16(((int)(next_u32() % 2001) - 1000) * 1e-5f);
        h->w.dtype = QS_DT_BF16, h->w.shape[1] = k, h->w.numel = n * k, h->w.nbytes = 2 * n * k, h->wbuf = w;
    } else if (bk->wscale == QS_WSCALE_NVFP4) {
        uint8_t *w = malloc(n * k / 2), *s = malloc(n * k / 16);
        for (int64_t i = 0; i < n * k / 2; i++)
            w[i] = (uint8_t)next_u32();
        for (int64_t i = 0; i < n * k / 16; i++)
            s[i] = qs_f32_to_e4m3(0.5f + (next_u32() % 100) * 0.01f);
        h->w.dtype = QS_DT_U8, h->w.shape[1] = k / 2, h->w.numel = n * k / 2, h->w.nbytes = n * k / 2, h->wbuf = w;
        h->s.dtype = QS_DT_F8_E4M3, h->s.ndim = 2, h->s.shape[0] = n, h->s.shape[1] = k / 16;
        h->s.numel = n * k / 16, h->s.nbytes = n * k / 16, h->sbuf = s;
    } else {
        uint8_t *w = malloc(n * k);
        for (int64_t i = 0; i < n * k; i++) {
            uint8_t b = (uint8_t)next_u32();
            w[i] = (b & 0x7F) == 0x7F ? 0 : b; /* no NaN codes */
        }
        int64_t ns = bk->wscale == QS_WSCALE_CHANNEL ? n : 1;
        float *s = malloc(sizeof(float) * ns);
        for (int64_t i = 0; i < ns; i++)
            s[i] = 1e-3f;
        h->w.dtype = QS_DT_F8_E4M3, h->w.shape[1] = k, h->w.numel = n * k, h->w.nbytes = n * k, h->wbuf = w;
        h->s.dtype = QS_DT_F32, h->s.ndim = ns > 1 ? 2 : 0, h->s.shape[0] = ns, h->s.shape[1] = 1;
        h->s.numel = ns, h->s.nbytes = 4 * ns, h->sbuf = s;
    }
    h->w.data = h->wbuf;
    h->s.data = h->sbuf;
    d->weight = &h->w;
    d->weight_scale = bk->scheme == QS_SCHEME_BF16 ? NULL : &h->s;
}

static double weight_bytes(const bench_kernel *bk, int64_t n, int64_t k)
{
    if (bk->scheme == QS_SCHEME_BF16)
        return 2.0 * n * k;
    if (bk->wscale == QS_WSCALE_NVFP4)
        return n * k / 2.0 + n * k / 16.0 + 4;
    return (double)n * k + 4.0 * (bk->wscale == QS_WSCALE_CHANNEL ? n : 1);
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

static qs_cuda_timer *timer;

/* One call of what is timed: call i of a run (i picks the weight copy), on `stream`. */
typedef int (*bench_call)(void *ctx, int i, void *stream, qs_err *err);

/* Median time of one call (µs) over 7 timed runs of `per` calls, rotating the weight copies,
 * after one untimed run. graph: the `per` calls are recorded once into a CUDA graph on a stream
 * of their own and the graph is replayed, so the host's launch cost is out of the figure (as in
 * torch's CUDA-graph baselines); otherwise they are launched one by one from here. */
static int time_calls(bench_call call, void *ctx, int per, int graph, double *us, qs_err *err)
{
    const qs_graph_ops *g = &qs_cuda_graph_ops;
    void *stream = NULL, *prev = NULL, *exec = NULL;
    int rc = 0;
    if (graph) {
        if (!(stream = g->stream_create(err)))
            return -1;
        prev = g->set_stream(stream);
        rc = g->capture_begin(err);
        if (!rc) {
            for (int i = 0; i < per && !rc; i++)
                rc = call(ctx, i, stream, err);
            qs_err end_err; /* keeps the first failure's message in err */
            int end_rc = g->capture_end(&exec, NULL, rc ? &end_err : err);
            if (rc)
                g->graph_destroy(exec), exec = NULL;
            else
                rc = end_rc;
        }
    }
    float times[8];
    const int reps = 7;
    for (int r = 0; r < reps + 1 && !rc; r++) {
        qs_cuda_timer_start(timer);
        if (graph)
            rc = g->graph_launch(exec, err);
        for (int i = 0; i < per && !graph && !rc; i++)
            rc = call(ctx, i, stream, err);
        float ms = qs_cuda_timer_stop_ms(timer);
        if (r > 0)
            times[r - 1] = ms * 1000.f / per;
    }
    if (!rc && qs_cuda_synchronize(err))
        rc = -1;
    if (graph) {
        g->graph_destroy(exec);
        g->set_stream(prev);
        g->stream_destroy(stream);
    }
    if (rc)
        return -1;
    qsort(times, reps, sizeof(float), cmp_float);
    *us = times[reps / 2];
    return 0;
}

/* A linear kernel's call: y = x W^T on weight copy i % copies. */
typedef struct {
    const qs_kernel *kern;
    void **states;
    int copies;
    void *x, *y;
    int64_t m;
    bool ordered; /* x in the kernel's input_order (apply_linear_ordered) */
} linear_calls;

static int call_linear(void *ctx, int i, void *stream, qs_err *err)
{
    const linear_calls *c = ctx;
    return (c->ordered ? c->kern->apply_linear_ordered : c->kern->apply_linear)(c->states[i % c->copies], c->x, c->y,
                                                                                c->m, stream, err);
}

/* A read probe's call: one streaming read of buffer i % copies, plain (depth 0) or through the
 * ring probe's rings of `depth` stages of stage_bytes on `ctas` CTAs (0: the stream kernel's rule). */
typedef struct {
    void **bufs;
    int copies;
    size_t bytes;
    uint32_t *sum;
    int depth, stage_bytes, ctas;
    bool alone;
} read_calls;

static int call_read(void *ctx, int i, void *stream, qs_err *err)
{
    const read_calls *c = ctx;
    void *buf = c->bufs[i % c->copies];
    return c->depth ? qs_cuda_ring_read_sum(buf, c->bytes, c->stage_bytes, c->depth, c->ctas, c->alone, c->sum, stream,
                                            err)
                    : qs_cuda_read_sum(buf, c->bytes, c->sum, stream, err);
}

/* Copies of a working set of `bytes` that together exceed the L2 cache three times (2..16). */
static int l2_defeating_copies(double bytes)
{
    int copies = (int)ceil(3.0 * qs_cuda_l2_bytes() / bytes);
    return copies < 2 ? 2 : (copies > 16 ? 16 : copies);
}

static const bench_kernel *kernel_named(const char *label)
{
    for (size_t i = 0; i < sizeof KERNELS / sizeof KERNELS[0]; i++)
        if (!strcmp(KERNELS[i].label, label))
            return &KERNELS[i];
    abort(); /* a label of the table above */
}

/* Items of a comma-separated list: the one after item p (NULL after the last), and whether item p
 * is `name` as a whole ("marlin-fp8" is not "marlin-fp8-ordered"). */
static const char *next_item(const char *p) { return strchr(p, ',') ? strchr(p, ',') + 1 : NULL; }
static bool item_is(const char *p, const char *name)
{
    size_t len = strcspn(p, ",");
    return strlen(name) == len && !strncmp(p, name, len);
}

/* Whether `name` is one of the items of list. */
static bool listed(const char *list, const char *name)
{
    for (const char *p = list; p; p = next_item(p))
        if (item_is(p, name))
            return true;
    return false;
}

/* The probes' rows, in groups that run whole: the read ceiling (with every run) and the ring
 * probe (on request); --kernels selects a group by its name or any of its rows' labels. */
typedef struct {
    const char *label;
    bool fp4;     /* as many bytes as marlin's NVFP4 weights (else FP8) */
    int depth;    /* 0: the plain read; else the ring probe's stages (16 KB each) */
    bool all_sms; /* the ring probe on every SM (else the stream kernel's CTA count) */
    bool shared;  /* the ring probe's CTAs leave the rest of the SM to the next call's (else alone) */
} probe_row;
static const probe_row READ_ROWS[] = {{"read-fp8-bytes", false, 0, false, false},
                                      {"read-nvfp4-bytes", true, 0, false, false}};
static const probe_row RING_ROWS[] = {{"ring4-fp8-bytes", false, 4, false, false},
                                      {"ring8-fp8-bytes", false, 8, false, false},
                                      {"ring12-fp8-bytes", false, 12, false, false},
                                      {"ring8-allsms-fp8-bytes", false, 8, true, false},
                                      {"ring4-shared-fp8-bytes", false, 4, false, true}};
typedef struct {
    const char *name;
    const probe_row *rows;
    size_t n_rows;
    bool on_request; /* only when --kernels names it */
} probe_group;
static const probe_group PROBES[] = {{"read", READ_ROWS, sizeof READ_ROWS / sizeof READ_ROWS[0], false},
                                     {"ring", RING_ROWS, sizeof RING_ROWS / sizeof RING_ROWS[0], true}};
#define N_PROBES (sizeof PROBES / sizeof PROBES[0])

/* Whether list item p names group g or one of its rows. */
static bool names_probe(const char *p, const probe_group *g)
{
    if (item_is(p, g->name))
        return true;
    for (size_t i = 0; i < g->n_rows; i++)
        if (item_is(p, g->rows[i].label))
            return true;
    return false;
}

static bool probe_listed(const char *list, const probe_group *g)
{
    for (const char *p = list; p; p = next_item(p))
        if (names_probe(p, g))
            return true;
    return false;
}

/* 0, or 1 after naming the first item of --kernels that is neither a probe's name nor a kernel label. */
static int check_kernel_list(const char *list)
{
    for (const char *p = list; p; p = next_item(p)) {
        bool known = false;
        for (size_t g = 0; g < N_PROBES && !known; g++)
            known = names_probe(p, &PROBES[g]);
        for (size_t i = 0; i < sizeof KERNELS / sizeof KERNELS[0] && !known; i++)
            known = item_is(p, KERNELS[i].label);
        if (!known) {
            fprintf(stderr, "bench_kernels: --kernels: unknown kernel '%.*s' (one of:", (int)strcspn(p, ","), p);
            for (size_t g = 0; g < N_PROBES; g++) {
                fprintf(stderr, " %s,", PROBES[g].name);
                for (size_t i = 0; i < PROBES[g].n_rows; i++)
                    fprintf(stderr, " %s,", PROBES[g].rows[i].label);
            }
            for (size_t i = 0; i < sizeof KERNELS / sizeof KERNELS[0]; i++)
                fprintf(stderr, "%s %s", i ? "," : "", KERNELS[i].label);
            fprintf(stderr, ")\n");
            return 1;
        }
    }
    return 0;
}

/* The probes' rows: per shape, one read (dev/cuda/read_probe.cu, or through the ring probe's rings,
 * dev/cuda/ring_probe.cu) of as many bytes as marlin's FP8 or NVFP4 weights of the layer, timed as
 * the kernels are (rotating copies past the L2, graph replay), printed once per M so that the
 * per-M tables carry it. */
static void bench_probes(const probe_group *g, const long *ms_list, int n_m, int iters, double copy_gbps)
{
    for (int si = 0; si < n_shapes; si++) {
        for (size_t r = 0; r < g->n_rows; r++) {
            const probe_row *row = &g->rows[r];
            int64_t n = SHAPES[si][0], k = SHAPES[si][1];
            size_t bytes = (size_t)weight_bytes(kernel_named(row->fp4 ? "marlin-nvfp4" : "marlin-fp8"), n, k) /
                           (row->depth ? 16 : 4) * (row->depth ? 16 : 4);
            void *bufs[16] = {0}, *sum = NULL;
            read_calls calls = {bufs, l2_defeating_copies((double)bytes), bytes, NULL,
                                row->depth, 16 * 1024, row->all_sms ? qs_cuda_sm_count() : 0, !row->shared};
            qs_err err = {{0}};
            int failed = qs_cuda_malloc(&sum, 4, &err);
            for (int c = 0; c < calls.copies && !failed; c++)
                failed = qs_cuda_malloc(&bufs[c], bytes, &err) || qs_cuda_memset(bufs[c], c + 1, bytes, &err);
            calls.sum = sum;
            double eager_us = 0, us = 0;
            failed = failed || time_calls(call_read, &calls, iters, 0, &eager_us, &err) ||
                     time_calls(call_read, &calls, iters, 1, &us, &err);
            for (int mi = 0; mi < n_m; mi++) {
                if (failed) {
                    printf("%-22s %6lld %6lld %5ld  failed: %s\n", row->label, (long long)n, (long long)k,
                           ms_list[mi], err.msg);
                    continue;
                }
                double gbps = bytes / (us * 1e-6) / 1e9;
                printf("%-22s %6lld %6lld %5ld %10.1f %9.1f %11.0f %7.0f%% %9.1f\n", row->label, (long long)n,
                       (long long)k, ms_list[mi], us, 0.0, gbps, 100.0 * gbps / copy_gbps, eager_us);
            }
            fflush(stdout);
            for (int c = 0; c < calls.copies; c++)
                qs_cuda_free(bufs[c]);
            qs_cuda_free(sum);
        }
    }
}

static int parse_list(const char *s, long *out, int cap)
{
    int n = 0;
    while (*s && n < cap) {
        out[n++] = strtol(s, (char **)&s, 10);
        while (*s == ',')
            s++;
    }
    return n;
}

int main(int argc, char **argv)
{
    long ms_list[16] = {1, 4, 16, 64, 256, 1024, 4096};
    int n_m = 7, iters = 20;
    const char *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--m") && i + 1 < argc)
            n_m = parse_list(argv[++i], ms_list, 16);
        else if (!strcmp(argv[i], "--iters") && i + 1 < argc)
            iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--kernels") && i + 1 < argc)
            only = argv[++i];
        else if (!strcmp(argv[i], "--shapes") && i + 1 < argc && parse_shapes(argv[i + 1]))
            i++;
        else {
            fprintf(stderr, "usage: bench_kernels [--kernels a,b] [--m 1,4,16] [--shapes NxK,...] [--iters N]\n");
            return 2;
        }
    }
    if (only && check_kernel_list(only))
        return 2;
    if (qs_cuda_device_count() == 0) {
        fprintf(stderr, "bench_kernels: no CUDA device: %s\n", qs_cuda_unavailable_reason());
        return 1;
    }
    qs_device_caps caps;
    qs_err err;
    if (qs_cuda_device_caps(0, &caps, &err))
        return fprintf(stderr, "%s\n", err.msg), 1;
    double copy_gbps;
    if (qs_cuda_copy_bandwidth((size_t)1 << 30, 20, &copy_gbps, &err))
        return fprintf(stderr, "%s\n", err.msg), 1;
    printf("device: %s, L2 %d MB; device-to-device copy: %.0f GB/s (read + write)\n", caps.name,
           qs_cuda_l2_bytes() >> 20, copy_gbps);
    printf("%-22s %6s %6s %5s %10s %9s %11s %8s %9s\n", "kernel", "N", "K", "M", "time_us", "TFLOP/s", "weight_GB/s",
           "%copy", "eager_us");
    timer = qs_cuda_timer_new();
    for (size_t g = 0; g < N_PROBES; g++)
        if (only ? probe_listed(only, &PROBES[g]) : !PROBES[g].on_request)
            bench_probes(&PROBES[g], ms_list, n_m, iters, copy_gbps);
    for (size_t ki = 0; ki < sizeof KERNELS / sizeof KERNELS[0]; ki++) {
        const bench_kernel *bk = &KERNELS[ki];
        if (only && !listed(only, bk->label))
            continue;
        const qs_kernel *kern = qs_registry_find_for_scheme(bk->kernel, QS_PLATFORM_CUDA, QS_KIND_LINEAR, bk->scheme);
        char why[QS_REASON_MAX];
        if (!kern) {
            printf("%-22s not built into this binary\n", bk->label);
            continue;
        }
        if (!kern->is_supported(&caps, why, sizeof why)) {
            printf("%-22s %s\n", bk->label, why);
            continue;
        }
        for (int si = 0; si < n_shapes; si++) {
            int64_t n = SHAPES[si][0], k = SHAPES[si][1];
            host_layer h;
            fill_layer(bk, n, k, &h);
            if (!kern->can_implement_linear(&h.d, why, sizeof why)) {
                printf("%-22s %6lld %6lld  %s\n", bk->label, (long long)n, (long long)k, why);
                free(h.wbuf), free(h.sbuf);
                continue;
            }
            double wb = weight_bytes(bk, n, k);
            int copies = l2_defeating_copies(wb);
            void *states[16] = {0};
            int ok = 1;
            for (int c = 0; c < copies && ok; c++)
                ok = kern->prepare_linear(&h.d, &states[c], &err) == 0;
            free(h.wbuf), free(h.sbuf);
            if (!ok) {
                printf("%-22s %6lld %6lld  prepare failed: %s\n", bk->label, (long long)n, (long long)k, err.msg);
                for (int c = 0; c < copies; c++)
                    if (states[c])
                        kern->release(states[c]);
                continue;
            }
            for (int mi = 0; mi < n_m; mi++) {
                int64_t m = ms_list[mi];
                void *x, *y;
                if (qs_cuda_malloc(&x, 2 * m * k, &err) || qs_cuda_malloc(&y, 2 * m * n, &err))
                    return fprintf(stderr, "%s\n", err.msg), 1;
                float *hx = malloc(sizeof(float) * m * k);
                for (int64_t i = 0; i < m * k; i++)
                    hx[i] = ((int)(next_u32() % 2001) - 1000) * 1e-3f;
                qs_cuda_upload_f32_as_bf16(x, hx, m * k, &err);
                free(hx);
                double eager_us, graph_us;
                /* (the values of x do not matter to the timing, only the call) */
                bool ordered = bk->ordered && kern->input_order && kern->input_order(states[0], m) != QS_ACT_NATURAL;
                linear_calls calls = {kern, states, copies, x, y, m, ordered};
                int failed = time_calls(call_linear, &calls, iters, 0, &eager_us, &err);
                int no_graph = failed ? 1 : time_calls(call_linear, &calls, iters, 1, &graph_us, &err);
                if (failed) {
                    printf("%-22s %6lld %6lld %5lld  failed: %s\n", bk->label, (long long)n, (long long)k, (long long)m,
                           err.msg);
                } else {
                    /* The figures are the graph replay's (GPU time alone, as torch's baselines are
                     * timed); eager_us adds what launching from the host costs. */
                    double us = no_graph ? eager_us : graph_us;
                    double tflops = 2.0 * m * n * k / (us * 1e-6) / 1e12;
                    double gbps = wb / (us * 1e-6) / 1e9;
                    printf("%-22s %6lld %6lld %5lld %10.1f %9.1f %11.0f %7.0f%% %9.1f%s%s\n", bk->label, (long long)n,
                           (long long)k, (long long)m, us, tflops, gbps, 100.0 * gbps / copy_gbps, eager_us,
                           no_graph ? "  (no graph: eager time)" : "",
                           bk->ordered && !ordered ? "  (natural order at this M)" : "");
                    if (no_graph)
                        fprintf(stderr, "%s: %s\n", bk->label, err.msg);
                }
                fflush(stdout);
                qs_cuda_free(x);
                qs_cuda_free(y);
            }
            for (int c = 0; c < copies; c++)
                kern->release(states[c]);
        }
    }
    qs_cuda_timer_free(timer);
    return 0;
}
#else
int main(void)
{
    fprintf(stderr, "bench_kernels: this build has no CUDA (nvcc was not found at build time)\n");
    return 1;
}
#endif
