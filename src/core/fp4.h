/* fp4.h — FP4 E2M1, the element format of NVFP4 (../shared/reference/checkpoint-formats.md §4,
 * §5.1): 16 codes, bit 3 the sign, magnitudes 0, 0.5, 1, 1.5, 2, 3, 4, 6. Two codes per byte,
 * the even element in the low nibble. Encoding rounds to nearest even and saturates to ±6. */
#ifndef QS_CORE_FP4_H
#define QS_CORE_FP4_H

#include <stdint.h>

#define QS_E2M1_MAX 6.0f
#define QS_NVFP4_GROUP 16

extern const float qs_e2m1_values[16];

uint8_t qs_f32_to_e2m1(float x);
static inline float qs_e2m1_to_f32(uint8_t code) { return qs_e2m1_values[code & 0xF]; }

/* Element i of a packed row (low nibble = even element). */
static inline uint8_t qs_fp4_code(const uint8_t *packed, int64_t i)
{
    uint8_t b = packed[i >> 1];
    return (i & 1) ? (uint8_t)(b >> 4) : (uint8_t)(b & 0xF);
}
/* Packs n codes (n may be odd: the last high nibble is 0) into ceil(n/2) bytes. */
void qs_fp4_pack(const uint8_t *codes, int64_t n, uint8_t *packed);
/* Unpacks n codes from ceil(n/2) bytes. */
void qs_fp4_unpack(const uint8_t *packed, int64_t n, uint8_t *codes);

#endif
