/* test_reference_kernels.c — the CPU reference linear and MoE kernels: tiny hand-computed cases,
 * then every scheme and scale layout on random data (odd shapes, partial blocks) against a float64
 * dequantize-then-matmul written here from the format definitions, batch invariance, calibration
 * and error paths. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fp4.h"
#include "core/fp8.h"
#include "core/tensor.h"
#include "cpu/reference_kernels.h"

/* ---- helpers ---------------------------------------------------------------------------------- */

static qs_tensor *mk(const char *name, qs_dtype dt, int ndim, int64_t d0, int64_t d1, const void *data)
{
    qs_tensor *t = malloc(sizeof *t);
    qs_tensor_header(t, name, dt, ndim, d0, d1);
    t->data = data;
    t->file = "test";
    return t;
}

static uint64_t rng_state = 88172645463325252ull;
static double urand(void) /* [0, 1) */
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) / 9007199254740992.0;
}
static float nrand(void) { return (float)((urand() + urand() + urand() - 1.5) * 2.0); }

/* Independent decoders from the bit definitions (checkpoint-formats.md §5). */
static double e4m3_d(uint8_t b)
{
    int s = b >> 7, e = (b >> 3) & 15, m = b & 7;
    double v = e ? ldexp(1.0 + m / 8.0, e - 7) : ldexp(m / 8.0, -6);
    return s ? -v : v;
}
static double e2m1_d(uint8_t c)
{
    int s = (c >> 3) & 1, e = (c >> 1) & 3, m = c & 1;
    double v = e ? ldexp(1.0 + m / 2.0, e - 1) : m * 0.5;
    return s ? -v : v;
}

static float run_linear(const qs_linear_desc *d, const float *x, float *y, int64_t m)
{
    const qs_kernel *k = &qs_kernel_reference_linear;
    char why[QS_REASON_MAX];
    assert_int_equal(k->can_implement_linear(d, why, sizeof why), 1);
    void *st = NULL;
    qs_err err;
    int rc = k->prepare_linear(d, &st, &err);
    if (rc)
        fail_msg("prepare: %s", err.msg);
    rc = k->apply_linear(st, x, y, m, NULL, &err);
    if (rc)
        fail_msg("apply: %s", err.msg);
    k->release(st);
    return 0;
}

/* Activation quantize-dequantize in double, from the definitions. */
static void act_qdq_d(const qs_linear_desc *d, const float *x, double *out, int64_t m)
{
    int64_t k = d->k;
    for (int64_t i = 0; i < m; i++) {
        const float *xr = x + i * k;
        double *o = out + i * k;
        if (d->aquant == QS_AQUANT_NONE) {
            for (int64_t c = 0; c < k; c++)
                o[c] = xr[c];
        } else if (d->aquant == QS_AQUANT_NVFP4) {
            float g = 1.0f / d->input_scale;
            for (int64_t b = 0; b < k; b += 16) {
                float amax = 0;
                for (int c = 0; c < 16; c++)
                    amax = fmaxf(amax, fabsf(xr[b + c]));
                uint8_t sc = qs_f32_to_e4m3(g * (amax / 6.0f));
                float sb = (float)e4m3_d(sc), inv = sb > 0 ? 1.0f / (sb * (1.0f / g)) : 0.0f;
                for (int c = 0; c < 16; c++)
                    o[b + c] = e2m1_d(qs_f32_to_e2m1(xr[b + c] * inv)) * sb * d->input_scale;
            }
        } else {
            int64_t gsz = d->aquant == QS_AQUANT_DYNAMIC_GROUP ? d->act_group_size : k;
            for (int64_t c0 = 0; c0 < k; c0 += gsz) {
                int64_t len = k - c0 < gsz ? k - c0 : gsz;
                float s;
                if (d->aquant == QS_AQUANT_STATIC_TENSOR) {
                    s = d->input_scale;
                } else if (d->aquant == QS_AQUANT_DYNAMIC_TENSOR) {
                    float a = 0;
                    for (int64_t t = 0; t < m * k; t++)
                        a = fmaxf(a, fabsf(x[t]));
                    s = a / 448.0f;
                } else {
                    float a = 0;
                    for (int64_t c = 0; c < len; c++)
                        a = fmaxf(a, fabsf(xr[c0 + c]));
                    s = a / 448.0f;
                }
                float inv = 1.0f / s;
                for (int64_t c = 0; c < len; c++)
                    o[c0 + c] = s > 0 ? e4m3_d(qs_f32_to_e4m3(xr[c0 + c] * inv)) * s : 0.0;
            }
        }
    }
}

