/* fp8.h — 8-bit float element formats of FP8 checkpoints: OCP E4M3 "fn" (weights, activations,
 * NVFP4 block scales), E5M2 (for completeness) and UE8M0 (power-of-two scales).
 * Encoders round to nearest, ties to even, and saturate to the largest finite value (every
 * producer clamps to ±448 before casting); NaN encodes to the format's NaN.
 * See ../shared/reference/checkpoint-formats.md §5.2–5.4. */
#ifndef QS_CORE_FP8_H
#define QS_CORE_FP8_H

#include <stdint.h>

#define QS_E4M3_MAX 448.0f
#define QS_E5M2_MAX 57344.0f

float qs_e4m3_to_f32(uint8_t b);
uint8_t qs_f32_to_e4m3(float x);
float qs_e5m2_to_f32(uint8_t b);
uint8_t qs_f32_to_e5m2(float x);
/* UE8M0: 2^(b-127); 0xFF is NaN. The encoder rounds to the nearest power of two (ties up),
 * clamps to [2^-127, 2^127]; zero, negative and NaN inputs give 0xFF. */
float qs_e8m0_to_f32(uint8_t b);
uint8_t qs_f32_to_e8m0(float x);

/* 256-entry decode table of E4M3 (built once, thread-safe). */
const float *qs_e4m3_table(void);

/* Round-to-nearest-even encoder shared by E4M3, E5M2 and E2M1: sign bit above ebits+mbits,
 * saturating at (max_field, max_mant). Exposed for fp4.c. */
uint8_t qs_minifloat_encode(float x, int ebits, int mbits, int bias, int max_field, int max_mant,
                            uint8_t nan_code);

/* max |x[i]| over n elements: what FP8 and NVFP4 scales are computed from. */
float qs_amax(const float *x, int64_t n);

#endif
