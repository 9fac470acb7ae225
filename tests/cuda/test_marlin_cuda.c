/* test_marlin_cuda.c — GPU test of the `marlin` linear kernel (run by scripts/gpu-check.sh):
 * every FP8 scale layout and NVFP4, at the Llama-3.1-8B benchmark shapes and at odd shapes (some
 * padded to the kernel's 16 rows / k step), for
 * M in {1, 3, 16, 20, 29, 33, 45, 50, 64, 256}, against the CPU `reference` kernel on fresh random data. marlin
 * runs W8A8 / W4A4 layers weight-only, so the reference runs the same layer with BF16
 * activations. Outputs are poisoned (NaN) first; a run passes when every element was written, none
 * is NaN, and ||y - ref|| / ||ref|| <= 1e-2. For the large shapes the reference computes the
 * last 256 output columns only (the whole output is still checked for NaN / unwritten values).
 * Also runs the marlin MoE descriptor once against the emulation MoE. Prints a table and
 * "N passed, N failed, N skipped". */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/reference_kernels.h"
#include "cuda_test_util.h"
#include "core/tensor.h"
#include "device_query.h"
#include "qs_cuda_kernels.h"
#include "qs_cuda_mem.h"
#include "core/fp4.h"
#include "core/fp8.h"

static uint64_t g_rng = 0x2545F4914F6CDD1Dull;

static float frand(void) { return qs_test_frand(&g_rng); }

typedef struct {
    const char *label;
    qs_scheme scheme;
    qs_weight_scale_layout wscale;
    qs_act_quant aquant;
    bool bias;
} test_case;

static const test_case CASES[] = {
    {"fp8_w8a8 tensor", QS_SCHEME_FP8_W8A8, QS_WSCALE_TENSOR, QS_AQUANT_STATIC_TENSOR, false},
    {"fp8_w8a8 channel+bias", QS_SCHEME_FP8_W8A8, QS_WSCALE_CHANNEL, QS_AQUANT_DYNAMIC_TOKEN, true},
    {"fp8_block_w8a8", QS_SCHEME_FP8_BLOCK_W8A8, QS_WSCALE_BLOCK, QS_AQUANT_DYNAMIC_GROUP, false},
    {"w8a16 channel", QS_SCHEME_W8A16_FP8, QS_WSCALE_CHANNEL, QS_AQUANT_NONE, false},
    {"w8a16 block", QS_SCHEME_W8A16_FP8, QS_WSCALE_BLOCK, QS_AQUANT_NONE, false},
    {"nvfp4_w4a16", QS_SCHEME_NVFP4_W4A16, QS_WSCALE_NVFP4, QS_AQUANT_NONE, false},
    {"nvfp4_w4a4+bias", QS_SCHEME_NVFP4_W4A4, QS_WSCALE_NVFP4, QS_AQUANT_NVFP4, true},
};

static const int64_t SHAPES[][2] = {/* n, k */
                                    {6144, 4096}, {4096, 4096}, {28672, 4096}, {4096, 14336},
                                    {16, 256},    {48, 512},    {80, 768},     {1040, 1280},
                                    /* padded inside the kernel: stories260K's MLP, odd sizes */
                                    {172, 64},    {64, 172},    {100, 208}};
/* Every token tile of the stream kernel when it is forced (16, 24, 32, 40, 48, 64; 56 once enabled),
 * each with tokens past M inside the tile. */
static const int64_t MS[] = {1, 3, 16, 20, 29, 33, 45, 50, 64, 256};

typedef struct {
    qs_tensor weight, scale, bias;
    void *bufs[3];
} layer_data;