/* Weight element (r, c) in double, from the desc's tensors. */
static double weight_d(const qs_linear_desc *d, int64_t r, int64_t c)
{
    const qs_tensor *w = d->weight, *s = d->weight_scale;
    switch (d->scheme) {
    case QS_SCHEME_BF16:
        return qs_tensor_get_f32(w, r * d->k + c);
    case QS_SCHEME_NVFP4_W4A4:
    case QS_SCHEME_NVFP4_W4A16: {
        uint8_t byte = ((const uint8_t *)w->data)[r * (d->k / 2) + c / 2];
        uint8_t code = (c & 1) ? byte >> 4 : byte & 15;
        double bs = e4m3_d(((const uint8_t *)s->data)[r * (d->k / 16) + c / 16]);
        return e2m1_d(code) * bs * d->weight_global_scale;
    }
    default: {
        double q = e4m3_d(((const uint8_t *)w->data)[r * d->k + c]);
        const float *sc = s->data;
        if (d->wscale == QS_WSCALE_TENSOR)
            return q * sc[0];
        if (d->wscale == QS_WSCALE_CHANNEL)
            return q * sc[r];
        int64_t nbk = (d->k + d->block_k - 1) / d->block_k;
        return q * sc[(r / d->block_n) * nbk + c / d->block_k];
    }
    }
}

static void check_against_f64(const qs_linear_desc *d, const float *x, const float *y, int64_t m)
{
    double *xq = malloc((size_t)(m * d->k) * sizeof *xq);
    act_qdq_d(d, x, xq, m);
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < d->n; j++) {
            double ref = 0, mag = 0;
            for (int64_t c = 0; c < d->k; c++) {
                double w = weight_d(d, j, c);
                ref += xq[i * d->k + c] * w;
                mag += fabs(xq[i * d->k + c] * w);
            }
            if (d->bias)
                ref += qs_tensor_get_f32(d->bias, j);
            double tol = 2e-6 * mag + 1e-6;
            if (fabs(y[i * d->n + j] - ref) > tol)
                fail_msg("%s %s: y[%lld][%lld] = %.9g, float64 reference %.9g (tol %.3g)", qs_scheme_name(d->scheme),
                         qs_act_quant_name(d->aquant), (long long)i, (long long)j, (double)y[i * d->n + j], ref, tol);
        }
    free(xq);
}

/* ---- hand-computed cases ----------------------------------------------------------------------- */

static void bf16_with_bias_by_hand(void **state)
{
    float w[6] = {1, 2, 3, -1, 0.5f, 0}, b[2] = {10, -10}, x[6] = {1, 1, 1, 2, 0, -1}, y[4];
    qs_linear_desc d = {.name = "t", .scheme = QS_SCHEME_BF16, .n = 2, .k = 3};
    d.weight = mk("t.weight", QS_DT_F32, 2, 2, 3, w);
    d.bias = mk("t.bias", QS_DT_F32, 1, 2, 0, b);
    run_linear(&d, x, y, 2);
    float want[4] = {16, -10.5f, 9, -12};
    for (int i = 0; i < 4; i++)
        assert_true(y[i] == want[i]);
    free((void *)d.weight);
    free((void *)d.bias);
}

