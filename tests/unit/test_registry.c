/* test_registry.c — every selection rule of ../shared/BACKENDS.md (src/registry), on the real CPU
 * reference kernels and on test-only CUDA descriptors named like the real ones (cublaslt, marlin,
 * emulation) with fake device capabilities sm_75, sm_80, sm_89, sm_90 and sm_100. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "config/config.h"
#include "cpu/reference_kernels.h"
#include "registry/registry.h"

#define BIT(s) (1u << (s))
#define FP8_SCHEMES (BIT(QS_SCHEME_FP8_W8A8) | BIT(QS_SCHEME_FP8_BLOCK_W8A8) | BIT(QS_SCHEME_W8A16_FP8))
#define FP4_SCHEMES (BIT(QS_SCHEME_NVFP4_W4A4) | BIT(QS_SCHEME_NVFP4_W4A16))
#define ALL_SCHEMES (BIT(QS_SCHEME_BF16) | FP8_SCHEMES | FP4_SCHEMES)

/* --- test-only CUDA descriptors --- */
static int need_cc(const qs_device_caps *d, int cc, char *why, size_t cap)
{
    int have = d->cc_major * 10 + d->cc_minor;
    if (d->platform != QS_PLATFORM_CUDA) {
        snprintf(why, cap, "requires a CUDA GPU.");
        return 0;
    }
    if (have < cc) {
        snprintf(why, cap, "requires compute capability %d.%d, this GPU is %d.%d.", cc / 10, cc % 10, d->cc_major,
                 d->cc_minor);
        return 0;
    }
    return 1;
}
static int any_cuda(const qs_device_caps *d, char *why, size_t cap) { return need_cc(d, 0, why, cap); }
static int sm80(const qs_device_caps *d, char *why, size_t cap) { return need_cc(d, 80, why, cap); }
static int sm89(const qs_device_caps *d, char *why, size_t cap) { return need_cc(d, 89, why, cap); }
static int sm100(const qs_device_caps *d, char *why, size_t cap) { return need_cc(d, 100, why, cap); }
static int n_multiple_of_16(const qs_linear_desc *d, char *why, size_t cap)
{
    if (d->n % 16) {
        snprintf(why, cap, "requires out_features to be a multiple of 16, got %lld.", (long long)d->n);
        return 0;
    }
    return 1;
}

static const qs_kernel T_CUBLASLT_BF16 = {.name = "cublaslt", .platform = QS_PLATFORM_CUDA, .kind = QS_KIND_LINEAR,
                                          .schemes = BIT(QS_SCHEME_BF16), .is_supported = any_cuda};
static const qs_kernel T_CUBLASLT_FP8 = {.name = "cublaslt", .platform = QS_PLATFORM_CUDA, .kind = QS_KIND_LINEAR,
                                         .schemes = BIT(QS_SCHEME_FP8_W8A8) | BIT(QS_SCHEME_FP8_BLOCK_W8A8),
                                         .is_supported = sm89, .can_implement_linear = n_multiple_of_16};
static const qs_kernel T_CUBLASLT_FP4 = {.name = "cublaslt", .platform = QS_PLATFORM_CUDA, .kind = QS_KIND_LINEAR,
                                         .schemes = BIT(QS_SCHEME_NVFP4_W4A4), .is_supported = sm100};
static const qs_kernel T_MARLIN = {.name = "marlin", .platform = QS_PLATFORM_CUDA, .kind = QS_KIND_LINEAR,
                                   .schemes = FP8_SCHEMES | FP4_SCHEMES, .is_supported = sm80};
static const qs_kernel T_EMULATION = {.name = "emulation", .platform = QS_PLATFORM_CUDA, .kind = QS_KIND_LINEAR,
                                      .schemes = ALL_SCHEMES, .batch_invariant = true, .is_supported = any_cuda};
static const qs_kernel T_CUBLASLT_MOE = {.name = "cublaslt", .platform = QS_PLATFORM_CUDA, .kind = QS_KIND_MOE,
                                         .schemes = BIT(QS_SCHEME_BF16) | BIT(QS_SCHEME_FP8_W8A8) |
                                                    BIT(QS_SCHEME_FP8_BLOCK_W8A8),
                                         .is_supported = sm89};
