/* test_step_plan.c — a layer's plan (registry/step_plan.c) against the rules it replaced. Before
 * the table, model/step_dispatch.c decided by name comparisons (the chosen kernel "cublaslt", the
 * request "auto", a disabled "marlin", the FP8 schemes) and two threshold functions; those rules
 * are kept here as they were, as the reference. Over every device class (compute capability 7.5,
 * 8.0, 8.9, 9.0, 10.0), scheme, chosen kernel, requested backend, --batch-invariant, disabled
 * kernels, weight and input scale layouts, activation orders and QSERVE_SMALL_STEP_TOKENS values,
 * the plan's rows must be the old choice: marlin up to the old limit where the old rule gave the
 * layer marlin, the chosen kernel alone elsewhere; a bad variable fails both ways. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "registry/step_plan.h"

static int ok_supported(const qs_device_caps *d, char *why, size_t cap) { return 1; }
/* marlin needs compute capability 8.0 */
static int marlin_supported(const qs_device_caps *d, char *why, size_t cap) { return d->cc_major >= 8; }
static int ok_linear(const qs_linear_desc *d, char *why, size_t cap) { return 1; }
/* marlin refuses layers named "*.odd" (as a real can_implement refuses a shape) */
static int marlin_linear(const qs_linear_desc *d, char *why, size_t cap)
{
    size_t n = strlen(d->name);
    return !(n > 4 && !strcmp(d->name + n - 4, ".odd"));
}

#define ALL_SCHEMES ((1u << QS_SCHEME_COUNT) - 1)
static const qs_kernel CUBLASLT = {.name = "cublaslt", .platform = QS_PLATFORM_CUDA, .kind = QS_KIND_LINEAR,
                                   .schemes = ALL_SCHEMES, .is_supported = ok_supported,
                                   .can_implement_linear = ok_linear};
static const qs_kernel MARLIN = {.name = "marlin", .platform = QS_PLATFORM_CUDA, .kind = QS_KIND_LINEAR,
                                 .schemes = ALL_SCHEMES & ~(1u << QS_SCHEME_BF16), .is_supported = marlin_supported,
                                 .can_implement_linear = marlin_linear};
static const qs_kernel EMULATION = {.name = "emulation", .platform = QS_PLATFORM_CUDA, .kind = QS_KIND_LINEAR,
                                    .schemes = ALL_SCHEMES, .is_supported = ok_supported,
                                    .can_implement_linear = ok_linear};

/* ---- the old rules (model/step_dispatch.c before the table), as they were; which devices get
 * the Hopper limits and how QSERVE_SMALL_STEP_TOKENS is read did not change and are asked of
 * step_plan.c ---- */
static bool old_hopper(const qs_device_caps *dev) { return qs_step_plan_hopper(dev); }

/* (the variable's parsing did not change either: asked of step_plan.c when it is set) */
static int old_small_step_tokens(const qs_device_caps *dev, qs_err *err)
{
    const char *v = getenv("QSERVE_SMALL_STEP_TOKENS");
    if (!v || !*v)
        return old_hopper(dev) ? 64 : 32;
    return qs_step_plan_scheme_tokens(dev, err);
}

static bool old_marlin_disabled(const qs_kernel_config *kc)
{
    for (int i = 0; i < kc->n_disabled; i++)
        if (!strcmp(kc->disabled_kernels[i], "marlin"))
            return true;
    return false;
}

static int old_dispatch_tokens(const qs_kernel_config *kc, const qs_device_caps *dev, const qs_selection *sel,
                               qs_scheme scheme, qs_err *err)
{
    int max_tokens = old_small_step_tokens(dev, err);
    if (max_tokens <= 0)
        return max_tokens;
    if (!sel->kernel || strcmp(sel->kernel->name, "cublaslt") != 0 || strcmp(sel->requested, "auto") != 0 ||
        kc->batch_invariant || old_marlin_disabled(kc) ||
        (scheme != QS_SCHEME_FP8_W8A8 && scheme != QS_SCHEME_FP8_BLOCK_W8A8))
        return 0;
    const qs_kernel *marlin = qs_registry_find_for_scheme("marlin", QS_PLATFORM_CUDA, QS_KIND_LINEAR, scheme);
    char why[QS_REASON_MAX] = "";
    if (!marlin || !marlin->is_supported(dev, why, sizeof why))
        return 0;
    return max_tokens;
}

static int old_layer_tokens(const qs_linear_desc *d, const qs_device_caps *dev, int max_tokens, bool act_orders)
{
    bool scalar_scales = d->wscale == QS_WSCALE_TENSOR &&
                         (d->aquant == QS_AQUANT_STATIC_TENSOR || d->aquant == QS_AQUANT_DYNAMIC_TENSOR);
    int cap = !old_hopper(dev) ? 8 : act_orders ? 64 : 32;
    return scalar_scales && max_tokens > cap ? cap : max_tokens;
}
/* ---- end of the old rules ---- */

