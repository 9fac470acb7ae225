/* test_marlin_layout.c — the `marlin` packed layout on the CPU (cuda/marlin_selfcheck.cu): the
 * packer, the kernels' bit extraction and scale conversion, and the k permutation inside a unit,
 * through an emulated mma.m16n8k16, must give the plain FP8 and NVFP4 products, with the
 * activations in the small-M kernel's order and in the wgmma kernel's permuted copy. Skipped where
 * the CUDA code is not built (no nvcc). */
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
    for (int wgmma_order = 0; wgmma_order <= 1; wgmma_order++) {
        double fp8, nvfp4;
        assert_int_equal(qs_marlin_layout_selfcheck(wgmma_order, &fp8, &nvfp4), 0);
        printf("marlin layout (%s): FP8 relative error %.3g, NVFP4 %.3g\n",
               wgmma_order ? "wgmma permuted copy" : "lane chunks", fp8, nvfp4);
        assert_true(fp8 < 1e-6);
        assert_true(nvfp4 < 1e-6);
    }
#else
    skip();
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(packed_layout_multiplies_exactly)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
