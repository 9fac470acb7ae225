/* reference_linear.c — the CPU `reference` linear kernel (see reference_kernels.h).
 * prepare copies the weights in their compact checkpoint form (BF16 halves, FP8 bytes, packed FP4;
 * F16 and F32 become F32) and turns every scale into float once: FP8 per-tensor/per-channel
 * into one scale per row, FP8 blocks into a float grid, NVFP4 E4M3 block scales pre-multiplied by
 * the global scale. apply quantizes the activations as the scheme says, then splits the output
 * rows over the thread pool; each thread decodes four weight rows at a time into float (a table
 * lookup per element) and takes fixed-order dot products with every activation row. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fp4.h"
#include "core/fp8.h"
#include "core/scheme.h"
#include "cpu/reference_kernels.h"
#include "cpu/reference_linear_impl.h"
#include "util/parallel.h"

#define TILE_ROWS 4

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

int qs_ref_linear_check(const qs_linear_desc *d, char *why, size_t cap)
{
    if (!d->weight) {
        snprintf(why, cap, "layer %s has no weight tensor", d->name);
        return 0;
    }
    if ((int)d->scheme < 0 || d->scheme >= QS_SCHEME_COUNT) {
        snprintf(why, cap, "layer %s has an unknown scheme", d->name);
        return 0;
    }
    qs_dtype dt = d->weight->dtype;
    bool fp8 = qs_scheme_is_fp8(d->scheme), fp4 = qs_scheme_is_nvfp4(d->scheme);
    if (d->scheme == QS_SCHEME_BF16 && dt != QS_DT_F32 && dt != QS_DT_BF16 && dt != QS_DT_F16) {
        snprintf(why, cap, "layer %s: bf16 scheme with %s weights", d->name, qs_dtype_name(dt));
        return 0;
    }
    if ((fp8 && dt != QS_DT_F8_E4M3) || (fp4 && dt != QS_DT_U8)) {
        snprintf(why, cap, "layer %s: scheme %s does not match %s weights", d->name, qs_scheme_name(d->scheme),
                 qs_dtype_name(dt));
        return 0;
    }
    if ((fp8 || fp4) && !d->weight_scale) {
        snprintf(why, cap, "layer %s: scheme %s needs a weight scale", d->name, qs_scheme_name(d->scheme));
        return 0;
    }
    if (fp4 && (d->k % QS_NVFP4_GROUP || d->wscale != QS_WSCALE_NVFP4)) {
        snprintf(why, cap, "layer %s: NVFP4 needs in_features (%lld) a multiple of 16 and E4M3 per-16 scales",
                 d->name, (long long)d->k);
        return 0;
    }
    if (fp8 && d->wscale == QS_WSCALE_BLOCK && (d->block_n <= 0 || d->block_k <= 0)) {
        snprintf(why, cap, "layer %s: block scale without block sizes", d->name);
        return 0;
    }
    if (d->aquant == QS_AQUANT_DYNAMIC_GROUP && d->act_group_size <= 0) {
        snprintf(why, cap, "layer %s: grouped activation quantization without a group size", d->name);
        return 0;
    }
    return 1;
}

static int fail_no_data(const qs_tensor *t, qs_err *err)
{
    return qs_errf(err, "tensor %s has no data (checkpoint opened headers-only?)", t->name);
}

int qs_ref_linear_init(qs_ref_linear *L, const qs_linear_desc *d, qs_err *err)
{
    memset(L, 0, sizeof *L);
    char why[QS_REASON_MAX];
    if (!qs_ref_linear_check(d, why, sizeof why))
        return qs_errf(err, "reference linear: %s", why);
    snprintf(L->name, sizeof L->name, "%s", d->name);
    L->scheme = d->scheme;
    L->n = d->n;
    L->k = d->k;
    L->aquant = d->aquant;
    L->act_group_size = d->act_group_size;
    L->input_scale = d->input_scale;
    L->block_n = d->block_n;
    L->block_k = d->block_k;
    const qs_tensor *w = d->weight;
    if (!w->data)
        return fail_no_data(w, err);
    if ((L->aquant == QS_AQUANT_STATIC_TENSOR || L->aquant == QS_AQUANT_NVFP4) && !(L->input_scale > 0.0f))
        return qs_errf(err, "layer %s: input scale %g must be positive", d->name, (double)L->input_scale);
    int64_t nk = d->n * d->k;
    size_t need;
    switch (w->dtype) {
    case QS_DT_F32: case QS_DT_F16: L->wfmt = QS_REFW_F32; need = (size_t)nk * 4; break;
    case QS_DT_BF16: L->wfmt = QS_REFW_BF16; need = (size_t)nk * 2; break;
    case QS_DT_F8_E4M3: L->wfmt = QS_REFW_FP8; need = (size_t)nk; break;
    default: L->wfmt = QS_REFW_FP4; need = (size_t)(nk / 2); break;
    }
    size_t src_bytes = w->dtype == QS_DT_F16 ? (size_t)nk * 2 : need;
    if (w->nbytes < src_bytes)
        return qs_errf(err, "tensor %s: %zu bytes, layer %s needs %zu", w->name, w->nbytes, d->name, src_bytes);
    L->w = malloc(need ? need : 1);
    if (!L->w)
        goto oom;
    if (w->dtype == QS_DT_F16) {
        float *dst = L->w;
        for (int64_t i = 0; i < nk; i++)
            dst[i] = qs_tensor_get_f32(w, i);
    } else {
        memcpy(L->w, w->data, need);
    }
    const qs_tensor *s = d->weight_scale;
    if (s && !s->data)
        return qs_ref_linear_destroy(L), fail_no_data(s, err);
    if (L->wfmt == QS_REFW_FP8) {
        if (d->wscale == QS_WSCALE_BLOCK) {
            int64_t cells = cdiv(d->n, d->block_n) * cdiv(d->k, d->block_k);
            if (s->numel != cells)
                return qs_ref_linear_destroy(L), qs_errf(err, "tensor %s: %lld block scales, layer %s needs %lld",
                                                         s->name, (long long)s->numel, d->name, (long long)cells);
            L->block_scale = malloc((size_t)cells * sizeof(float));
            if (!L->block_scale)
                goto oom;
            for (int64_t i = 0; i < cells; i++)
                L->block_scale[i] = qs_scale_get(s, i);
        } else {
            bool per_row = d->wscale == QS_WSCALE_CHANNEL;
            if (per_row ? s->numel != d->n : s->numel != 1)
                return qs_ref_linear_destroy(L), qs_errf(err, "tensor %s: %lld scales for a %s scale of layer %s",
                                                         s->name, (long long)s->numel,
                                                         qs_weight_scale_layout_name(d->wscale), d->name);
            L->row_scale = malloc((size_t)d->n * sizeof(float));
            if (!L->row_scale)
                goto oom;
            for (int64_t r = 0; r < d->n; r++)
                L->row_scale[r] = qs_scale_get(s, per_row ? r : 0);
        }
    } else if (L->wfmt == QS_REFW_FP4) {
        int64_t cells = d->n * (d->k / QS_NVFP4_GROUP);
        if (s->numel != cells)
            return qs_ref_linear_destroy(L), qs_errf(err, "tensor %s: %lld block scales, layer %s needs %lld", s->name,
                                                     (long long)s->numel, d->name, (long long)cells);
        if (!(d->weight_global_scale > 0.0f))
            return qs_ref_linear_destroy(L), qs_errf(err, "layer %s: NVFP4 global scale %g must be positive", d->name,
                                                     (double)d->weight_global_scale);
        L->block_scale = malloc((size_t)cells * sizeof(float));
        if (!L->block_scale)
            goto oom;
        for (int64_t i = 0; i < cells; i++)
            L->block_scale[i] = qs_scale_get(s, i) * d->weight_global_scale;
    }
    if (d->bias) {
        if (!d->bias->data)
            return qs_ref_linear_destroy(L), fail_no_data(d->bias, err);
        L->bias = malloc((size_t)d->n * sizeof(float));
        if (!L->bias)
            goto oom;
        for (int64_t r = 0; r < d->n; r++)
            L->bias[r] = qs_tensor_get_f32(d->bias, r);
    }
    return 0;
oom:
    qs_ref_linear_destroy(L);
    return qs_errf(err, "layer %s: out of memory preparing reference weights", d->name);
}

void qs_ref_linear_destroy(qs_ref_linear *L)
{
    free(L->w);
    free(L->row_scale);
    free(L->block_scale);
    free(L->bias);
    L->w = L->row_scale = L->block_scale = L->bias = NULL;
}

void qs_ref_decode_row(const qs_ref_linear *L, int64_t j, float *out)
{
    int64_t k = L->k;
    switch (L->wfmt) {
    case QS_REFW_F32:
        memcpy(out, (const float *)L->w + j * k, (size_t)k * sizeof *out);
        return;
    case QS_REFW_BF16: {
        const uint16_t *src = (const uint16_t *)L->w + j * k;
        for (int64_t c = 0; c < k; c++) {
            uint32_t bits = (uint32_t)src[c] << 16;
            memcpy(&out[c], &bits, 4);
        }
        return;
    }
    case QS_REFW_FP8: {
        const float *lut = qs_e4m3_table();
        const uint8_t *q = (const uint8_t *)L->w + j * k;
        if (L->row_scale) {
            float s = L->row_scale[j];
            for (int64_t c = 0; c < k; c++)
                out[c] = lut[q[c]] * s;
        } else {
            const float *grid = L->block_scale + (j / L->block_n) * cdiv(k, L->block_k);
            for (int64_t c0 = 0; c0 < k; c0 += L->block_k) {
                float s = grid[c0 / L->block_k];
                int64_t end = c0 + L->block_k < k ? c0 + L->block_k : k;
                for (int64_t c = c0; c < end; c++)
                    out[c] = lut[q[c]] * s;
            }
        }
        return;
    }
    case QS_REFW_FP4: {
        const uint8_t *p = (const uint8_t *)L->w + j * (k / 2);
        const float *bs = L->block_scale + j * (k / QS_NVFP4_GROUP);
        for (int64_t g = 0; g < k / QS_NVFP4_GROUP; g++) {
            float s = bs[g];
            for (int t = 0; t < QS_NVFP4_GROUP / 2; t++) {
                uint8_t b = p[g * 8 + t];
                out[g * 16 + 2 * t] = qs_e2m1_values[b & 0xF] * s;
                out[g * 16 + 2 * t + 1] = qs_e2m1_values[b >> 4] * s;
            }
        }
        return;
    }
    }
}

/* Fixed-order dot products: eight interleaved partial sums (lane t sums the products of columns
 * t, t+8, t+16, ...), combined pairwise, then the tail. The order depends on k only, never on m
 * or the thread count. GCC/clang vector extensions hold the eight sums in two 4-float vectors
 * (SSE on any x86-64), which is the same arithmetic lane by lane as the scalar definition. */
