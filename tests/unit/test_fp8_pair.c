/* test_fp8_pair.c — quant/fp8_pair.h: a BF16 row split into hi and lo E4M3 codes at a
 * power-of-two scale per block stands for the row exactly wherever |x · 2^e| >= 2^-2 and within
 * 2^-10 · 2^-e below that, for one scale a row and for blocks of 128; every finite BF16 value alone
 * is exact; and W · x through the pair (two FP8 products, each block's sum scaled by its 2^-e)
 * stays within that bound of W · x for E4M3 weights. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>

#include "model/safetensors.h"
#include "quant/fp8.h"
#include "quant/fp8_pair.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;

static double uniform(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (double)(rng >> 11) / (double)(1ull << 53);
}

/* A BF16 value of random sign, magnitude 2^[lo, hi) and mantissa. */
static float random_bf16(double lo, double hi)
{
    double v = ldexp(1.0 + uniform(), (int)floor(lo + uniform() * (hi - lo)));
    return qs_bf16_to_f32(qs_f32_to_bf16((float)(uniform() < 0.5 ? -v : v)));
}

static void every_bf16_value_alone_is_exact(void **state)
{
    int checked = 0;
    for (uint32_t b = 0; b < 65536; b++) {
        float x = qs_bf16_to_f32((uint16_t)b);
        if (!isfinite(x))
            continue;
        uint8_t hi, lo;
        int e;
        qs_fp8_pair_split(&x, 1, 1, &hi, &lo, &e);
        assert_true(qs_fp8_pair_value(hi, lo, e) == x); /* (-0 == +0 for the zeros) */
        checked++;
    }
    assert_true(checked > 65000);
}

/* Rows spanning 2^-34 .. 2^12, one scale a row and one a 128-block: the large elements of each
 * block exact, the small ones within the bound. */
static void rows_of_wide_range_are_exact_down_to_the_bound(void **state)
{
    enum { N = 4096 };
    float *x = malloc(sizeof(float) * N);
    uint8_t *hi = malloc(N), *lo = malloc(N);
    int e[N / 128];
    for (int blocked = 0; blocked < 2; blocked++) {
        const int64_t block = blocked ? 128 : N;
        int64_t exact_region = 0;
        for (int row = 0; row < 200; row++) {
            double top = -20.0 + uniform() * 32.0;
            for (int i = 0; i < N; i++)
                x[i] = i % 97 == 0 ? 0.0f : random_bf16(top - 14.0, top);
            qs_fp8_pair_split(x, N, block, hi, lo, e);
            for (int64_t b = 0; b < N / block; b++) {
                float amax = 0.0f;
                for (int64_t i = b * block; i < (b + 1) * block; i++)
                    amax = fmaxf(amax, fabsf(x[i]));
                assert_true(ldexpf(amax, e[b]) >= 128.0f && ldexpf(amax, e[b]) < 256.0f);
                for (int64_t i = b * block; i < (b + 1) * block; i++) {
                    float back = qs_fp8_pair_value(hi[i], lo[i], e[b]);
                    if (fabsf(ldexpf(x[i], e[b])) >= 0.25f) {
                        assert_true(back == x[i]);
                        exact_region++;
                    } else {
                        assert_true(fabs((double)back - x[i]) <= ldexp(1.0, -10 - e[b]));
                    }
                }
            }
        }
        assert_true(exact_region > 200 * N / 2); /* most elements sit within 2^10 of their block's largest */
    }
    free(x), free(hi), free(lo);
}

/* y = W · x with E4M3 weights: through the pair, each 128-block's sum scaled by its 2^-e, against
 * the exact x, in double. */
static void gemv_through_the_pair_stays_within_the_bound(void **state)
{
    enum { K = 4096, N = 64, B = 128 };
    float *x = malloc(sizeof(float) * K), *w = malloc(sizeof(float) * N * K);
    uint8_t *hi = malloc(K), *lo = malloc(K);
    int e[K / B];
    for (int i = 0; i < K; i++)
        x[i] = random_bf16(-12.0, 3.0);
    for (int i = 0; i < N * K; i++)
        w[i] = qs_e4m3_to_f32(qs_f32_to_e4m3((float)(uniform() * 2.0 - 1.0) * 448.0f));
    qs_fp8_pair_split(x, K, B, hi, lo, e);
    for (int n = 0; n < N; n++) {
        double exact = 0, pair = 0, bound = 0;
        for (int b = 0; b < K / B; b++) {
            double block_sum = 0, abs_w = 0;
            for (int k = b * B; k < (b + 1) * B; k++) {
                exact += (double)w[n * K + k] * x[k];
                block_sum += (double)w[n * K + k] * (qs_e4m3_to_f32(hi[k]) + (double)qs_e4m3_to_f32(lo[k]));
                abs_w += fabs(w[n * K + k]);
            }
            pair += ldexp(block_sum, -e[b]);
            bound += ldexp(abs_w, -10 - e[b]);
        }
        assert_true(fabs(pair - exact) <= bound);
    }
    free(x), free(w), free(hi), free(lo);
}

static void zero_row_gives_zero_codes(void **state)
{
    float x[3] = {0.0f, -0.0f, 0.0f};
    uint8_t hi[3], lo[3];
    int e = 1;
    qs_fp8_pair_split(x, 3, 3, hi, lo, &e);
    assert_int_equal(e, 0);
    for (int i = 0; i < 3; i++)
        assert_true(qs_fp8_pair_value(hi[i], lo[i], 0) == 0.0f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_bf16_value_alone_is_exact),
        cmocka_unit_test(rows_of_wide_range_are_exact_down_to_the_bound),
        cmocka_unit_test(gemv_through_the_pair_stays_within_the_bound),
        cmocka_unit_test(zero_row_gives_zero_codes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