static void fp8_per_tensor_dynamic_token_by_hand(void **state)
{
    /* W = [[1, 2], [-1, 0.5]] * 0.5; x = [1, 2] quantizes exactly (scale 2/448: codes 224, 448) */
    uint8_t w[4] = {0x38, 0x40, 0xB8, 0x30};
    float s = 0.5f, x[2] = {1, 2}, y[2];
    qs_linear_desc d = {.name = "t", .scheme = QS_SCHEME_FP8_W8A8, .n = 2, .k = 2, .wscale = QS_WSCALE_TENSOR,
                        .aquant = QS_AQUANT_DYNAMIC_TOKEN, .weight_global_scale = 1};
    d.weight = mk("t.weight", QS_DT_F8_E4M3, 2, 2, 2, w);
    d.weight_scale = mk("t.weight_scale", QS_DT_F32, 0, 0, 0, &s);
    run_linear(&d, x, y, 1);
    assert_true(fabsf(y[0] - 2.5f) < 1e-6f);
    assert_true(fabsf(y[1] - 0.0f) < 1e-6f);
    free((void *)d.weight);
    free((void *)d.weight_scale);
}

static void fp8_static_input_scale_rounds_activations(void **state)
{
    /* input_scale 0.01: 1/0.01 = 100 -> E4M3 96 (tie to even), 3/0.01 = 300 -> 288 */
    uint8_t w[4] = {0x38, 0x00, 0x00, 0x38};
    float s = 1.0f, x[2] = {1, 3}, y[2];
    qs_linear_desc d = {.name = "t", .scheme = QS_SCHEME_FP8_W8A8, .n = 2, .k = 2, .wscale = QS_WSCALE_TENSOR,
                        .aquant = QS_AQUANT_STATIC_TENSOR, .input_scale = 0.01f, .weight_global_scale = 1};
    d.weight = mk("t.weight", QS_DT_F8_E4M3, 2, 2, 2, w);
    d.weight_scale = mk("t.weight_scale", QS_DT_F32, 1, 1, 0, &s);
    run_linear(&d, x, y, 1);
    assert_true(fabsf(y[0] - 0.96f) < 1e-6f);
    assert_true(fabsf(y[1] - 2.88f) < 1e-6f);
    free((void *)d.weight);
    free((void *)d.weight_scale);
}

static void nvfp4_w4a16_by_hand(void **state)
{
    /* one row of 16: codes 2 (1.0), 4 (2.0), 7 (6.0), 9 (-0.5), rest 0; block scale 1.0, global 0.5 */
    uint8_t codes[16] = {2, 4, 7, 9}, packed[8];
    qs_fp4_pack(codes, 16, packed);
    uint8_t bs = 0x38;
    float x[16], y;
    for (int i = 0; i < 16; i++)
        x[i] = 1.0f;
    x[2] = 2.0f;
    qs_linear_desc d = {.name = "t", .scheme = QS_SCHEME_NVFP4_W4A16, .n = 1, .k = 16, .wscale = QS_WSCALE_NVFP4,
                        .aquant = QS_AQUANT_NONE, .weight_global_scale = 0.5f};
    d.weight = mk("t.weight", QS_DT_U8, 2, 1, 8, packed);
    d.weight_scale = mk("t.weight_scale", QS_DT_F8_E4M3, 2, 1, 1, &bs);
    run_linear(&d, x, &y, 1);
    assert_true(y == (1.0f + 2.0f + 12.0f - 0.5f) * 0.5f);
    free((void *)d.weight);
    free((void *)d.weight_scale);
}

/* ---- random cases against float64 ---------------------------------------------------------------- */

typedef struct {
    qs_scheme scheme;
    qs_weight_scale_layout wscale;
    qs_act_quant aquant;
    qs_dtype wdtype;       /* bf16 scheme: F32 / BF16 / F16 */
    int64_t m, n, k;
    int block, group;
    bool bias;
} rcase;

