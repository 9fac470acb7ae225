/* test_step_dispatch.c — the per-step kernel choice (the plan of registry/step_plan.c, made real
 * by model/step_dispatch.c) with stand-in kernels
 * named like the real ones: under `auto`, W8A8 FP8 layers that selection gave to cublaslt also get
 * marlin, and qs_linear_apply takes marlin up to QSERVE_SMALL_STEP_TOKENS tokens and cublaslt
 * above (default 64 on a Hopper, 32 elsewhere; layers with scalar weight and input scales up to
 * 32 / 8); an explicit backend, --batch-invariant, a disabled marlin, another scheme, a layer marlin
 * cannot run, or QSERVE_SMALL_STEP_TOKENS=0 leave one kernel; a bad value is an error naming it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "model/model_internal.h"
#include "model/step_dispatch.h"

static int g_calls_cublaslt, g_calls_marlin, g_prepared_marlin;

/* A compute capability 9.0 device gets the Hopper thresholds only from a build with marlin's
 * sm_90a kernels (QS_HAVE_SM90A, the default CUDA build); other builds keep the general ones. */
#ifdef QS_HAVE_SM90A
enum {
    HOPPER_STEP_TOKENS = QS_SMALL_STEP_TOKENS_HOPPER,
    HOPPER_SCALAR_TOKENS = QS_SCALAR_SCALE_STEP_TOKENS_HOPPER,
    HOPPER_SCALAR_ORDERED_TOKENS = QS_SCALAR_SCALE_STEP_TOKENS_HOPPER_ORDERED
};
#else
enum {
    HOPPER_STEP_TOKENS = QS_SMALL_STEP_TOKENS,
    HOPPER_SCALAR_TOKENS = QS_SCALAR_SCALE_STEP_TOKENS,
    HOPPER_SCALAR_ORDERED_TOKENS = QS_SCALAR_SCALE_STEP_TOKENS
};
#endif

static int ok_supported(const qs_device_caps *d, char *why, size_t cap) { return 1; }
static int ok_linear(const qs_linear_desc *d, char *why, size_t cap) { return 1; }
/* marlin stand-in refuses layers named "*.odd" (as a real can_implement refuses a shape) */
static int marlin_linear(const qs_linear_desc *d, char *why, size_t cap)
{
    size_t n = strlen(d->name);
    return !(n > 4 && !strcmp(d->name + n - 4, ".odd"));
}
static int prep_cublaslt(const qs_linear_desc *d, void **state, qs_err *err)
{
    *state = malloc(1);
    return 0;
}
static int prep_marlin(const qs_linear_desc *d, void **state, qs_err *err)
{
    g_prepared_marlin++;
    *state = malloc(1);
    return 0;
}
static int apply_cublaslt(const void *s, const void *x, void *y, int64_t m, void *st, qs_err *e)
{
    g_calls_cublaslt++;
    return 0;
}
static int apply_marlin(const void *s, const void *x, void *y, int64_t m, void *st, qs_err *e)
{
    g_calls_marlin++;
    return 0;
}
static void release(void *state) { free(state); }

#define FP8_SCHEMES ((1u << QS_SCHEME_FP8_W8A8) | (1u << QS_SCHEME_FP8_BLOCK_W8A8))
static const qs_kernel CUBLASLT = {.name = "cublaslt", .platform = QS_PLATFORM_CUDA, .kind = QS_KIND_LINEAR,
                                   .schemes = FP8_SCHEMES | (1u << QS_SCHEME_BF16), .is_supported = ok_supported,
                                   .can_implement_linear = ok_linear, .prepare_linear = prep_cublaslt,
                                   .apply_linear = apply_cublaslt, .release = release};
static const qs_kernel MARLIN = {.name = "marlin", .platform = QS_PLATFORM_CUDA, .kind = QS_KIND_LINEAR,
                                 .schemes = FP8_SCHEMES | (1u << QS_SCHEME_W8A16_FP8), .is_supported = ok_supported,
                                 .can_implement_linear = marlin_linear, .prepare_linear = prep_marlin,
                                 .apply_linear = apply_marlin, .release = release};

typedef struct fixture {
    qs_model model;
    qs_config cfg;
    qs_selection sel;
    qs_linear lin[3];
    qs_linear *ptrs[3];
} fixture;

