/* test_device.c — device choice (src/device): the CPU device, --device auto on whatever machine
 * runs the test, --device cuda without a usable GPU, and the pretend GPUs of
 * --assume-compute-capability. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "cpu/backend_cpu.h"
#include "device/backends.h"
#include "device/device.h"

static int cuda_devices(void)
{
    const qs_backend *cuda = qs_backend_for_platform(QS_PLATFORM_CUDA);
    return cuda ? cuda->device_count() : 0;
}

static void cpu_is_always_available(void **state)
{
    qs_device_caps d;
    qs_err e;
    assert_int_equal(qs_device_detect(QS_DEVICE_CPU, &d, &e), 0);
    assert_int_equal(d.platform, QS_PLATFORM_CPU);
    assert_non_null(strstr(d.name, "CPU ("));
    assert_true(d.sm_count >= 1);
    assert_false(d.assumed);
    qs_cpu_device_caps(3, &d);
    assert_string_equal(d.name, "CPU (3 threads)");
}

static void auto_takes_the_gpu_when_there_is_one(void **state)
{
    qs_device_caps d;
    qs_err e;
    assert_int_equal(qs_device_detect(QS_DEVICE_AUTO, &d, &e), 0);
    if (cuda_devices() > 0) {
        assert_int_equal(d.platform, QS_PLATFORM_CUDA);
        assert_true(d.cc_major >= 7);
        assert_true(d.sm_count > 0);
        assert_true(d.memory_bytes > 0);
    } else {
        assert_int_equal(d.platform, QS_PLATFORM_CPU);
    }
}

static void cuda_without_gpu_says_why(void **state)
{
    qs_device_caps d;
    qs_err e;
    if (cuda_devices() > 0) {
        assert_int_equal(qs_device_detect(QS_DEVICE_CUDA, &d, &e), 0);
        assert_int_equal(d.platform, QS_PLATFORM_CUDA);
        return;
    }
    assert_int_equal(qs_device_detect(QS_DEVICE_CUDA, &d, &e), -1);
    assert_non_null(strstr(e.msg, "--device cuda"));
    assert_non_null(strstr(e.msg, "--device cpu"));
#ifdef QS_HAVE_CUDA
    assert_non_null(strstr(e.msg, "no usable CUDA GPU"));
    const qs_backend *cuda = qs_backend_for_platform(QS_PLATFORM_CUDA);
    assert_true(strlen(cuda->unavailable_reason()) > 0);
    assert_int_equal(cuda->device_caps(0, &d, &e), -1);
    assert_non_null(strstr(e.msg, "CUDA device 0"));
#else
    assert_non_null(strstr(e.msg, "built without CUDA"));
#endif
}

static void assumed_capabilities_parse(void **state)
{
    struct {
        const char *text;
        int major, minor;
    } good[] = {{"8.0", 8, 0}, {"8.9", 8, 9}, {"9.0", 9, 0}, {"10.0", 10, 0}, {"89", 8, 9}, {"sm_90", 9, 0},
                {"12.1", 12, 1}};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        qs_device_caps d;
        qs_err e;
        assert_int_equal(qs_device_assume(good[i].text, &d, &e), 0);
        assert_int_equal(d.platform, QS_PLATFORM_CUDA);
        assert_int_equal(d.cc_major, good[i].major);
        assert_int_equal(d.cc_minor, good[i].minor);
        assert_true(d.assumed);
    }
    const char *bad[] = {"", "nine", "8.", ".9", "8.x", "8.10", "1.0", "-8.0", "8.0.1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        qs_device_caps d;
        qs_err e;
        if (qs_device_assume(bad[i], &d, &e) != -1)
            fail_msg("'%s' was accepted", bad[i]);
        assert_non_null(strstr(e.msg, "--assume-compute-capability"));
    }
    qs_device_caps d;
    qs_err e;
    assert_int_equal(qs_device_assume("9.0", &d, &e), 0);
    char buf[160];
    qs_device_describe(&d, buf, sizeof buf);
    assert_string_equal(buf, "CUDA GPU (compute capability 9.0, assumed)");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cpu_is_always_available),
        cmocka_unit_test(auto_takes_the_gpu_when_there_is_one),
        cmocka_unit_test(cuda_without_gpu_says_why),
        cmocka_unit_test(assumed_capabilities_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