static const qs_kernel T_MARLIN_MOE = {.name = "marlin", .platform = QS_PLATFORM_CUDA, .kind = QS_KIND_MOE,
                                       .schemes = FP8_SCHEMES | FP4_SCHEMES, .is_supported = sm80};
/* No emulation MoE descriptor: it stands for a kernel not built into this binary. */
static const qs_kernel *const TEST_KERNELS[] = {
    &qs_kernel_reference_linear, &qs_kernel_reference_moe, &T_CUBLASLT_BF16, &T_CUBLASLT_FP8, &T_CUBLASLT_FP4,
    &T_MARLIN,                   &T_EMULATION,             &T_CUBLASLT_MOE,  &T_MARLIN_MOE,
};

static qs_device_caps gpu(int major, int minor)
{
    qs_device_caps d = {.platform = QS_PLATFORM_CUDA, .cc_major = major, .cc_minor = minor, .sm_count = 100};
    snprintf(d.name, sizeof d.name, "Test GPU sm_%d%d", major, minor);
    return d;
}

static qs_device_caps cpu(void)
{
    qs_device_caps d = {.platform = QS_PLATFORM_CPU};
    snprintf(d.name, sizeof d.name, "CPU (test)");
    return d;
}

static int use_test_kernels(void **state)
{
    qs_registry_set_test_kernels(TEST_KERNELS, (int)(sizeof TEST_KERNELS / sizeof TEST_KERNELS[0]));
    return 0;
}

static int use_builtin_kernels(void **state)
{
    qs_registry_set_test_kernels(NULL, 0);
    return 0;
}

static qs_kernel_config kc_auto(void)
{
    qs_kernel_config kc;
    qs_kernel_config_defaults(&kc);
    return kc;
}

static const qs_candidate *candidate(const qs_selection *s, const char *name)
{
    for (int i = 0; i < s->n_candidates; i++)
        if (!strcmp(s->candidates[i].name, name))
            return &s->candidates[i];
    fail_msg("no candidate %s", name);
    return NULL;
}

/* Selects and returns the chosen kernel's name (or fails the test with the error). */
static const char *choose(const qs_kernel_config *kc, qs_device_caps dev, qs_layer_kind kind, qs_scheme scheme,
                          qs_selection *sel)
{
    qs_err e;
    if (qs_registry_select(kc, &dev, kind, scheme, NULL, NULL, sel, &e))
        fail_msg("selection of %s %s failed: %s", qs_layer_kind_name(kind), qs_scheme_name(scheme), e.msg);
    assert_non_null(sel->kernel);
    return sel->kernel->name;
}

/* --- CPU: the real reference kernels --- */
static void cpu_runs_reference_for_every_scheme(void **state)
{
    qs_kernel_config kc = kc_auto();
    qs_selection sel;
    for (int s = 0; s < QS_SCHEME_COUNT; s++) {
        assert_string_equal(choose(&kc, cpu(), QS_KIND_LINEAR, (qs_scheme)s, &sel), "reference");
        assert_ptr_equal(sel.kernel, &qs_kernel_reference_linear);
        assert_int_equal(sel.candidates[0].status, QS_CAND_CHOSEN);
        assert_string_equal(choose(&kc, cpu(), QS_KIND_MOE, (qs_scheme)s, &sel), "reference");
        assert_ptr_equal(sel.kernel, &qs_kernel_reference_moe);
    }
}

static void cpu_reference_checks_the_layer(void **state)
{
    qs_tensor w = {.name = "model.layers.0.mlp.up_proj.weight", .dtype = QS_DT_BF16, .ndim = 2, .shape = {32, 16}};
    qs_linear_desc good = {.name = "model.layers.0.mlp.up_proj", .scheme = QS_SCHEME_BF16, .n = 32, .k = 16,
                           .weight = &w, .weight_global_scale = 1};
    qs_linear_desc bad = good;
    snprintf(bad.name, sizeof bad.name, "model.layers.1.mlp.up_proj");
    bad.weight = NULL;
    qs_kernel_config kc = kc_auto();
    qs_device_caps dev = cpu();
    qs_selection sel;
    qs_err e;
    assert_int_equal(qs_registry_select(&kc, &dev, QS_KIND_LINEAR, QS_SCHEME_BF16, &good, NULL, &sel, &e), 0);
    const qs_linear_desc *layers[] = {&good, &bad};
    assert_int_equal(qs_registry_select_for_layers(&kc, &dev, QS_KIND_LINEAR, QS_SCHEME_BF16, layers, 2, NULL, 0,
                                                   &sel, &e),
                     -1);
    assert_non_null(strstr(e.msg, "reference: cannot implement model.layers.1.mlp.up_proj"));
    assert_int_equal(sel.candidates[0].status, QS_CAND_REFUSED);
}

