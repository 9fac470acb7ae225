/* dtype.c — the tensor dtypes of core/tensor.h (names, widths) and element conversions to and from float:
 * bf16 and f16 with round-to-nearest-even, the three FP8 formats a checkpoint may hold, and
 * qs_tensor_get_f32 for reading one element of any tensor. Conversions go through memcpy, never
 * pointer casts: tensor data in a mmapped file is only as aligned as its offset happens to be. */
#include "core/tensor.h"

#include <math.h>
#include <string.h>

static const struct {
    const char *name;
    int bits;
} DTYPES[QS_DT_COUNT] = {
    [QS_DT_F64] = {"F64", 64},         [QS_DT_F32] = {"F32", 32},         [QS_DT_F16] = {"F16", 16},
    [QS_DT_BF16] = {"BF16", 16},       [QS_DT_F8_E4M3] = {"F8_E4M3", 8},  [QS_DT_F8_E5M2] = {"F8_E5M2", 8},
    [QS_DT_F8_E8M0] = {"F8_E8M0", 8},  [QS_DT_I64] = {"I64", 64},         [QS_DT_I32] = {"I32", 32},
    [QS_DT_I16] = {"I16", 16},         [QS_DT_I8] = {"I8", 8},            [QS_DT_U64] = {"U64", 64},
    [QS_DT_U32] = {"U32", 32},         [QS_DT_U16] = {"U16", 16},         [QS_DT_U8] = {"U8", 8},
    [QS_DT_BOOL] = {"BOOL", 8},
};

int qs_dtype_from_string(const char *s)
{
    if (!s)
        return -1;
    for (int i = 0; i < QS_DT_COUNT; i++)
        if (!strcmp(s, DTYPES[i].name))
            return i;
    return -1;
}

const char *qs_dtype_name(qs_dtype dt) { return (unsigned)dt < QS_DT_COUNT ? DTYPES[dt].name : "?"; }

int qs_dtype_bits(qs_dtype dt) { return (unsigned)dt < QS_DT_COUNT ? DTYPES[dt].bits : 0; }

void qs_tensor_header(qs_tensor *t, const char *name, qs_dtype dt, int ndim, int64_t d0, int64_t d1)
{
    memset(t, 0, sizeof *t);
    t->name = name;
    t->dtype = dt;
    t->ndim = ndim;
    t->shape[0] = d0;
    t->shape[1] = d1;
    t->numel = ndim == 0 ? 1 : ndim == 1 ? d0 : d0 * d1;
    t->nbytes = (size_t)(t->numel * qs_dtype_bits(dt) / 8);
}

const char *qs_dtype_list(void)
{
    return "F64, F32, F16, BF16, F8_E4M3, F8_E5M2, F8_E8M0, I64, I32, I16, I8, U64, U32, U16, U8, BOOL";
}

