/* test_backends.c — the backend list (src/device/backends.c): the CPU backend is always there and
 * first, each backend answers for its own platform, its graph hooks are its ops table's, the
 * registry's descriptors are exactly the backends' lists in order, the CPU backend's capability
 * and memory hooks describe this machine, and a platform this build lacks is refused by name. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "cpu/backend_cpu.h"
#include "device/backends.h"
#include "registry/registry.h"

static void cpu_backend_is_listed_first(void **state)
{
    int n = 0;
    const qs_backend *const *all = qs_backends(&n);
    assert_true(n >= 1);
    assert_ptr_equal(all[0], &qs_backend_cpu);
    assert_string_equal(all[0]->name, "cpu");
    assert_int_equal(all[0]->platform, QS_PLATFORM_CPU);
#ifdef QS_HAVE_CUDA
    assert_int_equal(n, 2);
    assert_string_equal(all[1]->name, "cuda");
#else
    assert_int_equal(n, 1);
#endif
}

static void each_backend_answers_for_its_platform(void **state)
{
    int n = 0;
    const qs_backend *const *all = qs_backends(&n);
    for (int i = 0; i < n; i++) {
        assert_ptr_equal(qs_backend_for_platform(all[i]->platform), all[i]);
        qs_err e = {{0}};
        const qs_ops *ops = qs_ops_for_platform(all[i]->platform, &e);
        assert_non_null(ops);
        assert_ptr_equal(ops, all[i]->ops());
        assert_int_equal(ops->platform, all[i]->platform);
        assert_ptr_equal(all[i]->graph, ops->graph);
        assert_true(all[i]->kernel_count >= 1);
        for (int k = 0; k < all[i]->kernel_count; k++)
            assert_int_equal(all[i]->kernels[k]->platform, all[i]->platform);
    }
    assert_ptr_equal(qs_ops_for_platform(QS_PLATFORM_CPU, NULL), qs_ops_cpu());
    assert_null(qs_backend_for_platform(QS_PLATFORM_CPU)->graph);
}

static void a_platform_not_built_is_refused(void **state)
{
#ifdef QS_HAVE_CUDA
    skip();
#else
    qs_err e = {{0}};
    assert_null(qs_backend_for_platform(QS_PLATFORM_CUDA));
    assert_null(qs_ops_for_platform(QS_PLATFORM_CUDA, &e));
    assert_non_null(strstr(e.msg, "built without CUDA"));
    assert_non_null(strstr(e.msg, "--device cpu"));
#endif
}

static void registry_holds_every_backend_kernel_in_order(void **state)
{
    int n = 0, nk = 0, expected = 0;
    const qs_backend *const *all = qs_backends(&n);
    const qs_kernel *const *kernels = qs_registry_kernels(&nk);
    for (int i = 0; i < n; i++)
        for (int k = 0; k < all[i]->kernel_count; k++, expected++) {
            assert_true(expected < nk);
            assert_ptr_equal(kernels[expected], all[i]->kernels[k]);
        }
    assert_int_equal(nk, expected);
    assert_string_equal(kernels[0]->name, "reference");
    assert_int_equal(kernels[0]->kind, QS_KIND_LINEAR);
    assert_string_equal(kernels[1]->name, "reference");
    assert_int_equal(kernels[1]->kind, QS_KIND_MOE);
    int again = 0;
    assert_ptr_equal(qs_backends_kernels(&again), kernels);
    assert_int_equal(again, nk);
}

static void cpu_backend_describes_this_machine(void **state)
{
    const qs_backend *cpu = qs_backend_for_platform(QS_PLATFORM_CPU);
    assert_int_equal(cpu->device_count(), 1);
    assert_string_equal(cpu->unavailable_reason(), "");
    qs_device_caps caps;
    qs_err e = {{0}};
    assert_int_equal(cpu->device_caps(0, &caps, &e), 0);
    assert_int_equal(caps.platform, QS_PLATFORM_CPU);
    assert_non_null(strstr(caps.name, "CPU ("));
    assert_true(caps.memory_bytes > 0);
    assert_int_equal(cpu->device_caps(1, &caps, &e), -1);
    assert_non_null(strstr(e.msg, "one device"));
    size_t free_b = 0, total_b = 0;
    assert_int_equal(cpu->mem_info(&free_b, &total_b, &e), 0);
    assert_true(total_b > 0);
    assert_true(free_b <= total_b);
    assert_int_equal(total_b, caps.memory_bytes);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cpu_backend_is_listed_first),
        cmocka_unit_test(each_backend_answers_for_its_platform),
        cmocka_unit_test(a_platform_not_built_is_refused),
        cmocka_unit_test(registry_holds_every_backend_kernel_in_order),
        cmocka_unit_test(cpu_backend_describes_this_machine),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