/* Random weights quantized per the case (a few NVFP4 blocks get a zero scale). */
static void make_layer(const test_case *c, int64_t n, int64_t k, qs_linear_desc *d, layer_data *ld)
{
    memset(d, 0, sizeof *d);
    memset(ld, 0, sizeof *ld);
    snprintf(d->name, sizeof d->name, "test.%s", c->label);
    d->scheme = c->scheme;
    d->n = n;
    d->k = k;
    d->wscale = c->wscale;
    d->aquant = c->aquant;
    d->weight_global_scale = 1.f;
    d->block_n = d->block_k = 128;
    d->act_group_size = 128;
    if (c->wscale == QS_WSCALE_NVFP4) {
        uint8_t *packed = malloc((size_t)(n * k / 2)), *bs = malloc((size_t)(n * k / 16));
        float global = 0.05f * 7.f / (6.f * 448.f);
        float w[16];
        for (int64_t r = 0; r < n; r++)
            for (int64_t b = 0; b < k / 16; b++) {
                float a = 0;
                float mag = 0.05f * (1.f + (float)((r + b) % 7));
                for (int j = 0; j < 16; j++)
                    a = fmaxf(a, fabsf(w[j] = frand() * mag));
                uint8_t e = qs_f32_to_e4m3(a / (6.f * global));
                if (((r * 131 + b * 7) % 97) == 0)
                    e = 0; /* a zero block scale */
                bs[r * (k / 16) + b] = e;
                float s = qs_e4m3_to_f32(e) * global;
                uint8_t codes[16];
                for (int j = 0; j < 16; j++)
                    codes[j] = qs_f32_to_e2m1(s > 0 ? w[j] / s : 0.f);
                qs_fp4_pack(codes, 16, packed + r * (k / 2) + b * 8);
            }
        qs_test_set_tensor(&ld->weight, "test.weight", QS_DT_U8, 2, n, k / 2, packed, (size_t)(n * k / 2));
        qs_test_set_tensor(&ld->scale, "test.weight_scale", QS_DT_F8_E4M3, 2, n, k / 16, bs, (size_t)(n * k / 16));
        ld->bufs[0] = packed;
        ld->bufs[1] = bs;
        d->weight_global_scale = global;
        d->input_scale = 2.5f / (6.f * 448.f);
    } else {
        int64_t nb = (n + 127) / 128, kb = (k + 127) / 128;
        int64_t ns = c->wscale == QS_WSCALE_TENSOR ? 1 : (c->wscale == QS_WSCALE_CHANNEL ? n : nb * kb);
        float *sc = calloc((size_t)ns, sizeof(float));
        /* Scales first from the magnitudes the generator will use, then codes. */
        for (int64_t r = 0; r < n; r++)
            for (int64_t j = 0; j < k; j += 64) {
                float mag = 0.05f * (1.f + (float)((r + j / 64) % 7));
                int64_t si = c->wscale == QS_WSCALE_TENSOR ? 0
                             : c->wscale == QS_WSCALE_CHANNEL ? r
                                                              : (r / 128) * kb + j / 128;
                sc[si] = fmaxf(sc[si], mag / 448.f);
            }
        uint8_t *wq = malloc((size_t)(n * k));
        for (int64_t r = 0; r < n; r++)
            for (int64_t j = 0; j < k; j++) {
                float mag = 0.05f * (1.f + (float)((r + j / 64) % 7));
                int64_t si = c->wscale == QS_WSCALE_TENSOR ? 0
                             : c->wscale == QS_WSCALE_CHANNEL ? r
                                                              : (r / 128) * kb + j / 128;
                wq[r * k + j] = qs_f32_to_e4m3(frand() * mag / sc[si]);
            }
        qs_test_set_tensor(&ld->weight, "test.weight", QS_DT_F8_E4M3, 2, n, k, wq, (size_t)(n * k));
        if (c->wscale == QS_WSCALE_TENSOR)
            qs_test_set_tensor(&ld->scale, "test.weight_scale", QS_DT_F32, 0, 0, 0, sc, 4);
        else if (c->wscale == QS_WSCALE_CHANNEL)
            qs_test_set_tensor(&ld->scale, "test.weight_scale", QS_DT_F32, 2, n, 1, sc, (size_t)(4 * n));
        else
            qs_test_set_tensor(&ld->scale, "test.weight_scale", QS_DT_F32, 2, nb, kb, sc, (size_t)(4 * nb * kb));
        ld->bufs[0] = wq;
        ld->bufs[1] = sc;
        d->input_scale = 2.5f / 448.f;
    }
    d->weight = &ld->weight;
    d->weight_scale = &ld->scale;
    if (c->bias) {
        float *b = malloc(sizeof(float) * (size_t)n);
        for (int64_t i = 0; i < n; i++)
            b[i] = frand();
        qs_test_set_tensor(&ld->bias, "test.bias", QS_DT_F32, 1, n, 0, b, (size_t)(4 * n));
        ld->bufs[2] = b;
        d->bias = &ld->bias;
    }
}