static void run_random_case(const rcase *rc)
{
    int64_t m = rc->m, n = rc->n, k = rc->k;
    qs_linear_desc d = {.name = "layer", .scheme = rc->scheme, .n = n, .k = k, .wscale = rc->wscale,
                        .aquant = rc->aquant, .act_group_size = rc->group, .block_n = rc->block,
                        .block_k = rc->block, .weight_global_scale = 1.0f};
    void *wdata = NULL, *sdata = NULL;
    if (rc->scheme == QS_SCHEME_BF16) {
        int bytes = qs_dtype_bits(rc->wdtype) / 8;
        wdata = malloc((size_t)(n * k * bytes));
        for (int64_t i = 0; i < n * k; i++) {
            float v = nrand() * 0.1f;
            if (rc->wdtype == QS_DT_F32)
                ((float *)wdata)[i] = v;
            else if (rc->wdtype == QS_DT_BF16)
                ((uint16_t *)wdata)[i] = qs_f32_to_bf16(v);
            else
                ((uint16_t *)wdata)[i] = qs_f32_to_f16(v);
        }
        d.weight = mk("layer.weight", rc->wdtype, 2, n, k, wdata);
    } else if (qs_scheme_is_nvfp4(rc->scheme)) {
        wdata = malloc((size_t)(n * k / 2));
        for (int64_t i = 0; i < n * k / 2; i++)
            ((uint8_t *)wdata)[i] = (uint8_t)(urand() * 256);
        sdata = malloc((size_t)(n * k / 16));
        for (int64_t i = 0; i < n * k / 16; i++)
            ((uint8_t *)sdata)[i] = qs_f32_to_e4m3((float)(urand() * 400 + 1));
        d.weight = mk("layer.weight", QS_DT_U8, 2, n, k / 2, wdata);
        d.weight_scale = mk("layer.weight_scale", QS_DT_F8_E4M3, 2, n, k / 16, sdata);
        d.weight_global_scale = 3.1e-4f;
        d.input_scale = 2.0f / (6 * 448);
    } else {
        wdata = malloc((size_t)(n * k));
        for (int64_t i = 0; i < n * k; i++) {
            uint8_t b = (uint8_t)(urand() * 256);
            ((uint8_t *)wdata)[i] = (b & 0x7F) == 0x7F ? 0x7E : b;
        }
        int64_t ns = rc->wscale == QS_WSCALE_TENSOR ? 1 : rc->wscale == QS_WSCALE_CHANNEL ? n
                     : ((n + rc->block - 1) / rc->block) * ((k + rc->block - 1) / rc->block);
        sdata = malloc((size_t)ns * sizeof(float));
        for (int64_t i = 0; i < ns; i++)
            ((float *)sdata)[i] = (float)(urand() * 1e-3 + 1e-4);
        d.weight = mk("layer.weight", QS_DT_F8_E4M3, 2, n, k, wdata);
        if (rc->wscale == QS_WSCALE_BLOCK)
            d.weight_scale = mk("layer.weight_scale", QS_DT_F32, 2, (n + rc->block - 1) / rc->block,
                                (k + rc->block - 1) / rc->block, sdata);
        else
            d.weight_scale = mk("layer.weight_scale", QS_DT_F32, 1, ns, 0, sdata);
        d.input_scale = 3.0f / 448;
    }
    float *bias = NULL;
    if (rc->bias) {
        bias = malloc((size_t)n * sizeof *bias);
        for (int64_t j = 0; j < n; j++)
            bias[j] = nrand();
        d.bias = mk("layer.bias", QS_DT_F32, 1, n, 0, bias);
    }
    float *x = malloc((size_t)(m * k) * sizeof *x), *y = malloc((size_t)(m * n) * sizeof *y);
    for (int64_t i = 0; i < m * k; i++)
        x[i] = nrand();
    x[0] = 9.0f; /* beyond the static scale's range: saturates */
    run_linear(&d, x, y, m);
    check_against_f64(&d, x, y, m);
    /* batch invariance: the last row alone gives bit-identical output (not for per-tensor dynamic) */
    if (rc->aquant != QS_AQUANT_DYNAMIC_TENSOR) {
        float *y1 = malloc((size_t)n * sizeof *y1);
        run_linear(&d, x + (m - 1) * k, y1, 1);
        assert_memory_equal(y1, y + (m - 1) * n, (size_t)n * sizeof *y1);
        free(y1);
    }
    free(x);
    free(y);
    free(bias);
    free(wdata);
    free(sdata);
    free((void *)d.weight);
    free((void *)d.weight_scale);
    free((void *)d.bias);
}