static void setup_fixture(fixture *f, qs_scheme scheme)
{
    memset(f, 0, sizeof *f);
    static const qs_kernel *const kernels[] = {&CUBLASLT, &MARLIN};
    qs_registry_set_test_kernels(kernels, 2);
    f->model.dev.platform = QS_PLATFORM_CUDA;
    f->model.dev.cc_major = 9;
    f->sel.kernel = &CUBLASLT;
    strcpy(f->sel.requested, "auto");
    strcpy(f->sel.used, "auto");
    const char *names[3] = {"model.layers.0.self_attn.qkv_proj", "model.layers.0.mlp.down_proj",
                            "model.layers.0.mlp.odd"};
    for (int i = 0; i < 3; i++) {
        snprintf(f->lin[i].desc.name, sizeof f->lin[i].desc.name, "%s", names[i]);
        f->lin[i].desc.scheme = scheme;
        f->lin[i].desc.n = 4096;
        f->lin[i].desc.k = 4096;
        f->lin[i].desc.wscale = scheme == QS_SCHEME_FP8_BLOCK_W8A8 ? QS_WSCALE_BLOCK : QS_WSCALE_CHANNEL;
        f->lin[i].desc.aquant = scheme == QS_SCHEME_FP8_BLOCK_W8A8 ? QS_AQUANT_DYNAMIC_GROUP : QS_AQUANT_DYNAMIC_TOKEN;
        f->lin[i].kernel = &CUBLASLT;
        prep_cublaslt(&f->lin[i].desc, &f->lin[i].state, NULL);
        f->ptrs[i] = &f->lin[i];
    }
    g_calls_cublaslt = g_calls_marlin = g_prepared_marlin = 0;
}

static void teardown_fixture(fixture *f)
{
    for (int i = 0; i < 3; i++) {
        release(f->lin[i].state);
        if (f->lin[i].plan.n_rows == 2)
            release(f->lin[i].plan.rows[0].state);
    }
    qs_registry_set_test_kernels(NULL, 0);
}

static int prepare(fixture *f, qs_scheme scheme)
{
    qs_err err = {{0}};
    return qs_step_dispatch_prepare(&f->model, &f->cfg, &f->sel, scheme, f->ptrs, 3, &err);
}

static void test_small_steps_take_marlin(void **st)
{
    unsetenv("QSERVE_SMALL_STEP_TOKENS");
    fixture f;
    setup_fixture(&f, QS_SCHEME_FP8_W8A8);
    assert_int_equal(prepare(&f, QS_SCHEME_FP8_W8A8), 0);
    assert_int_equal(g_prepared_marlin, 2); /* not the layer marlin refuses */
    assert_int_equal(f.lin[0].plan.n_rows, 2);
    assert_ptr_equal(f.lin[0].plan.rows[0].kernel, &MARLIN);
    assert_int_equal(f.lin[2].plan.n_rows, 1);
    assert_ptr_equal(f.lin[2].plan.rows[0].kernel, &CUBLASLT);
    assert_ptr_equal(f.lin[2].plan.rows[0].state, f.lin[2].state);
    qs_err err = {{0}};
    /* the fixture's device is a Hopper: marlin up to HOPPER_STEP_TOKENS (64 with sm_90a code) */
    int64_t steps[] = {1, 16, HOPPER_STEP_TOKENS, HOPPER_STEP_TOKENS + 1, 512};
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++)
        assert_int_equal(qs_linear_apply(&f.model, &f.lin[0], NULL, NULL, steps[i], QS_ACT_NATURAL, &err), 0);
    assert_int_equal(g_calls_marlin, 3);   /* 1, 16, HOPPER_STEP_TOKENS */
    assert_int_equal(g_calls_cublaslt, 2); /* one more, 512 */
    assert_int_equal(qs_linear_apply(&f.model, &f.lin[2], NULL, NULL, 1, QS_ACT_NATURAL, &err), 0);
    assert_int_equal(g_calls_cublaslt, 3); /* the refused layer stays on cublaslt */
    teardown_fixture(&f);
}

/* One weight scale and one input scale: cuBLASLt's scalar-scale FP8 GEMM is faster than its
 * per-channel one, and marlin beat it only up to 32 tokens per step on a Hopper (8 elsewhere), or
 * 64 there with activation orders, so those layers take marlin up to there; a per-token input
 * keeps the scheme's 64 (32). */
