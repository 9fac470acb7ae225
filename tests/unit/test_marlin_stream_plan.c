/* test_marlin_stream_plan.c — the stream kernel's work split and activation rewrite on the CPU
 * (cuda/marlin_stream_check.cu): every layer of up to 64 groups x 128 stages (and the Llama-3.1-8B
 * group counts) on 1..132 CTAs keeps the invariants its split-group sums rely on — shares cover
 * every item once, owner_of is right, partial-sum slots suffice, publishing owners are exactly the
 * shares that start inside a group; and the kernel's rewrite of a stage's activations puts each one where the packed weight it multiplies
 * sits (FP8 and NVFP4, 16 / 32 / 64 tokens); and the CTA count shares the items evenly where it
 * leaves SMs idle (even_share_ctas). Skipped where the CUDA code is not built (no nvcc). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>

#ifdef QS_HAVE_CUDA
#include "marlin_stream_check.h"
#endif

#ifdef QS_HAVE_CUDA
/* A host check's verdict: 0, or the violation it names printed before the test fails. */
static void expect_no_violation(int rc, const char *why)
{
    if (rc)
        print_error("%s\n", why);
    assert_int_equal(rc, 0);
}
#endif

static void stream_split_keeps_its_invariants(void **state)
{
    (void)state;
#ifdef QS_HAVE_CUDA
    char why[256] = "";
    expect_no_violation(qs_marlin_stream_plan_check(64, 128, 132, why, sizeof why), why);
#else
    skip();
#endif
}

static void stream_ctas_share_evenly(void **state)
{
    (void)state;
#ifdef QS_HAVE_CUDA
    char why[256] = "";
    expect_no_violation(qs_marlin_stream_ctas_check(20000, why, sizeof why), why);
#else
    skip();
#endif
}

static void stream_rewrite_undoes_the_packing(void **state)
{
    (void)state;
#ifdef QS_HAVE_CUDA
    char why[256] = "";
    expect_no_violation(qs_marlin_stream_rewrite_check(why, sizeof why), why);
#else
    skip();
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(stream_split_keeps_its_invariants),
        cmocka_unit_test(stream_ctas_share_evenly),
        cmocka_unit_test(stream_rewrite_undoes_the_packing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