/* The weight-only desc of output rows [r0, n) of d (r0 a multiple of 128), for the reference. */
typedef struct {
    qs_linear_desc d;
    qs_tensor w, s, b;
} sub_desc;

static void make_sub(const qs_linear_desc *d, int64_t r0, sub_desc *o)
{
    o->d = *d;
    o->d.n = d->n - r0;
    o->d.aquant = QS_AQUANT_NONE;
    if (d->scheme == QS_SCHEME_FP8_W8A8 || d->scheme == QS_SCHEME_FP8_BLOCK_W8A8)
        o->d.scheme = QS_SCHEME_W8A16_FP8;
    if (d->scheme == QS_SCHEME_NVFP4_W4A4)
        o->d.scheme = QS_SCHEME_NVFP4_W4A16;
    o->w = *d->weight;
    o->s = *d->weight_scale;
    int64_t rb = d->wscale == QS_WSCALE_NVFP4 ? d->k / 2 : d->k;
    o->w.data = (const uint8_t *)d->weight->data + r0 * rb;
    o->w.shape[0] = o->d.n;
    o->w.numel = o->d.n * o->w.shape[1];
    o->w.nbytes = (size_t)(o->d.n * rb);
    if (d->wscale == QS_WSCALE_NVFP4) {
        o->s.data = (const uint8_t *)d->weight_scale->data + r0 * (d->k / 16);
        o->s.shape[0] = o->d.n;
        o->s.numel = o->d.n * (d->k / 16);
        o->s.nbytes = (size_t)o->s.numel;
    } else if (d->wscale == QS_WSCALE_CHANNEL) {
        o->s.data = (const float *)d->weight_scale->data + r0;
        o->s.shape[0] = o->d.n;
        o->s.numel = o->d.n;
        o->s.nbytes = (size_t)(4 * o->d.n);
    } else if (d->wscale == QS_WSCALE_BLOCK) {
        int64_t kb = (d->k + 127) / 128;
        o->s.data = (const float *)d->weight_scale->data + (r0 / 128) * kb;
        o->s.shape[0] = (o->d.n + 127) / 128;
        o->s.numel = o->s.shape[0] * kb;
        o->s.nbytes = (size_t)(4 * o->s.numel);
    }
    o->d.weight = &o->w;
    o->d.weight_scale = &o->s;
    if (d->bias) {
        o->b = *d->bias;
        o->b.data = (const float *)d->bias->data + r0;
        o->b.shape[0] = o->d.n;
        o->b.numel = o->d.n;
        o->b.nbytes = (size_t)(4 * o->d.n);
        o->d.bias = &o->b;
    }
}

static int g_passed, g_failed, g_skipped;

static void run_m(const qs_kernel *kern, void *state, const qs_linear_desc *d, const test_case *c, int64_t m)
{
    int64_t n = d->n, k = d->k;
    int64_t r0 = (m * n * k > ((int64_t)1 << 29) && n > 256) ? n - 256 : 0;
    int64_t nr = n - r0;
    sub_desc sd;
    make_sub(d, r0, &sd);
    float *x = malloc(sizeof(float) * (size_t)(m * k)), *ref = malloc(sizeof(float) * (size_t)(m * nr));
    float *y = malloc(sizeof(float) * (size_t)(m * n));
    for (int64_t i = 0; i < m * k; i++)
        x[i] = qs_bf16_to_f32(qs_f32_to_bf16(frand() * 2.5f));
    qs_err err = {{0}};
    void *ref_state = NULL, *dx = NULL, *dy = NULL;
    int ok = qs_kernel_reference_linear.prepare_linear(&sd.d, &ref_state, &err) == 0 &&
             qs_kernel_reference_linear.apply_linear(ref_state, x, ref, m, NULL, &err) == 0 &&
             qs_cuda_malloc(&dx, (size_t)(2 * m * k), &err) == 0 && qs_cuda_malloc(&dy, (size_t)(2 * m * n), &err) == 0 &&
             qs_cuda_upload_f32_as_bf16(dx, x, (size_t)(m * k), &err) == 0 &&
             qs_cuda_memset(dy, 0xFF, (size_t)(2 * m * n), &err) == 0 &&
             kern->apply_linear(state, dx, dy, m, NULL, &err) == 0 && qs_cuda_synchronize(&err) == 0 &&
             qs_cuda_download_bf16_as_f32(y, dy, (size_t)(m * n), &err) == 0;
    double num = 0, den = 0;
    int64_t bad = 0;
    if (ok) {
        for (int64_t i = 0; i < m * n; i++)
            if (!isfinite(y[i]))
                bad++;
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < nr; j++) {
                double dd = (double)y[i * n + r0 + j] - ref[i * nr + j];
                num += dd * dd;
                den += (double)ref[i * nr + j] * ref[i * nr + j];
            }
    }
    double rel = den > 0 ? sqrt(num / den) : sqrt(num);
    bool pass = ok && bad == 0 && rel <= 1e-2;
    printf("%-8s %-22s %6lld %6lld %5lld  rel %.2e%s %s%s%s\n", kern->name, c->label, (long long)n, (long long)k,
           (long long)m, rel, r0 ? " (last 256 cols)" : "", pass ? "ok" : "FAIL", ok ? "" : " error: ", ok ? "" : err.msg);
    if (bad)
        printf("    %lld outputs NaN/unwritten\n", (long long)bad);
    pass ? g_passed++ : g_failed++;
    if (ref_state)
        qs_kernel_reference_linear.release(ref_state);
    qs_cuda_free(dx);
    qs_cuda_free(dy);
    free(x);
    free(ref);
    free(y);
}