static void test_scalar_scale_layers_join_for_fewer_tokens(void **st)
{
    unsetenv("QSERVE_SMALL_STEP_TOKENS");
    for (int run = 0; run < 4; run++) {
        const int cc = 8 + run % 2;
        const bool orders = run >= 2;
        fixture f;
        setup_fixture(&f, QS_SCHEME_FP8_W8A8);
        f.model.dev.cc_major = cc;
        f.model.act_order = orders;
        f.lin[0].desc.wscale = QS_WSCALE_TENSOR;
        f.lin[0].desc.aquant = QS_AQUANT_STATIC_TENSOR;
        f.lin[1].desc.wscale = QS_WSCALE_TENSOR;
        f.lin[1].desc.aquant = QS_AQUANT_DYNAMIC_TOKEN;
        assert_int_equal(prepare(&f, QS_SCHEME_FP8_W8A8), 0);
        const int scalar = cc == 9 ? (orders ? HOPPER_SCALAR_ORDERED_TOKENS : HOPPER_SCALAR_TOKENS)
                                   : QS_SCALAR_SCALE_STEP_TOKENS;
        const int scheme = cc == 9 ? HOPPER_STEP_TOKENS : QS_SMALL_STEP_TOKENS;
        assert_ptr_equal(f.lin[0].plan.rows[0].kernel, &MARLIN);
        assert_int_equal(f.lin[0].plan.rows[0].max_tokens, scalar);
        assert_ptr_equal(f.lin[1].plan.rows[0].kernel, &MARLIN);
        assert_int_equal(f.lin[1].plan.rows[0].max_tokens, scheme);
        assert_int_equal(g_prepared_marlin, 2);
        qs_err err;
        assert_int_equal(qs_linear_apply(&f.model, &f.lin[0], NULL, NULL, scalar, QS_ACT_NATURAL, &err), 0);
        assert_int_equal(qs_linear_apply(&f.model, &f.lin[0], NULL, NULL, scalar + 1, QS_ACT_NATURAL, &err), 0);
        assert_int_equal(g_calls_marlin, 1);
        assert_int_equal(g_calls_cublaslt, 1);
        /* a lower QSERVE_SMALL_STEP_TOKENS still caps them */
        assert_int_equal(qs_step_plan_layer_tokens(&f.lin[0].desc, &f.model.dev, 4, orders), 4);
        assert_int_equal(qs_step_plan_layer_tokens(&f.lin[1].desc, &f.model.dev, 4, orders), 4);
        teardown_fixture(&f);
    }
}

static void test_threshold_from_environment(void **st)
{
    fixture f;
    setup_fixture(&f, QS_SCHEME_FP8_BLOCK_W8A8);
    setenv("QSERVE_SMALL_STEP_TOKENS", "8", 1);
    assert_int_equal(prepare(&f, QS_SCHEME_FP8_BLOCK_W8A8), 0);
    assert_int_equal(f.lin[1].plan.rows[0].max_tokens, 8);
    teardown_fixture(&f);

    setup_fixture(&f, QS_SCHEME_FP8_W8A8);
    setenv("QSERVE_SMALL_STEP_TOKENS", "0", 1);
    assert_int_equal(prepare(&f, QS_SCHEME_FP8_W8A8), 0);
    assert_int_equal(g_prepared_marlin, 0);
    teardown_fixture(&f);

    setup_fixture(&f, QS_SCHEME_FP8_W8A8);
    setenv("QSERVE_SMALL_STEP_TOKENS", "lots", 1);
    qs_err err = {{0}};
    assert_int_equal(qs_step_dispatch_prepare(&f.model, &f.cfg, &f.sel, QS_SCHEME_FP8_W8A8, f.ptrs, 3, &err), -1);
    assert_non_null(strstr(err.msg, "QSERVE_SMALL_STEP_TOKENS"));
    assert_non_null(strstr(err.msg, "lots"));
    unsetenv("QSERVE_SMALL_STEP_TOKENS");
    teardown_fixture(&f);
}

static void test_one_kernel_otherwise(void **st)
{
    unsetenv("QSERVE_SMALL_STEP_TOKENS");
    fixture f;
    setup_fixture(&f, QS_SCHEME_FP8_W8A8); /* an explicit --linear-backend cublaslt */
    strcpy(f.sel.requested, "cublaslt");
    assert_int_equal(prepare(&f, QS_SCHEME_FP8_W8A8), 0);
    assert_int_equal(g_prepared_marlin, 0);
    teardown_fixture(&f);

    setup_fixture(&f, QS_SCHEME_FP8_W8A8);
    f.cfg.kernels.batch_invariant = true;
    assert_int_equal(prepare(&f, QS_SCHEME_FP8_W8A8), 0);
    assert_int_equal(g_prepared_marlin, 0);
    teardown_fixture(&f);

    setup_fixture(&f, QS_SCHEME_FP8_W8A8);
    strcpy(f.cfg.kernels.disabled_kernels[0], "marlin");
    f.cfg.kernels.n_disabled = 1;
    assert_int_equal(prepare(&f, QS_SCHEME_FP8_W8A8), 0);
    assert_int_equal(g_prepared_marlin, 0);
    teardown_fixture(&f);

    setup_fixture(&f, QS_SCHEME_BF16); /* cublaslt BF16: nothing to dispatch */
    assert_int_equal(prepare(&f, QS_SCHEME_BF16), 0);
    assert_int_equal(g_prepared_marlin, 0);
    teardown_fixture(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_steps_take_marlin),
        cmocka_unit_test(test_scalar_scale_layers_join_for_fewer_tokens),
        cmocka_unit_test(test_threshold_from_environment),
        cmocka_unit_test(test_one_kernel_otherwise),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
