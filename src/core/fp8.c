/* fp8.c — E4M3 / E5M2 / UE8M0 encode and decode (see fp8.h), and the amax every scale starts
 * from. Decoding is a bit formula (and a 256-entry table for E4M3, the hot path of the reference
 * kernels); encoding goes through one generic round-to-nearest-even minifloat encoder so FP8 and
 * FP4 share the same rounding. */
#include "core/fp8.h"

#include <math.h>
#include <pthread.h>

uint8_t qs_minifloat_encode(float x, int ebits, int mbits, int bias, int max_field, int max_mant,
                            uint8_t nan_code)
{
    uint8_t sign = signbit(x) ? (uint8_t)(1u << (ebits + mbits)) : 0;
    if (isnan(x))
        return nan_code;
    float a = fabsf(x);
    uint8_t max_code = (uint8_t)(sign | (max_field << mbits) | max_mant);
    float max_val = ldexpf(1.0f + (float)max_mant / (float)(1 << mbits), max_field - bias);
    if (a >= max_val)
        return max_code;
    int min_normal_exp = 1 - bias;
    int field, mant;
    if (a < ldexpf(1.0f, min_normal_exp)) {
        /* subnormal: step 2^(min_normal_exp - mbits) */
        mant = (int)rintf(ldexpf(a, mbits - min_normal_exp));
        field = 0;
        if (mant == (1 << mbits)) {
            mant = 0;
            field = 1;
        }
    } else {
        int ex;
        frexpf(a, &ex); /* a = f * 2^ex, f in [0.5, 1) */
        int e = ex - 1;
        mant = (int)rintf((ldexpf(a, -e) - 1.0f) * (float)(1 << mbits));
        if (mant == (1 << mbits)) {
            mant = 0;
            e++;
        }
        field = e + bias;
    }
    if (field > max_field || (field == max_field && mant > max_mant))
        return max_code;
    return (uint8_t)(sign | (field << mbits) | mant);
}

static float minifloat_decode(uint8_t b, int ebits, int mbits, int bias)
{
    int sign = (b >> (ebits + mbits)) & 1;
    int field = (b >> mbits) & ((1 << ebits) - 1);
    int mant = b & ((1 << mbits) - 1);
    float v = field == 0 ? ldexpf((float)mant, 1 - bias - mbits)
                         : ldexpf(1.0f + (float)mant / (float)(1 << mbits), field - bias);
    return sign ? -v : v;
}

float qs_e4m3_to_f32(uint8_t b)
{
    if ((b & 0x7F) == 0x7F)
        return NAN;
    return minifloat_decode(b, 4, 3, 7);
}

uint8_t qs_f32_to_e4m3(float x)
{
    return qs_minifloat_encode(x, 4, 3, 7, 15, 6, 0x7F);
}

float qs_e5m2_to_f32(uint8_t b)
{
    int field = (b >> 2) & 0x1F;
    if (field == 31) {
        if (b & 3)
            return NAN;
        return (b & 0x80) ? -INFINITY : INFINITY;
    }
    return minifloat_decode(b, 5, 2, 15);
}

uint8_t qs_f32_to_e5m2(float x)
{
    return qs_minifloat_encode(x, 5, 2, 15, 30, 3, 0x7F);
}

float qs_e8m0_to_f32(uint8_t b)
{
    if (b == 0xFF)
        return NAN;
    return ldexpf(1.0f, (int)b - 127);
}

uint8_t qs_f32_to_e8m0(float x)
{
    if (!(x > 0.0f))
        return 0xFF;
    if (isinf(x))
        return 254;
    int ex;
    float f = frexpf(x, &ex); /* x = f * 2^ex, f in [0.5, 1): nearest of 2^(ex-1) and 2^ex */
    int e = f >= 0.75f ? ex : ex - 1;
    if (e < -127)
        e = -127;
    if (e > 127)
        e = 127;
    return (uint8_t)(e + 127);
}

static float e4m3_lut[256];
static pthread_once_t e4m3_once = PTHREAD_ONCE_INIT;

static void build_e4m3_lut(void)
{
    for (int i = 0; i < 256; i++)
        e4m3_lut[i] = qs_e4m3_to_f32((uint8_t)i);
}

const float *qs_e4m3_table(void)
{
    pthread_once(&e4m3_once, build_e4m3_lut);
    return e4m3_lut;
}

float qs_amax(const float *x, int64_t n)
{
    float a = 0.0f;
    for (int64_t i = 0; i < n; i++) {
        float v = fabsf(x[i]);
        if (v > a)
            a = v;
    }
    return a;
}