/* marlin MoE vs emulation MoE on a tiny FP8 and NVFP4 expert set. */
static void run_moe(const qs_device_caps *caps, const test_case *c)
{
    enum { E = 4, TOPK = 2, H = 256, I = 512, M = 5 };
    qs_linear_desc gate[E], up[E], down[E];
    layer_data lg[E], lu[E], ldn[E];
    for (int e = 0; e < E; e++) {
        make_layer(c, I, H, &gate[e], &lg[e]);
        make_layer(c, I, H, &up[e], &lu[e]);
        make_layer(c, H, I, &down[e], &ldn[e]);
    }
    qs_moe_desc md;
    memset(&md, 0, sizeof md);
    snprintf(md.name, sizeof md.name, "test.moe.%s", c->label);
    md.scheme = c->scheme;
    md.num_experts = E;
    md.top_k = TOPK;
    md.hidden = H;
    md.inter = I;
    md.gate = gate;
    md.up = up;
    md.down = down;
    char why[QS_REASON_MAX] = "";
    if (!qs_kernel_marlin_moe.is_supported(caps, why, sizeof why) ||
        !qs_kernel_marlin_moe.can_implement_moe(&md, why, sizeof why)) {
        printf("marlin-moe %-22s skipped: %s\n", c->label, why);
        g_skipped++;
        goto out;
    }
    {
        float x[M * H], wts[M * TOPK], y1[M * H], y2[M * H];
        int32_t ids[M * TOPK];
        for (int i = 0; i < M * H; i++)
            x[i] = frand() * 2.f;
        for (int t = 0; t < M; t++) {
            ids[t * TOPK] = t % E;
            ids[t * TOPK + 1] = (t + 1 + t / 2) % E;
            wts[t * TOPK] = 0.7f;
            wts[t * TOPK + 1] = 0.3f;
        }
        qs_err err = {{0}};
        void *s1 = NULL, *s2 = NULL, *dx = NULL, *dy = NULL, *did = NULL, *dw = NULL;
        int ok = qs_kernel_marlin_moe.prepare_moe(&md, &s1, &err) == 0 &&
                 qs_kernel_emulation_moe.prepare_moe(&md, &s2, &err) == 0 &&
                 qs_cuda_malloc(&dx, 2 * M * H, &err) == 0 && qs_cuda_malloc(&dy, 2 * M * H, &err) == 0 &&
                 qs_cuda_malloc(&did, sizeof ids, &err) == 0 && qs_cuda_malloc(&dw, sizeof wts, &err) == 0 &&
                 qs_cuda_upload_f32_as_bf16(dx, x, M * H, &err) == 0 &&
                 qs_cuda_memcpy_h2d(did, ids, sizeof ids, &err) == 0 &&
                 qs_cuda_memcpy_h2d(dw, wts, sizeof wts, &err) == 0 &&
                 qs_cuda_memset(dy, 0xFF, 2 * M * H, &err) == 0 &&
                 qs_kernel_marlin_moe.apply_moe(s1, dx, did, dw, dy, M, NULL, &err) == 0 &&
                 qs_cuda_download_bf16_as_f32(y1, dy, M * H, &err) == 0 &&
                 qs_cuda_memset(dy, 0xFF, 2 * M * H, &err) == 0 &&
                 qs_kernel_emulation_moe.apply_moe(s2, dx, did, dw, dy, M, NULL, &err) == 0 &&
                 qs_cuda_download_bf16_as_f32(y2, dy, M * H, &err) == 0;
        double num = 0, den = 0;
        int bad = 0;
        for (int i = 0; ok && i < M * H; i++) {
            if (!isfinite(y1[i]))
                bad++;
            num += (double)(y1[i] - y2[i]) * (y1[i] - y2[i]);
            den += (double)y2[i] * y2[i];
        }
        double rel = den > 0 ? sqrt(num / den) : 1;
        /* emulation quantizes W8A8/W4A4 activations; compare weight-only schemes tightly only. */
        double tol = c->aquant == QS_AQUANT_NONE ? 1e-2 : 2e-1;
        bool pass = ok && !bad && rel <= tol;
        printf("marlin-moe %-22s vs emulation rel %.2e (tol %.0e) %s%s%s\n", c->label, rel, tol, pass ? "ok" : "FAIL",
               ok ? "" : " error: ", ok ? "" : err.msg);
        pass ? g_passed++ : g_failed++;
        if (s1)
            qs_kernel_marlin_moe.release(s1);
        if (s2)
            qs_kernel_emulation_moe.release(s2);
        qs_cuda_free(dx);
        qs_cuda_free(dy);
        qs_cuda_free(did);
        qs_cuda_free(dw);
    }
out:
    for (int e = 0; e < E; e++)
        for (int i = 0; i < 3; i++) {
            free(lg[e].bufs[i]);
            free(lu[e].bufs[i]);
            free(ldn[e].bufs[i]);
        }
}