static void cpu_with_cuda_backends_falls_back_with_a_warning(void **state)
{
    qs_kernel_config kc = kc_auto();
    snprintf(kc.linear_backend, sizeof kc.linear_backend, "marlin");
    snprintf(kc.moe_backend, sizeof kc.moe_backend, "marlin");
    qs_selection sel;
    assert_string_equal(choose(&kc, cpu(), QS_KIND_LINEAR, QS_SCHEME_FP8_W8A8, &sel), "reference");
    assert_int_equal(sel.n_warnings, 1);
    assert_non_null(strstr(sel.warnings[0], "--linear-backend=marlin has no kernel for fp8_w8a8 linear layers"));
    assert_non_null(strstr(sel.warnings[0], "automatic selection"));
    /* cublaslt has no CPU kernel at all: the weight-only exception does not apply there. */
    snprintf(kc.linear_backend, sizeof kc.linear_backend, "cublaslt");
    assert_string_equal(choose(&kc, cpu(), QS_KIND_LINEAR, QS_SCHEME_NVFP4_W4A16, &sel), "reference");
    assert_int_equal(sel.n_warnings, 1);
}

/* --- CUDA priority lists and auto order --- */
static void priority_lists_match_backends_md(void **state)
{
    struct {
        qs_layer_kind kind;
        qs_scheme s;
        const char *want;
    } lists[] = {
        {QS_KIND_LINEAR, QS_SCHEME_BF16, "cublaslt"},
        {QS_KIND_LINEAR, QS_SCHEME_FP8_W8A8, "cublaslt marlin emulation"},
        {QS_KIND_LINEAR, QS_SCHEME_FP8_BLOCK_W8A8, "cublaslt marlin emulation"},
        {QS_KIND_LINEAR, QS_SCHEME_W8A16_FP8, "marlin emulation"},
        {QS_KIND_LINEAR, QS_SCHEME_NVFP4_W4A4, "cublaslt marlin emulation"},
        {QS_KIND_LINEAR, QS_SCHEME_NVFP4_W4A16, "marlin emulation"},
        {QS_KIND_MOE, QS_SCHEME_FP8_W8A8, "cublaslt marlin emulation"},
        {QS_KIND_MOE, QS_SCHEME_NVFP4_W4A4, "marlin emulation"},
        {QS_KIND_MOE, QS_SCHEME_W8A16_FP8, "marlin emulation"},
    };
    for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++) {
        int n;
        const char *const *l = qs_registry_priority_list(QS_PLATFORM_CUDA, lists[i].kind, lists[i].s, &n);
        char got[128] = "";
        for (int j = 0; j < n; j++)
            snprintf(got + strlen(got), sizeof got - strlen(got), "%s%s", j ? " " : "", l[j]);
        assert_string_equal(got, lists[i].want);
    }
    for (int s = 0; s < QS_SCHEME_COUNT; s++) {
        int n;
        const char *const *l = qs_registry_priority_list(QS_PLATFORM_CPU, QS_KIND_LINEAR, (qs_scheme)s, &n);
        assert_int_equal(n, 1);
        assert_string_equal(l[0], "reference");
    }
}