typedef float qs_v4 __attribute__((vector_size(16)));

static inline qs_v4 load4(const float *p)
{
    qs_v4 v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline float finish(qs_v4 lo, qs_v4 hi, float tail)
{
    return (((lo[0] + hi[0]) + (lo[1] + hi[1])) + ((lo[2] + hi[2]) + (lo[3] + hi[3]))) + tail;
}

static inline float dot(const float *restrict a, const float *restrict b, int64_t k)
{
    qs_v4 lo = {0, 0, 0, 0}, hi = {0, 0, 0, 0};
    int64_t c = 0;
    for (; c + 8 <= k; c += 8) {
        lo += load4(a + c) * load4(b + c);
        hi += load4(a + c + 4) * load4(b + c + 4);
    }
    float tail = 0.0f;
    for (; c < k; c++)
        tail += a[c] * b[c];
    return finish(lo, hi, tail);
}

/* Four of them against one activation row, each with exactly dot()'s arithmetic, so a row's
 * result is bitwise the same whichever path computes it; x is loaded once for four rows. */
static inline void dot4(const float *restrict a, const float *const w[TILE_ROWS], int64_t k, float out[TILE_ROWS])
{
    qs_v4 lo[TILE_ROWS], hi[TILE_ROWS];
    for (int r = 0; r < TILE_ROWS; r++)
        lo[r] = hi[r] = (qs_v4){0, 0, 0, 0};
    int64_t c = 0;
    for (; c + 8 <= k; c += 8) {
        qs_v4 xa = load4(a + c), xb = load4(a + c + 4);
        for (int r = 0; r < TILE_ROWS; r++) {
            lo[r] += xa * load4(w[r] + c);
            hi[r] += xb * load4(w[r] + c + 4);
        }
    }
    for (int r = 0; r < TILE_ROWS; r++) {
        float tail = 0.0f;
        for (int64_t cc = c; cc < k; cc++)
            tail += a[cc] * w[r][cc];
        out[r] = finish(lo[r], hi[r], tail);
    }
}

typedef struct {
    const qs_ref_linear *L;
    const float *x;
    float *y;
    int64_t m;
    _Atomic int oom;     /* a thread could not get its decode buffer */
} gemm_job;

static void gemm_rows(void *ctx, int64_t begin, int64_t end)
{
    gemm_job *job = ctx;
    const qs_ref_linear *L = job->L;
    int64_t k = L->k, n = L->n;
    float *buf = NULL;
    if (L->wfmt != QS_REFW_F32) {
        buf = malloc((size_t)(TILE_ROWS * k) * sizeof(float));
        if (!buf) {
            job->oom = 1;
            return;
        }
    }
    for (int64_t j0 = begin; j0 < end; j0 += TILE_ROWS) {
        int rows = end - j0 < TILE_ROWS ? (int)(end - j0) : TILE_ROWS;
        const float *w[TILE_ROWS];
        for (int r = 0; r < rows; r++) {
            if (buf) {
                qs_ref_decode_row(L, j0 + r, buf + r * k);
                w[r] = buf + r * k;
            } else {
                w[r] = (const float *)L->w + (j0 + r) * k;
            }
        }
        for (int64_t i = 0; i < job->m; i++) {
            const float *xi = job->x + i * k;
            float v[TILE_ROWS];
            if (rows == TILE_ROWS)
                dot4(xi, w, k, v);
            else
                for (int r = 0; r < rows; r++)
                    v[r] = dot(xi, w[r], k);
            for (int r = 0; r < rows; r++)
                job->y[i * n + j0 + r] = L->bias ? v[r] + L->bias[j0 + r] : v[r];
        }
    }
    free(buf);
}

int qs_ref_linear_run(const qs_ref_linear *L, const float *x, float *y, int64_t m, qs_err *err)
{
    if (m <= 0)
        return 0;
    if (qs_reference_calibration_active()) {
        float a = 0.0f;
        for (int64_t i = 0; i < m * L->k; i++)
            if (fabsf(x[i]) > a)
                a = fabsf(x[i]);
        qs_reference_calibration_record(L->name, a);
    }
    const float *xin = x;
    float *xq = NULL;
    if (L->aquant != QS_AQUANT_NONE) {
        xq = malloc((size_t)(m * L->k) * sizeof *xq);
        if (!xq)
            return qs_errf(err, "layer %s: out of memory for %lld quantized activations", L->name,
                           (long long)(m * L->k));
        qs_ref_quantize_activations(L, x, xq, m);
        xin = xq;
    }
    gemm_job job = {.L = L, .x = xin, .y = y, .m = m, .oom = 0};
    /* chunks of at least ~64K multiply-adds so small layers stay on one thread */
    int64_t min_chunk = 65536 / (L->k * m) + TILE_ROWS;
    qs_parallel_for(L->n, min_chunk, gemm_rows, &job);
    free(xq);
    if (job.oom)
        return qs_errf(err, "layer %s: out of memory for the weight decode buffer", L->name);
    return 0;
}

/* ---- the qs_kernel descriptor ---------------------------------------------------------------- */

static int ref_is_supported(const qs_device_caps *dev, char *why, size_t cap)
{
    if (dev && dev->platform != QS_PLATFORM_CPU) {
        snprintf(why, cap, "the reference kernels run on the CPU only; this device is %s", dev->name);
        return 0;
    }
    return 1;
}

static int ref_can_linear(const qs_linear_desc *d, char *why, size_t cap)
{
    return qs_ref_linear_check(d, why, cap);
}

static int ref_prepare_linear(const qs_linear_desc *d, void **state, qs_err *err)
{
    qs_ref_linear *L = malloc(sizeof *L);
    if (!L)
        return qs_errf(err, "layer %s: out of memory", d->name);
    if (qs_ref_linear_init(L, d, err)) {
        free(L);
        return -1;
    }
    *state = L;
    return 0;
}

static int ref_apply_linear(const void *state, const void *x, void *y, int64_t m, void *stream, qs_err *err)
{
    (void)stream;
    return qs_ref_linear_run(state, x, y, m, err);
}

static void ref_release_linear(void *state)
{
    if (!state)
        return;
    qs_ref_linear_destroy(state);
    free(state);
}

#define ALL_SCHEMES ((1u << QS_SCHEME_COUNT) - 1u)

const qs_kernel qs_kernel_reference_linear = {
    .name = "reference",
    .platform = QS_PLATFORM_CPU,
    .kind = QS_KIND_LINEAR,
    .schemes = ALL_SCHEMES,
    .batch_invariant = true,
    .is_supported = ref_is_supported,
    .can_implement_linear = ref_can_linear,
    .prepare_linear = ref_prepare_linear,
    .apply_linear = ref_apply_linear,
    .release = ref_release_linear,
};

int qs_ref_is_supported(const qs_device_caps *dev, char *why, size_t cap)
{
    return ref_is_supported(dev, why, cap);
}