int main(int argc, char **argv)
{
    bool quick = argc > 1 && !strcmp(argv[1], "--quick");
    if (qs_cuda_device_count() == 0) {
        printf("skip: no CUDA device (%s)\n0 passed, 0 failed, 1 skipped\n", qs_cuda_unavailable_reason());
        return 0;
    }
    qs_device_caps caps;
    qs_err err;
    if (qs_cuda_device_caps(0, &caps, &err)) {
        printf("error: %s\n", err.msg);
        return 1;
    }
    printf("device: %s (sm_%d%d, %d SMs)\n", caps.name, caps.cc_major, caps.cc_minor, caps.sm_count);
    const qs_kernel *kern = &qs_kernel_marlin_linear;
    char why[QS_REASON_MAX] = "";
    if (!kern->is_supported(&caps, why, sizeof why)) {
        printf("skip: %s\n0 passed, 0 failed, 1 skipped\n", why);
        return 0;
    }
    for (size_t ci = 0; ci < sizeof CASES / sizeof CASES[0]; ci++)
        for (size_t si = 0; si < sizeof SHAPES / sizeof SHAPES[0]; si++) {
            if (quick && si < 4 && si != 1)
                continue;
            const test_case *c = &CASES[ci];
            int64_t n = SHAPES[si][0], k = SHAPES[si][1];
            qs_linear_desc d;
            layer_data ld;
            make_layer(c, n, k, &d, &ld);
            void *state = NULL;
            if (!kern->can_implement_linear(&d, why, sizeof why)) {
                printf("%-8s %-22s %6lld %6lld  skipped: %s\n", kern->name, c->label, (long long)n, (long long)k, why);
                g_skipped++;
            } else if (kern->prepare_linear(&d, &state, &err)) {
                printf("%-8s %-22s %6lld %6lld  FAIL prepare: %s\n", kern->name, c->label, (long long)n, (long long)k,
                       err.msg);
                g_failed++;
            } else {
                for (size_t mi = 0; mi < sizeof MS / sizeof MS[0]; mi++)
                    run_m(kern, state, &d, c, MS[mi]);
                kern->release(state);
            }
            for (int i = 0; i < 3; i++)
                free(ld.bufs[i]);
            fflush(stdout);
        }
    run_moe(&caps, &CASES[3]);
    run_moe(&caps, &CASES[5]);
    printf("%d passed, %d failed, %d skipped\n", g_passed, g_failed, g_skipped);
    return g_failed ? 1 : 0;
}