static void auto_order_depends_on_the_gpu(void **state)
{
    qs_kernel_config kc = kc_auto();
    qs_selection sel;
    /* A100: no FP8 tensor cores for cuBLASLt, Marlin is the natural fallback. */
    assert_string_equal(choose(&kc, gpu(8, 0), QS_KIND_LINEAR, QS_SCHEME_FP8_W8A8, &sel), "marlin");
    assert_int_equal(candidate(&sel, "cublaslt")->status, QS_CAND_REFUSED);
    assert_string_equal(candidate(&sel, "cublaslt")->reason, "requires compute capability 8.9, this GPU is 8.0.");
    assert_int_equal(candidate(&sel, "emulation")->status, QS_CAND_PASSED);
    /* L40S and H200: cuBLASLt FP8 first. */
    assert_string_equal(choose(&kc, gpu(8, 9), QS_KIND_LINEAR, QS_SCHEME_FP8_W8A8, &sel), "cublaslt");
    assert_string_equal(choose(&kc, gpu(9, 0), QS_KIND_LINEAR, QS_SCHEME_FP8_BLOCK_W8A8, &sel), "cublaslt");
    assert_int_equal(candidate(&sel, "marlin")->status, QS_CAND_PASSED);
    /* NVFP4 W4A4: FP4 tensor cores only from sm_100, Marlin runs it weight-only before. */
    assert_string_equal(choose(&kc, gpu(9, 0), QS_KIND_LINEAR, QS_SCHEME_NVFP4_W4A4, &sel), "marlin");
    assert_non_null(strstr(candidate(&sel, "cublaslt")->reason, "10.0"));
    assert_string_equal(choose(&kc, gpu(10, 0), QS_KIND_LINEAR, QS_SCHEME_NVFP4_W4A4, &sel), "cublaslt");
    assert_string_equal(choose(&kc, gpu(8, 0), QS_KIND_LINEAR, QS_SCHEME_BF16, &sel), "cublaslt");
    assert_ptr_equal(sel.kernel, &T_CUBLASLT_BF16);
    assert_string_equal(choose(&kc, gpu(9, 0), QS_KIND_LINEAR, QS_SCHEME_W8A16_FP8, &sel), "marlin");
    assert_string_equal(choose(&kc, gpu(9, 0), QS_KIND_LINEAR, QS_SCHEME_NVFP4_W4A16, &sel), "marlin");
    assert_int_equal(sel.n_warnings, 0);
    assert_string_equal(sel.requested, "auto");
    /* Below sm_80 only emulation is left. */
    assert_string_equal(choose(&kc, gpu(7, 5), QS_KIND_LINEAR, QS_SCHEME_FP8_W8A8, &sel), "emulation");
}

static void moe_auto_order(void **state)
{
    qs_kernel_config kc = kc_auto();
    qs_selection sel;
    assert_string_equal(choose(&kc, gpu(9, 0), QS_KIND_MOE, QS_SCHEME_FP8_W8A8, &sel), "cublaslt");
    assert_string_equal(choose(&kc, gpu(8, 0), QS_KIND_MOE, QS_SCHEME_FP8_W8A8, &sel), "marlin");
    assert_string_equal(choose(&kc, gpu(10, 0), QS_KIND_MOE, QS_SCHEME_NVFP4_W4A4, &sel), "marlin");
    assert_string_equal(choose(&kc, gpu(9, 0), QS_KIND_MOE, QS_SCHEME_BF16, &sel), "cublaslt");
    /* The experts follow --moe-backend, not --linear-backend. */
    snprintf(kc.linear_backend, sizeof kc.linear_backend, "emulation");
    assert_string_equal(choose(&kc, gpu(9, 0), QS_KIND_MOE, QS_SCHEME_FP8_W8A8, &sel), "cublaslt");
    snprintf(kc.moe_backend, sizeof kc.moe_backend, "marlin");
    assert_string_equal(choose(&kc, gpu(9, 0), QS_KIND_MOE, QS_SCHEME_FP8_W8A8, &sel), "marlin");
    assert_string_equal(sel.requested_by, "--moe-backend");
    /* bf16 experts: marlin has none, so automatic selection with a warning. */
    assert_string_equal(choose(&kc, gpu(9, 0), QS_KIND_MOE, QS_SCHEME_BF16, &sel), "cublaslt");
    assert_non_null(strstr(sel.warnings[0], "--moe-backend=marlin has no kernel for bf16 moe layers"));
}

