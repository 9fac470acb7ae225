/* step_dispatch.c — per-step kernel choice for W8A8 FP8 linear layers under `auto` on CUDA.
 * Measured on the H200 (docs/marlin.md): marlin (weight-only, FP8 dequantised in registers) is
 * faster per decoder layer than cuBLASLt's FP8 GEMM with per-channel x per-token scales up to 64
 * tokens per step (95.7 against 161.4 us at 64 with the stream kernel; 32 tokens before it) and far
 * slower above. So when auto picks cublaslt for fp8_w8a8 or fp8_block_w8a8, the layers also get a
 * marlin copy of their weights, and qs_linear_apply takes marlin for steps of at most
 * QSERVE_SMALL_STEP_TOKENS tokens (decode), cublaslt for the rest (prefill). Layers with one scale
 * for the whole weight and one for the whole input join for fewer tokens: cuBLASLt's scalar-scale
 * FP8 GEMM is faster than the per-channel one (Hopper, session 9: marlin 74.2 against 76.8 us per
 * layer at 32 tokens, 95.7 against 84.0 at 64; before the stream kernel only up to 8 tokens). With
 * activation orders marlin beats it up to 64 tokens on Hopper too (session 17 call 2: 75.1 / 77.4
 * / 78.9 / 82.7 against 77.4 / 78.6 / 81.7 / 83.0 us at 40 / 48 / 56 / 64). The price is a second
 * copy of the weights, logged at start-up. An explicit backend,
 * --batch-invariant, a disabled marlin, or QSERVE_SMALL_STEP_TOKENS=0 leave one kernel. */
#include "model/step_dispatch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"

/* The Hopper thresholds hold where marlin's stream kernel runs: compute capability 9.0 and a build
 * with sm_90a code (the Makefile defines QS_HAVE_SM90A when CUDA_ARCHS has 90a). */
static bool hopper(const qs_device_caps *dev)
{
#ifdef QS_HAVE_SM90A
    return dev->cc_major == 9 && dev->cc_minor == 0;
#else
    (void)dev;
    return false;
#endif
}

int qs_small_step_tokens(const qs_device_caps *dev, qs_err *err)
{
    const char *v = getenv("QSERVE_SMALL_STEP_TOKENS");
    if (!v || !*v)
        return hopper(dev) ? QS_SMALL_STEP_TOKENS_HOPPER : QS_SMALL_STEP_TOKENS;
    char *end;
    long n = strtol(v, &end, 10);
    if (*end || n < 0 || n > 4096) {
        qs_errf(err, "QSERVE_SMALL_STEP_TOKENS: expected a whole number of tokens in 0..4096, got \"%s\"", v);
        return -1;
    }
    return (int)n;
}

static bool marlin_disabled(const qs_kernel_config *kc)
{
    for (int i = 0; i < kc->n_disabled; i++)
        if (!strcmp(kc->disabled_kernels[i], "marlin"))
            return true;
    return false;
}

int qs_step_dispatch_tokens(const qs_kernel_config *kc, const qs_device_caps *dev, const qs_selection *sel,
                            qs_scheme scheme, qs_err *err)
{
    int max_tokens = qs_small_step_tokens(dev, err);
    if (max_tokens <= 0)
        return max_tokens;
    if (!sel->kernel || strcmp(sel->kernel->name, "cublaslt") != 0 || strcmp(sel->requested, "auto") != 0 ||
        kc->batch_invariant || marlin_disabled(kc) || (scheme != QS_SCHEME_FP8_W8A8 && scheme != QS_SCHEME_FP8_BLOCK_W8A8))
        return 0;
    const qs_kernel *marlin = qs_registry_find_for_scheme("marlin", QS_PLATFORM_CUDA, QS_KIND_LINEAR, scheme);
    char why[QS_REASON_MAX] = "";
    if (!marlin || !marlin->is_supported(dev, why, sizeof why))
        return 0;
    return max_tokens;
}

int qs_step_dispatch_layer_tokens(const qs_linear_desc *d, const qs_device_caps *dev, int max_tokens,
                                  bool act_orders)
{
    bool scalar_scales = d->wscale == QS_WSCALE_TENSOR &&
                         (d->aquant == QS_AQUANT_STATIC_TENSOR || d->aquant == QS_AQUANT_DYNAMIC_TENSOR);
    int cap = !hopper(dev)  ? QS_SCALAR_SCALE_STEP_TOKENS
              : act_orders ? QS_SCALAR_SCALE_STEP_TOKENS_HOPPER_ORDERED
                           : QS_SCALAR_SCALE_STEP_TOKENS_HOPPER;
    return scalar_scales && max_tokens > cap ? cap : max_tokens;
}

int qs_step_dispatch_prepare(const qs_model *m, const qs_config *cfg, const qs_selection *sel, qs_scheme scheme,
                             qs_linear *const *layers, int n, qs_err *err)
{
    int max_tokens = qs_step_dispatch_tokens(&cfg->kernels, &m->dev, sel, scheme, err);
    if (max_tokens <= 0)
        return max_tokens;
    const qs_kernel *marlin = qs_registry_find_for_scheme("marlin", QS_PLATFORM_CUDA, QS_KIND_LINEAR, scheme);
    char why[QS_REASON_MAX] = "";
    int prepared = 0, most = 0, fewest = max_tokens;
    double bytes = 0;
    for (int i = 0; i < n; i++) {
        qs_linear *l = layers[i];
        if (!marlin->can_implement_linear(&l->desc, why, sizeof why))
            continue;
        if (marlin->prepare_linear(&l->desc, &l->small_state, err) != 0)
            return qs_err_prefix(err, "kernel marlin (per-step dispatch) preparing %s: ", l->desc.name);
        l->small_kernel = marlin;
        l->small_max_rows = qs_step_dispatch_layer_tokens(&l->desc, &m->dev, max_tokens, m->act_order);
        most = l->small_max_rows > most ? l->small_max_rows : most;
        fewest = l->small_max_rows < fewest ? l->small_max_rows : fewest;
        prepared++;
        bytes += (double)l->desc.n * (double)l->desc.k;
    }
    char scalar_note[96] = "";
    if (prepared && fewest < most)
        snprintf(scalar_note, sizeof scalar_note, " (layers with one weight and one input scale: at most %d)", fewest);
    if (prepared)
        qs_info("kernel linear %s: steps of at most %d tokens%s run on marlin, larger ones on cublaslt (auto, per-step "
                "dispatch; QSERVE_SMALL_STEP_TOKENS=0 keeps cublaslt only); %d of %d layers hold a second, marlin-packed "
                "copy of their weights (+%.2f GB)",
                qs_scheme_name(scheme), most, scalar_note, prepared, n, n ? bytes / 1e9 : 0.0);
    return 0;
}
