/* test_marlin_layout.c — the `marlin` packed layout on the CPU (cuda/marlin_selfcheck.cu): the
 * packer, the kernels' bit extraction and scale conversion, and the k permutation inside a unit,
 * through an emulated mma.m16n8k16, must give the plain FP8 and NVFP4 products. Skipped where the
 * CUDA code is not built (no nvcc). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>

#ifdef QS_HAVE_CUDA
#include "marlin_selfcheck.h"
#endif

static void packed_layout_multiplies_exactly(void **state)
{
    (void)state;
#ifdef QS_HAVE_CUDA
    double fp8, nvfp4;
    assert_int_equal(qs_marlin_layout_selfcheck(&fp8, &nvfp4), 0);
    printf("marlin layout: FP8 relative error %.3g, NVFP4 %.3g\n", fp8, nvfp4);
    assert_true(fp8 < 1e-6);
    assert_true(nvfp4 < 1e-6);
#else
    skip();
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(packed_layout_multiplies_exactly)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