/* --- Rules 1-3 --- */
static void explicit_backend_keeps_only_its_kernels(void **state)
{
    qs_kernel_config kc = kc_auto();
    snprintf(kc.linear_backend, sizeof kc.linear_backend, "marlin");
    qs_selection sel;
    assert_string_equal(choose(&kc, gpu(9, 0), QS_KIND_LINEAR, QS_SCHEME_FP8_W8A8, &sel), "marlin");
    assert_int_equal(candidate(&sel, "cublaslt")->status, QS_CAND_FILTERED);
    assert_string_equal(candidate(&sel, "cublaslt")->reason, "not the requested backend (--linear-backend=marlin).");
    assert_int_equal(candidate(&sel, "emulation")->status, QS_CAND_FILTERED);
    assert_string_equal(sel.requested, "marlin");
    assert_string_equal(sel.used, "marlin");
    assert_int_equal(sel.n_warnings, 0);
}

static void per_scheme_override_beats_linear_backend(void **state)
{
    qs_kernel_config kc = kc_auto();
    qs_err e;
    snprintf(kc.linear_backend, sizeof kc.linear_backend, "emulation");
    assert_int_equal(qs_kernel_config_set_per_quant(&kc, "fp8_w8a8", "marlin", &e), 0);
    qs_selection sel;
    assert_string_equal(choose(&kc, gpu(9, 0), QS_KIND_LINEAR, QS_SCHEME_FP8_W8A8, &sel), "marlin");
    assert_string_equal(sel.requested_by, "linear_backend_per_quant[fp8_w8a8]");
    assert_string_equal(choose(&kc, gpu(9, 0), QS_KIND_LINEAR, QS_SCHEME_FP8_BLOCK_W8A8, &sel), "emulation");
    assert_string_equal(sel.requested_by, "--linear-backend");
}

static void backend_without_kernel_for_scheme_warns_and_selects_automatically(void **state)
{
    qs_kernel_config kc = kc_auto();
    snprintf(kc.linear_backend, sizeof kc.linear_backend, "marlin");
    qs_selection sel;
    /* A model mixes layer types: BF16 layers beside FP8 ones. */
    assert_string_equal(choose(&kc, gpu(9, 0), QS_KIND_LINEAR, QS_SCHEME_BF16, &sel), "cublaslt");
    assert_int_equal(sel.n_warnings, 1);
    assert_string_equal(sel.warnings[0], "--linear-backend=marlin has no kernel for bf16 linear layers on cuda; using "
                                         "automatic selection for that layer type.");
    assert_string_equal(sel.used, "auto");
    assert_int_equal(candidate(&sel, "cublaslt")->status, QS_CAND_CHOSEN);
}

static void weight_only_schemes_have_a_whitelist(void **state)
{
    qs_kernel_config kc = kc_auto();
    qs_selection sel;
    qs_err e;
    qs_device_caps dev = gpu(10, 0);
    snprintf(kc.linear_backend, sizeof kc.linear_backend, "cublaslt");
    assert_int_equal(qs_registry_select(&kc, &dev, QS_KIND_LINEAR, QS_SCHEME_NVFP4_W4A16, NULL, NULL, &sel, &e), -1);
    assert_non_null(strstr(e.msg, "cublaslt does not support W4A16"));
    assert_int_equal(qs_registry_select(&kc, &dev, QS_KIND_LINEAR, QS_SCHEME_W8A16_FP8, NULL, NULL, &sel, &e), -1);
    assert_non_null(strstr(e.msg, "cublaslt does not support W8A16"));
    snprintf(kc.linear_backend, sizeof kc.linear_backend, "emulation");
    assert_string_equal(choose(&kc, dev, QS_KIND_LINEAR, QS_SCHEME_NVFP4_W4A16, &sel), "emulation");
    snprintf(kc.linear_backend, sizeof kc.linear_backend, "marlin");
    assert_string_equal(choose(&kc, dev, QS_KIND_LINEAR, QS_SCHEME_NVFP4_W4A16, &sel), "marlin");
    /* W4A4 on the same GPU with cublaslt is fine. */
    snprintf(kc.linear_backend, sizeof kc.linear_backend, "cublaslt");
    assert_string_equal(choose(&kc, dev, QS_KIND_LINEAR, QS_SCHEME_NVFP4_W4A4, &sel), "cublaslt");
}

