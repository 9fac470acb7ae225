/* step_plan.c — the per-step table: which kernel runs a linear layer's step of m tokens when the
 * layer type's chosen kernel is not the fastest at every step size (step_plan.h).
 * Measured on the H200 (docs/backends.md "Per-step dispatch", docs/marlin.md): marlin (weight-only,
 * FP8 dequantised in registers) is faster per decoder layer than cuBLASLt's FP8 GEMM with
 * per-channel x per-token scales up to 64 tokens a step with its Hopper kernels (32 without) and
 * far slower above; cuBLASLt's scalar-scale FP8 GEMM is faster than its per-channel one, so
 * layers with one weight scale and one input scale join for fewer tokens (8 with the small-M
 * kernel alone, 32 with the Hopper stream kernel, 64 when the ops write its input in the order it
 * reads: activation orders). The price is a second copy of the weights, logged at start-up. An
 * explicit backend, --batch-invariant, a disabled partner or QSERVE_SMALL_STEP_TOKENS=0 leave one
 * kernel. */
#include "registry/step_plan.h"

#include <stdlib.h>
#include <string.h>

/* Where `auto` chose `chosen` for (platform, kind, scheme), steps up to the limits below run on
 * `small`. */
static const struct step_partner {
    qs_platform platform;
    qs_layer_kind kind;
    qs_scheme scheme;
    const char *chosen, *small;
} kStepPartners[] = {
    {QS_PLATFORM_CUDA, QS_KIND_LINEAR, QS_SCHEME_FP8_W8A8, "cublaslt", "marlin"},
    {QS_PLATFORM_CUDA, QS_KIND_LINEAR, QS_SCHEME_FP8_BLOCK_W8A8, "cublaslt", "marlin"},
};

/* The scheme's limit (QSERVE_SMALL_STEP_TOKENS replaces it), by device. */
static const struct scheme_limit {
    bool hopper;
    int tokens;
} kSchemeLimits[] = {
    {true, QS_SMALL_STEP_TOKENS_HOPPER},
    {false, QS_SMALL_STEP_TOKENS},
};

/* Layers with scalar scales (one weight scale, one per-tensor input scale, static or dynamic): the
 * first row whose device and activation orders match caps the scheme's limit. */
static const struct scalar_scale_limit {
    bool hopper;
    int act_orders; /* 1 on, 0 off, -1 either */
    int tokens;
} kScalarScaleLimits[] = {
    {true, 1, QS_SCALAR_SCALE_STEP_TOKENS_HOPPER_ORDERED},
    {true, 0, QS_SCALAR_SCALE_STEP_TOKENS_HOPPER},
    {false, -1, QS_SCALAR_SCALE_STEP_TOKENS},
};

/* The Hopper limits hold where marlin's stream kernel runs: compute capability 9.0 and a build
 * with sm_90a code (the Makefile defines QS_HAVE_SM90A when CUDA_ARCHS has 90a). */
bool qs_step_plan_hopper(const qs_device_caps *dev)
{
#ifdef QS_HAVE_SM90A
    return dev->cc_major == 9 && dev->cc_minor == 0;
#else
    (void)dev;
    return false;
#endif
}

const qs_plan_row *qs_plan_row_for(const qs_plan *p, int64_t tokens)
{
    if (p->n_rows <= 0)
        return NULL;
    int i = 0;
    while (i < p->n_rows - 1 && tokens > p->rows[i].max_tokens)
        i++;
    return &p->rows[i];
}

int qs_step_plan_scheme_tokens(const qs_device_caps *dev, qs_err *err)
{
    const char *v = getenv("QSERVE_SMALL_STEP_TOKENS");
    if (v && *v) {
        char *end;
        long n = strtol(v, &end, 10);
        if (*end || n < 0 || n > 4096) {
            qs_errf(err, "QSERVE_SMALL_STEP_TOKENS: expected a whole number of tokens in 0..4096, got \"%s\"", v);
            return -1;
        }
        return (int)n;
    }
    for (size_t i = 0; i < sizeof kSchemeLimits / sizeof kSchemeLimits[0]; i++)
        if (kSchemeLimits[i].hopper == qs_step_plan_hopper(dev))
            return kSchemeLimits[i].tokens;
    return 0;
}

static const struct step_partner *partner_of(const qs_selection *sel, qs_scheme scheme)
{
    for (size_t i = 0; i < sizeof kStepPartners / sizeof kStepPartners[0]; i++) {
        const struct step_partner *p = &kStepPartners[i];
        if (p->platform == sel->kernel->platform && p->kind == sel->kernel->kind && p->scheme == scheme &&
            !strcmp(p->chosen, sel->kernel->name))
            return p;
    }
    return NULL;
}

int qs_step_plan_small_kernel(const qs_kernel_config *kc, const qs_device_caps *dev, const qs_selection *sel,
                              qs_scheme scheme, const qs_kernel **small, qs_err *err)
{
    *small = NULL;
    int tokens = qs_step_plan_scheme_tokens(dev, err);
    if (tokens <= 0)
        return tokens;
    /* only where nobody asked for a backend and results may depend on the batch */
    if (!sel->kernel || strcmp(sel->requested, "auto") != 0 || kc->batch_invariant)
        return 0;
    const struct step_partner *p = partner_of(sel, scheme);
    if (!p || qs_kernel_config_is_disabled(kc, p->small))
        return 0;
    const qs_kernel *k = qs_registry_find_for_scheme(p->small, p->platform, p->kind, scheme);
    char why[QS_REASON_MAX] = "";
    if (!k || !k->is_supported(dev, why, sizeof why))
        return 0;
    *small = k;
    return tokens;
}

int qs_step_plan_layer_tokens(const qs_linear_desc *d, const qs_device_caps *dev, int scheme_tokens, bool act_orders)
{
    bool scalar_scales = d->wscale == QS_WSCALE_TENSOR &&
                         (d->aquant == QS_AQUANT_STATIC_TENSOR || d->aquant == QS_AQUANT_DYNAMIC_TENSOR);
    if (!scalar_scales)
        return scheme_tokens;
    for (size_t i = 0; i < sizeof kScalarScaleLimits / sizeof kScalarScaleLimits[0]; i++) {
        const struct scalar_scale_limit *r = &kScalarScaleLimits[i];
        if (r->hopper == qs_step_plan_hopper(dev) && (r->act_orders < 0 || r->act_orders == (int)act_orders))
            return scheme_tokens > r->tokens ? r->tokens : scheme_tokens;
    }
    return scheme_tokens;
}

int qs_step_plan_for_layer(const qs_kernel_config *kc, const qs_device_caps *dev, const qs_selection *sel,
                           const qs_linear_desc *d, bool act_orders, qs_plan *out, qs_err *err)
{
    memset(out, 0, sizeof *out);
    const qs_kernel *small;
    int tokens = qs_step_plan_small_kernel(kc, dev, sel, d->scheme, &small, err);
    if (tokens < 0)
        return -1;
    char why[QS_REASON_MAX] = "";
    if (small && tokens > 0 && small->can_implement_linear(d, why, sizeof why))
        out->rows[out->n_rows++] = (qs_plan_row){qs_step_plan_layer_tokens(d, dev, tokens, act_orders), small, NULL};
    out->rows[out->n_rows++] = (qs_plan_row){INT64_MAX, sel->kernel, NULL};
    return 0;
}
