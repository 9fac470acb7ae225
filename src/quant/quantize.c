/* quantize.c — the round-to-nearest quantizers of quantize.h. */
#include "quant/quantize.h"

#include <math.h>
#include <string.h>

#include "core/fp4.h"
#include "core/fp8.h"
#include "core/tensor.h"
#include "util/parallel.h"

float qs_scale_round_f32(float s) { return s; }
float qs_scale_round_bf16(float s) { return qs_bf16_to_f32(qs_f32_to_bf16(s)); }

/* amax / 448 rounded to its storage dtype; an all-zero input gets scale 1 (its codes are 0). */
static float fp8_scale(float amax, qs_scale_round_fn rnd)
{
    float s = rnd(amax / QS_E4M3_MAX);
    return s > 0.0f && isfinite(s) ? s : 1.0f;
}

typedef struct {
    const float *w;
    int64_t n, k;
    int bn, bk;
    qs_scale_round_fn rnd;
    uint8_t *q;
    float *scale;
    float fixed;
    uint8_t *packed, *bscale;
    float global;
} qjob;

static void encode_row(const float *w, uint8_t *q, int64_t k, float s)
{
    for (int64_t c = 0; c < k; c++)
        q[c] = qs_f32_to_e4m3(w[c] / s);
}

static void channel_rows(void *ctx, int64_t b, int64_t e)
{
    const qjob *j = ctx;
    for (int64_t r = b; r < e; r++) {
        float s = fp8_scale(qs_amax(j->w + r * j->k, j->k), j->rnd);
        j->scale[r] = s;
        encode_row(j->w + r * j->k, j->q + r * j->k, j->k, s);
    }
}

static void fixed_rows(void *ctx, int64_t b, int64_t e)
{
    const qjob *j = ctx;
    for (int64_t r = b; r < e; r++)
        encode_row(j->w + r * j->k, j->q + r * j->k, j->k, j->fixed);
}

void qs_quantize_fp8_with_scale(const float *w, int64_t n, int64_t k, float scale, uint8_t *q)
{
    qjob j = {.w = w, .n = n, .k = k, .q = q, .fixed = scale > 0.0f ? scale : 1.0f};
    qs_parallel_for(n, 16, fixed_rows, &j);
}

void qs_quantize_fp8_tensor(const float *w, int64_t n, int64_t k, qs_scale_round_fn rnd, uint8_t *q, float *scale)
{
    scale[0] = fp8_scale(qs_amax(w, n * k), rnd);
    qs_quantize_fp8_with_scale(w, n, k, scale[0], q);
}

void qs_quantize_fp8_channel(const float *w, int64_t n, int64_t k, qs_scale_round_fn rnd, uint8_t *q, float *scale)
{
    qjob j = {.w = w, .n = n, .k = k, .rnd = rnd, .q = q, .scale = scale};
    qs_parallel_for(n, 16, channel_rows, &j);
}

static void block_rows(void *ctx, int64_t b, int64_t e)
{
    const qjob *j = ctx;
    int64_t nbk = (j->k + j->bk - 1) / j->bk;
    for (int64_t br = b; br < e; br++) {
        int64_t r0 = br * j->bn, r1 = r0 + j->bn < j->n ? r0 + j->bn : j->n;
        for (int64_t bc = 0; bc < nbk; bc++) {
            int64_t c0 = bc * j->bk, c1 = c0 + j->bk < j->k ? c0 + j->bk : j->k;
            float a = 0.0f;
            for (int64_t r = r0; r < r1; r++) {
                float ra = qs_amax(j->w + r * j->k + c0, c1 - c0);
                if (ra > a)
                    a = ra;
            }
            float s = fp8_scale(a, j->rnd);
            j->scale[br * nbk + bc] = s;
            for (int64_t r = r0; r < r1; r++)
                encode_row(j->w + r * j->k + c0, j->q + r * j->k + c0, c1 - c0, s);
        }
    }
}

void qs_quantize_fp8_block(const float *w, int64_t n, int64_t k, int bn, int bk, qs_scale_round_fn rnd, uint8_t *q,
                           float *scale)
{
    qjob j = {.w = w, .n = n, .k = k, .bn = bn, .bk = bk, .rnd = rnd, .q = q, .scale = scale};
    qs_parallel_for((n + bn - 1) / bn, 1, block_rows, &j);
}

float qs_nvfp4_global_scale(float amax)
{
    float g = amax / (QS_E2M1_MAX * QS_E4M3_MAX);
    return g > 0.0f && isfinite(g) ? g : 1.0f;
}

static void nvfp4_rows(void *ctx, int64_t b, int64_t e)
{
    const qjob *j = ctx;
    int64_t groups = j->k / QS_NVFP4_GROUP;
    for (int64_t r = b; r < e; r++) {
        const float *w = j->w + r * j->k;
        for (int64_t g = 0; g < groups; g++) {
            const float *x = w + g * QS_NVFP4_GROUP;
            float a = qs_amax(x, QS_NVFP4_GROUP);
            /* an all-zero block gets scale 1.0 (ModelOpt); a tiny one the smallest positive E4M3 */
            uint8_t sc = a > 0.0f ? qs_f32_to_e4m3(a / (QS_E2M1_MAX * j->global)) : 0x38;
            if (sc == 0)
                sc = 0x01;
            j->bscale[r * groups + g] = sc;
            float s = qs_e4m3_to_f32(sc) * j->global;
            uint8_t codes[QS_NVFP4_GROUP];
            for (int t = 0; t < QS_NVFP4_GROUP; t++)
                codes[t] = qs_f32_to_e2m1(x[t] / s);
            qs_fp4_pack(codes, QS_NVFP4_GROUP, j->packed + r * (j->k / 2) + g * (QS_NVFP4_GROUP / 2));
        }
    }
}

void qs_quantize_nvfp4(const float *w, int64_t n, int64_t k, float global_scale, uint8_t *packed,
                       uint8_t *block_scales)
{
    qjob j = {.w = w, .n = n, .k = k, .packed = packed, .bscale = block_scales, .global = global_scale};
    qs_parallel_for(n, 8, nvfp4_rows, &j);
}