static void explicit_backend_that_refuses_is_an_error_with_every_reason(void **state)
{
    qs_kernel_config kc = kc_auto();
    snprintf(kc.linear_backend, sizeof kc.linear_backend, "marlin");
    qs_selection sel;
    qs_err e;
    qs_device_caps dev = gpu(7, 5);
    assert_int_equal(qs_registry_select(&kc, &dev, QS_KIND_LINEAR, QS_SCHEME_FP8_W8A8, NULL, NULL, &sel, &e), -1);
    assert_null(sel.kernel);
    assert_non_null(strstr(e.msg, "no linear kernel can run fp8_w8a8 layers on Test GPU sm_75"));
    assert_non_null(strstr(e.msg, "--linear-backend=marlin"));
    assert_non_null(strstr(e.msg, "marlin: requires compute capability 8.0, this GPU is 7.5;"));
    assert_non_null(strstr(e.msg, "cublaslt: not the requested backend"));
    /* No silent fallback to emulation, although it would run. */
    assert_null(strstr(e.msg, "emulation: requires"));
    /* auto with nothing left lists every candidate. */
    kc = kc_auto();
    assert_int_equal(qs_kernel_config_add_disabled(&kc, "emulation", "test", &e), 0);
    assert_int_equal(qs_registry_select(&kc, &dev, QS_KIND_LINEAR, QS_SCHEME_FP8_W8A8, NULL, NULL, &sel, &e), -1);
    assert_non_null(strstr(e.msg, "cublaslt: requires compute capability 8.9"));
    assert_non_null(strstr(e.msg, "marlin: requires compute capability 8.0"));
    assert_non_null(strstr(e.msg, "emulation: disabled by QSERVE_DISABLED_KERNELS"));
}

/* --- Rules 4 and 5 --- */
static void disabled_kernels_are_refused_by_name(void **state)
{
    qs_kernel_config kc = kc_auto();
    qs_err e;
    assert_int_equal(qs_kernel_config_add_disabled(&kc, "cublaslt", "test", &e), 0);
    qs_selection sel;
    assert_string_equal(choose(&kc, gpu(9, 0), QS_KIND_LINEAR, QS_SCHEME_FP8_W8A8, &sel), "marlin");
    assert_string_equal(candidate(&sel, "cublaslt")->reason, "disabled by QSERVE_DISABLED_KERNELS.");
    assert_string_equal(choose(&kc, gpu(9, 0), QS_KIND_MOE, QS_SCHEME_FP8_W8A8, &sel), "marlin");
}

static void batch_invariant_refuses_other_kernels_and_beats_the_backend(void **state)
{
    qs_kernel_config kc = kc_auto();
    kc.batch_invariant = true;
    qs_selection sel;
    assert_string_equal(choose(&kc, gpu(9, 0), QS_KIND_LINEAR, QS_SCHEME_FP8_W8A8, &sel), "emulation");
    assert_string_equal(candidate(&sel, "cublaslt")->reason, "is not batch-invariant, and --batch-invariant is set.");
    assert_string_equal(candidate(&sel, "marlin")->reason, "is not batch-invariant, and --batch-invariant is set.");
    snprintf(kc.linear_backend, sizeof kc.linear_backend, "marlin");
    assert_string_equal(choose(&kc, gpu(9, 0), QS_KIND_LINEAR, QS_SCHEME_FP8_W8A8, &sel), "emulation");
    assert_int_equal(sel.n_warnings, 1);
    assert_non_null(strstr(sel.warnings[0], "--batch-invariant overrides --linear-backend=marlin"));
    assert_string_equal(sel.used, "auto");
    /* A batch-invariant backend is kept. */
    snprintf(kc.linear_backend, sizeof kc.linear_backend, "emulation");
    assert_string_equal(choose(&kc, gpu(9, 0), QS_KIND_LINEAR, QS_SCHEME_FP8_W8A8, &sel), "emulation");
    assert_int_equal(sel.n_warnings, 0);
    /* CPU reference kernels are batch-invariant. */
    assert_string_equal(choose(&kc, cpu(), QS_KIND_LINEAR, QS_SCHEME_NVFP4_W4A4, &sel), "reference");
}