static void plan_matches_the_old_rules(void **state)
{
    (void)state;
    static const qs_kernel *const kernels[] = {&CUBLASLT, &MARLIN, &EMULATION};
    qs_registry_set_test_kernels(kernels, 3);
    static const int ccs[][2] = {{7, 5}, {8, 0}, {8, 9}, {9, 0}, {10, 0}};
    static const char *const envs[] = {NULL, "0", "1", "8", "40", "100", "4096", "lots", "5000"};
    static const char *const requests[] = {"auto", "cublaslt", "marlin"};
    static const qs_kernel *const chosen[] = {&CUBLASLT, &MARLIN, &EMULATION};
    static const char *const names[] = {"model.layers.0.self_attn.qkv_proj", "model.layers.0.mlp.odd"};
    long cases = 0, with_marlin = 0;
    for (size_t e = 0; e < sizeof envs / sizeof envs[0]; e++) {
        if (envs[e])
            setenv("QSERVE_SMALL_STEP_TOKENS", envs[e], 1);
        else
            unsetenv("QSERVE_SMALL_STEP_TOKENS");
        for (size_t c = 0; c < sizeof ccs / sizeof ccs[0]; c++)
            for (int s = 0; s < QS_SCHEME_COUNT; s++)
                for (size_t k = 0; k < sizeof chosen / sizeof chosen[0]; k++)
                    for (size_t r = 0; r < sizeof requests / sizeof requests[0]; r++)
                        for (int flags = 0; flags < 4; flags++)
                            for (int ws = QS_WSCALE_TENSOR; ws <= QS_WSCALE_BLOCK; ws++)
                                for (int aq = 0; aq <= QS_AQUANT_DYNAMIC_GROUP; aq++)
                                    for (int orders = 0; orders < 2; orders++)
                                        for (size_t nm = 0; nm < 2; nm++) {
                                            qs_device_caps dev = {.platform = QS_PLATFORM_CUDA,
                                                                  .cc_major = ccs[c][0], .cc_minor = ccs[c][1]};
                                            qs_kernel_config kc;
                                            memset(&kc, 0, sizeof kc);
                                            kc.batch_invariant = flags & 1;
                                            if (flags & 2) {
                                                strcpy(kc.disabled_kernels[0], "marlin");
                                                kc.n_disabled = 1;
                                            }
                                            qs_selection sel;
                                            memset(&sel, 0, sizeof sel);
                                            sel.kernel = chosen[k];
                                            strcpy(sel.requested, requests[r]);
                                            qs_linear_desc d;
                                            memset(&d, 0, sizeof d);
                                            snprintf(d.name, sizeof d.name, "%s", names[nm]);
                                            d.scheme = (qs_scheme)s;
                                            d.wscale = (qs_weight_scale_layout)ws;
                                            d.aquant = (qs_act_quant)aq;
                                            qs_err old_err = {{0}}, new_err = {{0}};
                                            int tokens = old_dispatch_tokens(&kc, &dev, &sel, (qs_scheme)s, &old_err);
                                            qs_plan p;
                                            int rc = qs_step_plan_for_layer(&kc, &dev, &sel, &d, orders, &p, &new_err);
                                            cases++;
                                            if (tokens < 0) {
                                                assert_int_equal(rc, -1);
                                                assert_string_equal(new_err.msg, old_err.msg);
                                                continue;
                                            }
                                            assert_int_equal(rc, 0);
                                            /* the old loader prepared marlin only where it can implement the layer */
                                            char why[QS_REASON_MAX];
                                            bool old_marlin = tokens > 0 && MARLIN.can_implement_linear(&d, why, sizeof why);
                                            assert_int_equal(p.n_rows, old_marlin ? 2 : 1);
                                            assert_ptr_equal(p.rows[p.n_rows - 1].kernel, chosen[k]);
                                            assert_true(p.rows[p.n_rows - 1].max_tokens == INT64_MAX);
                                            if (old_marlin) {
                                                with_marlin++;
                                                assert_ptr_equal(p.rows[0].kernel, &MARLIN);
                                                assert_int_equal(p.rows[0].max_tokens,
                                                                 old_layer_tokens(&d, &dev, tokens, orders));
                                            }
                                        }
    }
    unsetenv("QSERVE_SMALL_STEP_TOKENS");
    qs_registry_set_test_kernels(NULL, 0);
    print_message("%ld cases agree, %ld of them with a marlin row\n", cases, with_marlin);
    assert_true(with_marlin > 100);
    assert_true(cases > 100000);
}

/* The rows read by token count: each row serves steps up to its max_tokens, the last every larger. */
static void rows_by_token_count(void **state)
{
    (void)state;
    int a, b;
    qs_plan p = {2, {{64, &MARLIN, &a}, {INT64_MAX, &CUBLASLT, &b}}};
    assert_ptr_equal(qs_plan_row_for(&p, 1)->state, &a);
    assert_ptr_equal(qs_plan_row_for(&p, 64)->state, &a);
    assert_ptr_equal(qs_plan_row_for(&p, 65)->state, &b);
    assert_ptr_equal(qs_plan_row_for(&p, 1 << 20)->kernel, &CUBLASLT);
    qs_plan empty = {0, {{0}}};
    assert_null(qs_plan_row_for(&empty, 1));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(plan_matches_the_old_rules),
        cmocka_unit_test(rows_by_token_count),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
