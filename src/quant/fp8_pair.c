/* fp8_pair.c — a BF16 row as two E4M3 rows at a power-of-two scale per block (fp8_pair.h). */
#include "quant/fp8_pair.h"

#include <math.h>

#include "quant/fp8.h"

void qs_fp8_pair_split(const float *x, int64_t n, int64_t block, uint8_t *hi, uint8_t *lo, int *e)
{
    for (int64_t b = 0; b * block < n; b++) {
        const int64_t begin = b * block, end = begin + block < n ? begin + block : n;
        float amax = 0.0f;
        for (int64_t i = begin; i < end; i++)
            amax = fmaxf(amax, fabsf(x[i]));
        e[b] = 0;
        if (amax > 0.0f) {
            int p;
            frexpf(amax, &p); /* amax in [2^(p-1), 2^p) */
            e[b] = 8 - p;     /* amax · 2^e in [128, 256): below 448 even after rounding up */
        }
        for (int64_t i = begin; i < end; i++) {
            float scaled = ldexpf(x[i], e[b]); /* exact: a power of two */
            hi[i] = qs_f32_to_e4m3(scaled);
            lo[i] = qs_f32_to_e4m3(scaled - qs_e4m3_to_f32(hi[i]));
        }
    }
}

float qs_fp8_pair_value(uint8_t hi, uint8_t lo, int e)
{
    return ldexpf(qs_e4m3_to_f32(hi) + qs_e4m3_to_f32(lo), -e);
}