/* --- Rule 6 and kernels not built in --- */
static void unknown_names_are_errors(void **state)
{
    qs_kernel_config kc = kc_auto();
    snprintf(kc.linear_backend, sizeof kc.linear_backend, "flashinfer_cutlass");
    qs_selection sel;
    qs_err e;
    qs_device_caps dev = gpu(9, 0);
    assert_int_equal(qs_registry_select(&kc, &dev, QS_KIND_LINEAR, QS_SCHEME_FP8_W8A8, NULL, NULL, &sel, &e), -1);
    assert_non_null(strstr(e.msg, "'flashinfer_cutlass' is a vLLM linear backend that qserve does not have"));
    assert_non_null(strstr(e.msg, "auto, cublaslt, marlin, emulation, reference"));
    const char *vllm[] = {"cutlass", "machete", "exllama", "triton", "deepgemm", "deep_gemm", "humming"};
    for (size_t i = 0; i < sizeof vllm / sizeof *vllm; i++) {
        assert_true(qs_registry_is_vllm_only_name(vllm[i]));
        assert_int_equal(qs_registry_check_backend_name(vllm[i], QS_KIND_MOE, "--moe-backend", &e), -1);
        assert_non_null(strstr(e.msg, "vLLM MoE backend"));
    }
    assert_int_equal(qs_registry_check_backend_name("cublast", QS_KIND_LINEAR, "--linear-backend", &e), -1);
    assert_non_null(strstr(e.msg, "did you mean cublaslt?"));
    assert_int_equal(qs_registry_check_backend_name("zzzz", QS_KIND_LINEAR, "--linear-backend", &e), -1);
    assert_null(strstr(e.msg, "did you mean"));
    assert_non_null(strstr(e.msg, "unknown linear backend 'zzzz'"));
    assert_int_equal(qs_registry_check_backend_name("Emulation", QS_KIND_LINEAR, "--linear-backend", &e), 0);
}

static void listed_kernel_without_descriptor_is_not_built(void **state)
{
    qs_kernel_config kc = kc_auto();
    qs_err e;
    qs_selection sel;
    qs_device_caps dev = gpu(7, 5); /* marlin MoE refuses sm_75, emulation MoE is not built */
    assert_int_equal(qs_registry_select(&kc, &dev, QS_KIND_MOE, QS_SCHEME_W8A16_FP8, NULL, NULL, &sel, &e), -1);
    assert_string_equal(candidate(&sel, "emulation")->reason, "not built into this binary.");
    assert_null(candidate(&sel, "emulation")->kernel);
    assert_non_null(strstr(e.msg, "emulation: not built into this binary"));
    snprintf(kc.moe_backend, sizeof kc.moe_backend, "emulation");
    dev = gpu(9, 0);
    assert_int_equal(qs_registry_select(&kc, &dev, QS_KIND_MOE, QS_SCHEME_FP8_W8A8, NULL, NULL, &sel, &e), -1);
    assert_non_null(strstr(e.msg, "--moe-backend=emulation"));
    assert_non_null(strstr(e.msg, "not built into this binary"));
}

static void every_layer_must_be_implementable(void **state)
{
    qs_linear_desc l[3];
    memset(l, 0, sizeof l);
    for (int i = 0; i < 3; i++) {
        snprintf(l[i].name, sizeof l[i].name, "model.layers.%d.self_attn.q_proj", i);
        l[i].scheme = QS_SCHEME_FP8_W8A8;
        l[i].n = i == 2 ? 40 : 64;
        l[i].k = 64;
    }
    const qs_linear_desc *layers[] = {&l[0], &l[1], &l[2]};
    qs_kernel_config kc = kc_auto();
    qs_device_caps dev = gpu(9, 0);
    qs_selection sel;
    qs_err e;
    assert_int_equal(qs_registry_select_for_layers(&kc, &dev, QS_KIND_LINEAR, QS_SCHEME_FP8_W8A8, layers, 2, NULL, 0,
                                                   &sel, &e),
                     0);
    assert_string_equal(sel.kernel->name, "cublaslt");
    assert_int_equal(qs_registry_select_for_layers(&kc, &dev, QS_KIND_LINEAR, QS_SCHEME_FP8_W8A8, layers, 3, NULL, 0,
                                                   &sel, &e),
                     0);
    assert_string_equal(sel.kernel->name, "marlin");
    assert_string_equal(candidate(&sel, "cublaslt")->reason, "cannot implement model.layers.2.self_attn.q_proj: "
                                                             "requires out_features to be a multiple of 16, got 40.");
}

