/* fp8_pair.c — a BF16 row as two E4M3 rows at one power-of-two scale (fp8_pair.h). */
#include "quant/fp8_pair.h"

#include <math.h>

#include "quant/fp8.h"

int qs_fp8_pair_split(const float *x, int64_t n, uint8_t *hi, uint8_t *lo)
{
    float amax = 0.0f;
    for (int64_t i = 0; i < n; i++)
        amax = fmaxf(amax, fabsf(x[i]));
    int e = 0;
    if (amax > 0.0f) {
        int p;
        frexpf(amax, &p); /* amax in [2^(p-1), 2^p) */
        e = 8 - p;        /* amax · 2^e in [128, 256): below 448 even after rounding up */
    }
    for (int64_t i = 0; i < n; i++) {
        float scaled = ldexpf(x[i], e); /* exact: a power of two */
        hi[i] = qs_f32_to_e4m3(scaled);
        lo[i] = qs_f32_to_e4m3(scaled - qs_e4m3_to_f32(hi[i]));
    }
    return e;
}

float qs_fp8_pair_value(uint8_t hi, uint8_t lo, int e)
{
    return ldexpf(qs_e4m3_to_f32(hi) + qs_e4m3_to_f32(lo), -e);
}