static inline uint32_t f2u(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static inline float u2f(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

float qs_bf16_to_f32(uint16_t h) { return u2f((uint32_t)h << 16); }

uint16_t qs_f32_to_bf16(float f)
{
    uint32_t u = f2u(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)          /* NaN: keep sign and payload top, force quiet */
        return (uint16_t)((u >> 16) | 0x0040u);
    u += 0x7fffu + ((u >> 16) & 1u);               /* round to nearest, ties to even; overflow -> inf */
    return (uint16_t)(u >> 16);
}

float qs_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    if (exp == 0x1f)                                /* inf / NaN */
        return u2f(sign | 0x7f800000u | (man << 13));
    if (exp == 0) {                                 /* zero / subnormal: man * 2^-24, exact in f32 */
        float v = (float)man * 0x1p-24f;
        return sign ? -v : v;
    }
    return u2f(sign | ((exp + 112u) << 23) | (man << 13));
}

uint16_t qs_f32_to_f16(float f)
{
    uint32_t u = f2u(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u)                            /* NaN: quiet, keep the top payload bits */
        return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
    if (a >= 0x477ff000u)                           /* >= 65520 rounds to inf (65504 is the max) */
        return (uint16_t)(sign | 0x7c00u);
    if (a < 0x38800000u) {                          /* below 2^-14: subnormal or zero */
        if (a < 0x33000000u)                        /* below 2^-25: rounds to zero (ties to even 0) */
            return sign;
        uint32_t e = a >> 23, m = (a & 0x7fffffu) | 0x800000u;
        uint32_t shift = 126u - e;                  /* 14..24: value = m * 2^(e-150); target 2^-24 units */
        uint32_t q = m >> shift, rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
        if (rem > half || (rem == half && (q & 1u)))
            q++;
        return (uint16_t)(sign | q);                /* q == 0x400 becomes the smallest normal: correct */
    }
    uint32_t r = a - 0x38000000u;                   /* rebias exponent 127 -> 15 */
    r += 0xfffu + ((r >> 13) & 1u);                 /* round to nearest even on the 13 dropped bits */
    return (uint16_t)(sign | (r >> 13));
}

/* The three FP8 decoders below serve qs_tensor_get_f32 only, as bit formulas; the kernels use
 * the table-driven ones of core/fp8.h. */

/* OCP E4M3 ("fn"): bias 7, no infinities, S.1111.111 is NaN, max 448. */
static float f8_e4m3_to_f32(uint8_t v)
{
    int sign = v >> 7, exp = (v >> 3) & 0xf, man = v & 7;
    float r;
    if (exp == 0xf && man == 7)
        r = NAN;
    else if (exp == 0)
        r = (float)man * 0x1p-9f;
    else
        r = ldexpf(1.0f + (float)man / 8.0f, exp - 7);
    return sign ? -r : r;
}

/* E5M2: IEEE-like, bias 15; exponent 31 is inf (mantissa 0) or NaN. */
static float f8_e5m2_to_f32(uint8_t v) { return qs_f16_to_f32((uint16_t)v << 8); }

/* UE8M0: 2^(v-127), 0xFF is NaN, no sign, no zero. */
static float f8_e8m0_to_f32(uint8_t v)
{
    if (v == 0xff)
        return NAN;
    if (v == 0)
        return 0x1p-127f;
    return u2f((uint32_t)v << 23);
}

static float elem_to_f32(qs_dtype dt, const uint8_t *p)
{
    switch (dt) {
    case QS_DT_F64: { double d; memcpy(&d, p, 8); return (float)d; }
    case QS_DT_F32: { float f; memcpy(&f, p, 4); return f; }
    case QS_DT_F16: { uint16_t h; memcpy(&h, p, 2); return qs_f16_to_f32(h); }
    case QS_DT_BF16: { uint16_t h; memcpy(&h, p, 2); return qs_bf16_to_f32(h); }
    case QS_DT_F8_E4M3: return f8_e4m3_to_f32(*p);
    case QS_DT_F8_E5M2: return f8_e5m2_to_f32(*p);
    case QS_DT_F8_E8M0: return f8_e8m0_to_f32(*p);
    case QS_DT_I64: { int64_t x; memcpy(&x, p, 8); return (float)x; }
    case QS_DT_I32: { int32_t x; memcpy(&x, p, 4); return (float)x; }
    case QS_DT_I16: { int16_t x; memcpy(&x, p, 2); return (float)x; }
    case QS_DT_I8: return (float)(int8_t)*p;
    case QS_DT_U64: { uint64_t x; memcpy(&x, p, 8); return (float)x; }
    case QS_DT_U32: { uint32_t x; memcpy(&x, p, 4); return (float)x; }
    case QS_DT_U16: { uint16_t x; memcpy(&x, p, 2); return (float)x; }
    case QS_DT_U8: return (float)*p;
    case QS_DT_BOOL: return *p ? 1.0f : 0.0f;
    default: return NAN;
    }
}

float qs_tensor_get_f32(const qs_tensor *t, int64_t i)
{
    if (!t || !t->data || i < 0 || i >= t->numel)
        return NAN;
    return elem_to_f32(t->dtype, (const uint8_t *)t->data + (size_t)i * (size_t)(qs_dtype_bits(t->dtype) / 8));
}

void qs_convert_to_f32(qs_dtype dt, const void *src, float *dst, size_t n)
{
    const uint8_t *p = src;
    size_t es = (size_t)qs_dtype_bits(dt) / 8;
    if (dt == QS_DT_F32) {
        memcpy(dst, src, n * 4);
        return;
    }
    if (dt == QS_DT_BF16) {
        for (size_t i = 0; i < n; i++) {
            uint16_t h;
            memcpy(&h, p + 2 * i, 2);
            dst[i] = qs_bf16_to_f32(h);
        }
        return;
    }
    for (size_t i = 0; i < n; i++)
        dst[i] = elem_to_f32(dt, p + i * es);
}

void qs_f32_to_bf16_n(const float *src, uint16_t *dst, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = qs_f32_to_bf16(src[i]);
}

void qs_f32_to_f16_n(const float *src, uint16_t *dst, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = qs_f32_to_f16(src[i]);
}