static void log_line_names_choice_and_refusals(void **state)
{
    qs_kernel_config kc = kc_auto();
    qs_selection sel;
    choose(&kc, gpu(8, 0), QS_KIND_LINEAR, QS_SCHEME_FP8_W8A8, &sel);
    char line[1024];
    qs_selection_format(&sel, 28, line, sizeof line);
    assert_string_equal(line, "linear fp8_w8a8 (28 layers): marlin [auto]; refused: cublaslt: requires compute "
                              "capability 8.9, this GPU is 8.0.");
    snprintf(kc.linear_backend, sizeof kc.linear_backend, "marlin");
    choose(&kc, gpu(9, 0), QS_KIND_LINEAR, QS_SCHEME_BF16, &sel);
    qs_selection_format(&sel, 1, line, sizeof line);
    assert_string_equal(line, "linear bf16 (1 layer): cublaslt [auto; --linear-backend=marlin not applied]");
    qs_selection_log(&sel, QS_KIND_LINEAR, QS_SCHEME_BF16, 1);
    assert_string_equal(qs_candidate_status_name(QS_CAND_FILTERED), "filtered");
}

static void builtin_table_holds_the_reference_kernels(void **state)
{
    int n;
    const qs_kernel *const *all = qs_registry_kernels(&n);
    int found = 0;
    for (int i = 0; i < n; i++) {
        assert_non_null(all[i]);
        found += all[i] == &qs_kernel_reference_linear || all[i] == &qs_kernel_reference_moe;
    }
    assert_int_equal(found, 2);
    assert_ptr_equal(qs_registry_find("reference", QS_PLATFORM_CPU, QS_KIND_MOE), &qs_kernel_reference_moe);
    assert_null(qs_registry_find("reference", QS_PLATFORM_CUDA, QS_KIND_LINEAR));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(builtin_table_holds_the_reference_kernels, use_builtin_kernels),
        cmocka_unit_test_setup(cpu_runs_reference_for_every_scheme, use_builtin_kernels),
        cmocka_unit_test_setup(cpu_reference_checks_the_layer, use_builtin_kernels),
        cmocka_unit_test_setup(cpu_with_cuda_backends_falls_back_with_a_warning, use_test_kernels),
        cmocka_unit_test_setup(priority_lists_match_backends_md, use_test_kernels),
        cmocka_unit_test_setup(auto_order_depends_on_the_gpu, use_test_kernels),
        cmocka_unit_test_setup(moe_auto_order, use_test_kernels),
        cmocka_unit_test_setup(explicit_backend_keeps_only_its_kernels, use_test_kernels),
        cmocka_unit_test_setup(per_scheme_override_beats_linear_backend, use_test_kernels),
        cmocka_unit_test_setup(backend_without_kernel_for_scheme_warns_and_selects_automatically, use_test_kernels),
        cmocka_unit_test_setup(weight_only_schemes_have_a_whitelist, use_test_kernels),
        cmocka_unit_test_setup(explicit_backend_that_refuses_is_an_error_with_every_reason, use_test_kernels),
        cmocka_unit_test_setup(disabled_kernels_are_refused_by_name, use_test_kernels),
        cmocka_unit_test_setup(batch_invariant_refuses_other_kernels_and_beats_the_backend, use_test_kernels),
        cmocka_unit_test_setup(unknown_names_are_errors, use_test_kernels),
        cmocka_unit_test_setup(listed_kernel_without_descriptor_is_not_built, use_test_kernels),
        cmocka_unit_test_setup(every_layer_must_be_implementable, use_test_kernels),
        cmocka_unit_test_setup(log_line_names_choice_and_refusals, use_test_kernels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