static void every_scheme_matches_float64(void **state)
{
    const rcase cases[] = {
        {QS_SCHEME_BF16, QS_WSCALE_NONE, QS_AQUANT_NONE, QS_DT_F32, 3, 37, 67, 0, 0, true},
        {QS_SCHEME_BF16, QS_WSCALE_NONE, QS_AQUANT_NONE, QS_DT_BF16, 5, 33, 129, 0, 0, false},
        {QS_SCHEME_BF16, QS_WSCALE_NONE, QS_AQUANT_NONE, QS_DT_F16, 2, 9, 31, 0, 0, false},
        {QS_SCHEME_FP8_W8A8, QS_WSCALE_TENSOR, QS_AQUANT_STATIC_TENSOR, 0, 4, 29, 71, 0, 0, true},
        {QS_SCHEME_FP8_W8A8, QS_WSCALE_TENSOR, QS_AQUANT_DYNAMIC_TENSOR, 0, 4, 29, 71, 0, 0, false},
        {QS_SCHEME_FP8_W8A8, QS_WSCALE_CHANNEL, QS_AQUANT_DYNAMIC_TOKEN, 0, 7, 41, 53, 0, 0, false},
        {QS_SCHEME_FP8_W8A8, QS_WSCALE_CHANNEL, QS_AQUANT_STATIC_TENSOR, 0, 3, 17, 64, 0, 0, false},
        {QS_SCHEME_FP8_BLOCK_W8A8, QS_WSCALE_BLOCK, QS_AQUANT_DYNAMIC_GROUP, 0, 3, 45, 70, 16, 16, true},
        {QS_SCHEME_FP8_BLOCK_W8A8, QS_WSCALE_BLOCK, QS_AQUANT_DYNAMIC_GROUP, 0, 2, 130, 300, 128, 128, false},
        {QS_SCHEME_W8A16_FP8, QS_WSCALE_CHANNEL, QS_AQUANT_NONE, 0, 3, 23, 51, 0, 0, false},
        {QS_SCHEME_W8A16_FP8, QS_WSCALE_BLOCK, QS_AQUANT_NONE, 0, 3, 23, 51, 8, 0, false},
        {QS_SCHEME_W8A16_FP8, QS_WSCALE_TENSOR, QS_AQUANT_NONE, 0, 1, 5, 3, 0, 0, false},
        {QS_SCHEME_NVFP4_W4A4, QS_WSCALE_NVFP4, QS_AQUANT_NVFP4, 0, 5, 19, 80, 0, 0, true},
        {QS_SCHEME_NVFP4_W4A16, QS_WSCALE_NVFP4, QS_AQUANT_NONE, 0, 6, 21, 48, 0, 0, false},
        {QS_SCHEME_NVFP4_W4A16, QS_WSCALE_NVFP4, QS_AQUANT_NONE, 0, 1, 1, 16, 0, 0, false},
        /* enough rows that m changes how rows are split over threads and four-row tiles */
        {QS_SCHEME_FP8_W8A8, QS_WSCALE_CHANNEL, QS_AQUANT_DYNAMIC_TOKEN, 0, 7, 301, 64, 0, 0, false},
        {QS_SCHEME_BF16, QS_WSCALE_NONE, QS_AQUANT_NONE, QS_DT_BF16, 9, 203, 72, 0, 0, true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_random_case(&cases[i]);
}

/* ---- MoE ---------------------------------------------------------------------------------------- */

static void moe_matches_per_token_float64(void **state)
{
    enum { E = 4, TOPK = 2, H = 32, I = 48, M = 5 };
    qs_linear_desc g[E], u[E], dn[E];
    uint8_t *wbuf[E][3];
    float scales[E][3][H > I ? H : I];
    qs_linear_desc *descs[3] = {g, u, dn};
    for (int e = 0; e < E; e++)
        for (int p = 0; p < 3; p++) {
            int64_t n = p == 2 ? H : I, k = p == 2 ? I : H;
            qs_linear_desc *d = &descs[p][e];
            *d = (qs_linear_desc){.scheme = QS_SCHEME_FP8_W8A8, .n = n, .k = k, .wscale = QS_WSCALE_CHANNEL,
                                  .aquant = QS_AQUANT_DYNAMIC_TOKEN, .weight_global_scale = 1};
            snprintf(d->name, sizeof d->name, "mlp.experts.%d.p%d", e, p);
            wbuf[e][p] = malloc((size_t)(n * k));
            for (int64_t i = 0; i < n * k; i++)
                wbuf[e][p][i] = qs_f32_to_e4m3(nrand() * 100);
            for (int64_t r = 0; r < n; r++)
                scales[e][p][r] = (float)(urand() * 1e-3 + 1e-3);
            d->weight = mk("w", QS_DT_F8_E4M3, 2, n, k, wbuf[e][p]);
            d->weight_scale = mk("s", QS_DT_F32, 2, n, 1, scales[e][p]);
        }
    qs_moe_desc md = {.name = "mlp.experts", .scheme = QS_SCHEME_FP8_W8A8, .num_experts = E, .top_k = TOPK,
                      .hidden = H, .inter = I, .gate = g, .up = u, .down = dn};
    float x[M * H], y[M * H], w[M * TOPK];
    int32_t ids[M * TOPK] = {0, 3, 1, 0, 2, 3, 3, 1, 0, 2};
    for (int i = 0; i < M * H; i++)
        x[i] = nrand();
    for (int i = 0; i < M * TOPK; i++)
        w[i] = (float)urand();
    const qs_kernel *k = &qs_kernel_reference_moe;
    char why[QS_REASON_MAX];
    assert_int_equal(k->can_implement_moe(&md, why, sizeof why), 1);
    void *st;
    qs_err err;
    assert_int_equal(k->prepare_moe(&md, &st, &err), 0);
    qs_reference_calibration_begin();
    assert_int_equal(k->apply_moe(st, x, ids, w, y, M, NULL, &err), 0);
    qs_reference_calibration_end();
    /* expected, token by token, in float64 */
    for (int t = 0; t < M; t++) {
        double out[H] = {0};
        for (int j = 0; j < TOPK; j++) {
            int e = ids[t * TOPK + j];
            double xg[H], hg[I], gv[I], uv[I];
            act_qdq_d(&g[e], x + t * H, xg, 1);
            for (int r = 0; r < I; r++) {
                gv[r] = uv[r] = 0;
                for (int c = 0; c < H; c++) {
                    gv[r] += xg[c] * weight_d(&g[e], r, c);
                    uv[r] += xg[c] * weight_d(&u[e], r, c);
                }
            }
            float hf[I];
            for (int r = 0; r < I; r++)
                hf[r] = (float)(gv[r] / (1 + exp(-gv[r])) * uv[r]);
            act_qdq_d(&dn[e], hf, hg, 1);
            for (int r = 0; r < H; r++) {
                double acc = 0;
                for (int c = 0; c < I; c++)
                    acc += hg[c] * weight_d(&dn[e], r, c);
                out[r] += w[t * TOPK + j] * acc;
            }
        }
        for (int r = 0; r < H; r++)
            if (fabs(y[t * H + r] - out[r]) > 1e-3 * (fabs(out[r]) + 1e-2))
                fail_msg("moe y[%d][%d] = %g, float64 %g", t, r, (double)y[t * H + r], out[r]);
    }
    /* calibration saw the expert inputs */
    float amax = 0;
    for (int i = 0; i < M * H; i++)
        if (ids[(i / H) * TOPK] == 0 || ids[(i / H) * TOPK + 1] == 0)
            amax = fmaxf(amax, fabsf(x[i]));
    assert_true(qs_reference_calibration_amax("mlp.experts.0.p0") == amax);
    assert_true(qs_reference_calibration_amax("never.ran") < 0);
    qs_reference_calibration_clear();
    /* expert parallelism, this rank holding experts 0 and 1 (ops->moe_expert_slice): the other
     * slots are id -1, weight 0; no expert runs them, and a token with none of its experts here
     * gets exactly 0 */
    for (int i = 0; i < M * TOPK; i++)
        if (ids[i] > 1) {
            ids[i] = -1;
            w[i] = 0;
        }
    for (int i = 0; i < M * H; i++)
        y[i] = NAN;
    qs_reference_calibration_begin();
    assert_int_equal(k->apply_moe(st, x, ids, w, y, M, NULL, &err), 0);
    qs_reference_calibration_end();
    assert_true(qs_reference_calibration_amax("mlp.experts.2.p0") < 0);
    assert_true(qs_reference_calibration_amax("mlp.experts.3.p0") < 0);
    assert_true(qs_reference_calibration_amax("mlp.experts.0.p0") > 0);
    for (int r = 0; r < H; r++) /* token 2 routed to experts 2 and 3 only */
        assert_true(y[2 * H + r] == 0.0f);
    for (int i = 0; i < M * H; i++)
        assert_false(isnan(y[i]));
    qs_reference_calibration_clear();
    /* out-of-range expert id: an error, not a crash */
    ids[3] = 9;
    assert_int_equal(k->apply_moe(st, x, ids, w, y, M, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "topk_ids[1][1] = 9"));
    k->release(st);
    for (int e = 0; e < E; e++)
        for (int p = 0; p < 3; p++) {
            free(wbuf[e][p]);
            free((void *)descs[p][e].weight);
            free((void *)descs[p][e].weight_scale);
        }
}

static void prepare_without_data_is_an_error(void **state)
{
    qs_linear_desc d = {.name = "model.layers.0.mlp.up_proj", .scheme = QS_SCHEME_BF16, .n = 4, .k = 4};
    d.weight = mk("model.layers.0.mlp.up_proj.weight", QS_DT_BF16, 2, 4, 4, NULL);
    void *st = NULL;
    qs_err err;
    assert_int_equal(qs_kernel_reference_linear.prepare_linear(&d, &st, &err), -1);
    assert_non_null(strstr(err.msg, "model.layers.0.mlp.up_proj.weight"));
    char why[QS_REASON_MAX];
    qs_device_caps gpu = {.platform = QS_PLATFORM_CUDA, .name = "NVIDIA H200"};
    assert_int_equal(qs_kernel_reference_linear.is_supported(&gpu, why, sizeof why), 0);
    assert_non_null(strstr(why, "CPU"));
    d.scheme = QS_SCHEME_NVFP4_W4A4;
    assert_int_equal(qs_kernel_reference_linear.can_implement_linear(&d, why, sizeof why), 0);
    free((void *)d.weight);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bf16_with_bias_by_hand),
        cmocka_unit_test(fp8_per_tensor_dynamic_token_by_hand),
        cmocka_unit_test(fp8_static_input_scale_rounds_activations),
        cmocka_unit_test(nvfp4_w4a16_by_hand),
        cmocka_unit_test(every_scheme_matches_float64),
        cmocka_unit_test(moe_matches_per_token_float64),
        cmocka_unit_test(prepare_without_data_is_an_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
