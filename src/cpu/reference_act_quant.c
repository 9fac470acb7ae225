/* reference_act_quant.c — activation quantization of the reference kernels, exactly as a W8A8 /
 * W4A4 GPU kernel does it before its matmul (checkpoint-formats.md §3.1.3, §4.1): the result is
 * the dequantized value q × scale, so the matmul that follows is the quantized GEMM's function.
 *   static per-tensor FP8:  q = e4m3(x · (1 / input_scale))
 *   dynamic FP8:            s = amax / 448 over the tensor, each row, or each row's group;
 *                           q = e4m3(x · (1 / s))
 *   NVFP4:                  g = 1 / input_scale; per 16: s_b = e4m3(g · (amax_b / 6)),
 *                           q = e2m1(x · (1 / (s_b · (1 / g)))), x ≈ q · s_b · input_scale
 * The reciprocals are where vLLM's quantization kernels (and its NVFP4 reference) put them, so
 * ties round the same way. E4M3 / E2M1 encoding rounds to nearest even and saturates. */
#include <math.h>
#include <string.h>

#include "core/fp4.h"
#include "core/fp8.h"
#include "cpu/reference_linear_impl.h"

/* out = e4m3(x / s) * s over n values; s <= 0 (all-zero input) gives zeros. */
static void fp8_qdq(const float *x, float *out, int64_t n, float s)
{
    if (!(s > 0.0f)) {
        memset(out, 0, (size_t)n * sizeof *out);
        return;
    }
    const float *lut = qs_e4m3_table();
    float inv = 1.0f / s;
    for (int64_t i = 0; i < n; i++)
        out[i] = lut[qs_f32_to_e4m3(x[i] * inv)] * s;
}

static void nvfp4_qdq_row(const float *x, float *out, int64_t k, float input_scale)
{
    float g = 1.0f / input_scale;
    for (int64_t b = 0; b < k; b += QS_NVFP4_GROUP) {
        int64_t len = k - b < QS_NVFP4_GROUP ? k - b : QS_NVFP4_GROUP;
        float sb = qs_e4m3_to_f32(qs_f32_to_e4m3(g * (qs_amax(x + b, len) / QS_E2M1_MAX)));
        float inv = sb > 0.0f ? 1.0f / (sb * (1.0f / g)) : 0.0f;
        for (int64_t c = 0; c < len; c++) {
            float q = qs_e2m1_to_f32(qs_f32_to_e2m1(x[b + c] * inv));
            out[b + c] = q * sb * input_scale;
        }
    }
}

void qs_ref_quantize_activations(const qs_ref_linear *L, const float *x, float *out, int64_t m)
{
    int64_t k = L->k;
    switch (L->aquant) {
    case QS_AQUANT_NONE:
        memcpy(out, x, (size_t)(m * k) * sizeof *out);
        return;
    case QS_AQUANT_STATIC_TENSOR:
        fp8_qdq(x, out, m * k, L->input_scale);
        return;
    case QS_AQUANT_DYNAMIC_TENSOR:
        fp8_qdq(x, out, m * k, qs_amax(x, m * k) / QS_E4M3_MAX);
        return;
    case QS_AQUANT_DYNAMIC_TOKEN:
        for (int64_t i = 0; i < m; i++)
            fp8_qdq(x + i * k, out + i * k, k, qs_amax(x + i * k, k) / QS_E4M3_MAX);
        return;
    case QS_AQUANT_DYNAMIC_GROUP: {
        int64_t g = L->act_group_size;
        for (int64_t i = 0; i < m; i++)
            for (int64_t c = 0; c < k; c += g) {
                int64_t len = k - c < g ? k - c : g;
                const float *xs = x + i * k + c;
                fp8_qdq(xs, out + i * k + c, len, qs_amax(xs, len) / QS_E4M3_MAX);
            }
        return;
    }
    case QS_AQUANT_NVFP4:
        for (int64_t i = 0; i < m; i++)
            nvfp4_qdq_row(x + i * k, out + i * k, k, L->input_scale);
        return;
    }
}
