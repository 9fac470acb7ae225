/* test_rank_gpu.c — a tensor-parallel rank's GPU (src/parallel/rank_gpu.c): with the user's
 * CUDA_VISIBLE_DEVICES list, local rank r takes entry r mod the list's length and the variable
 * is narrowed to it; fewer GPUs than ranks on the host is an error saying so. In a build without
 * CUDA nothing is chosen and the variable is left alone. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "parallel/rank_gpu.h"

static void from_the_users_list(void **state)
{
    qs_err e = {{0}};
    int gpu = -2;
    setenv("CUDA_VISIBLE_DEVICES", "3,5", 1);
    int rc = qs_rank_gpu_select(1, 2, &gpu, &e);
#ifdef QS_HAVE_CUDA
    assert_int_equal(rc, 1);
    assert_int_equal(gpu, 1);
    assert_string_equal(getenv("CUDA_VISIBLE_DEVICES"), "5");
    setenv("CUDA_VISIBLE_DEVICES", "GPU-a,GPU-b,GPU-c", 1); /* UUIDs too; rank 2 of 3 */
    assert_int_equal(qs_rank_gpu_select(2, 3, &gpu, &e), 1);
    assert_string_equal(getenv("CUDA_VISIBLE_DEVICES"), "GPU-c");
#else
    assert_int_equal(rc, 0);
    assert_int_equal(gpu, -1);
    assert_string_equal(getenv("CUDA_VISIBLE_DEVICES"), "3,5");
#endif
}

static void fewer_gpus_than_ranks(void **state)
{
    qs_err e = {{0}};
    int gpu = -2;
    setenv("CUDA_VISIBLE_DEVICES", "0", 1);
    int rc = qs_rank_gpu_select(1, 2, &gpu, &e);
#ifdef QS_HAVE_CUDA
    assert_int_equal(rc, -1);
    assert_non_null(strstr(e.msg, "2 ranks on this host but 1 GPU"));
    assert_non_null(strstr(e.msg, "--device cpu"));
#else
    assert_int_equal(rc, 0);
#endif
    assert_string_equal(getenv("CUDA_VISIBLE_DEVICES"), "0");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(from_the_users_list),
        cmocka_unit_test(fewer_gpus_than_ranks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
