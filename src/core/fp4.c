/* fp4.c — E2M1 table, encoder and nibble packing (see fp4.h). */
#include "core/fp4.h"

#include "core/fp8.h"

const float qs_e2m1_values[16] = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                                  -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};

uint8_t qs_f32_to_e2m1(float x)
{
    /* E2M1 has no NaN: map NaN to +0 rather than a value. */
    if (x != x)
        return 0;
    return qs_minifloat_encode(x, 2, 1, 1, 3, 1, 0);
}

void qs_fp4_pack(const uint8_t *codes, int64_t n, uint8_t *packed)
{
    for (int64_t i = 0; i < n; i += 2) {
        uint8_t lo = codes[i] & 0xF;
        uint8_t hi = i + 1 < n ? (uint8_t)(codes[i + 1] & 0xF) : 0;
        packed[i >> 1] = (uint8_t)(lo | (hi << 4));
    }
}

void qs_fp4_unpack(const uint8_t *packed, int64_t n, uint8_t *codes)
{
    for (int64_t i = 0; i < n; i++)
        codes[i] = qs_fp4_code(packed, i);
}
