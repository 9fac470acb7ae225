/* quantize.h — round-to-nearest quantizers for every scheme qserve writes, producing exactly the
 * on-disk encodings (checkpoint-formats.md §3, §4): FP8 E4M3 codes with per-tensor, per-channel or
 * block scales (scale = amax / 448, multiply to dequantize), and NVFP4 (E2M1 codes packed two per
 * byte, E4M3 scale per 16 inputs, FP32 global scale = amax / (6 · 448), multiply to dequantize).
 * Weights are float32 rows [n, k]. Scales are first rounded through `scale_round` (the dtype the
 * scale is stored in, e.g. BF16 for compressed-tensors) so that q · stored_scale is what the
 * quantizer aimed at. Work is split over rows with qs_parallel_for. */
#ifndef QS_QUANT_QUANTIZE_H
#define QS_QUANT_QUANTIZE_H

#include <stdint.h>

#include "core/fp8.h" /* qs_amax, the quantity every scale here is made from */

typedef float (*qs_scale_round_fn)(float);
float qs_scale_round_f32(float s);   /* identity */
float qs_scale_round_bf16(float s);  /* through BF16, round to nearest even */

/* scale[0] for the whole tensor */
void qs_quantize_fp8_tensor(const float *w, int64_t n, int64_t k, qs_scale_round_fn rnd, uint8_t *q, float *scale);
/* scale[n], one per output row */
void qs_quantize_fp8_channel(const float *w, int64_t n, int64_t k, qs_scale_round_fn rnd, uint8_t *q, float *scale);
/* scale[ceil(n/bn) * ceil(k/bk)], row-major over blocks; partial edge blocks use their own amax */
void qs_quantize_fp8_block(const float *w, int64_t n, int64_t k, int bn, int bk, qs_scale_round_fn rnd, uint8_t *q,
                           float *scale);
/* FP8 with a given per-tensor scale (fused siblings sharing one scale). */
void qs_quantize_fp8_with_scale(const float *w, int64_t n, int64_t k, float scale, uint8_t *q);

/* NVFP4 global scale for a tensor amax (ModelOpt convention; compressed-tensors stores 1/this). */
float qs_nvfp4_global_scale(float amax);
/* k must be a multiple of 16. packed [n, k/2], block_scales E4M3 [n, k/16]. */
void qs_quantize_nvfp4(const float *w, int64_t n, int64_t k, float global_scale, uint8_t *packed,
                       uint8_t *block_scales);

#endif
