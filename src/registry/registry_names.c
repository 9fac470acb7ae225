/* registry_names.c — which backend names a user may type and what to say when a name is wrong
 * (rule 6): a typo gets "did you mean", a vLLM backend qserve does not implement is named as such
 * (with the qserve kernel closest to it), and both errors list qserve's names. qserve's names are
 * every name in a priority list or the descriptor table, so a CPU-only build still accepts
 * `--linear-backend marlin` (and falls back per rule 2) instead of rejecting a valid config. */
#include "registry/registry_names.h"

#include <stdio.h>
#include <string.h>

#include "registry/registry_list.h"
#include "util/names.h"

/* vLLM's linear and MoE backend names (reference/vllm-kernel-selection-and-gsm8k.md §a) that
 * qserve does not have, with the qserve kernel that plays the closest role. */
static const struct {
    const char *name, *closest;
} VLLM_ONLY[] = {
    {"cutlass", "cublaslt"},          {"flashinfer_cutlass", "cublaslt"}, {"flashinfer_cutedsl", "cublaslt"},
    {"flashinfer_trtllm", "cublaslt"}, {"flashinfer_cudnn", "cublaslt"},  {"flashinfer_b12x", "cublaslt"},
    {"b12x", "cublaslt"},             {"humming", "marlin"},             {"triton", "cublaslt"},
    {"deep_gemm", "cublaslt"},        {"deepgemm", "cublaslt"},          {"torch", "cublaslt"},
    {"aiter", NULL},                  {"machete", "marlin"},             {"fbgemm", "cublaslt"},
    {"conch", "marlin"},              {"exllama", "marlin"},             {"xpu", NULL},
    {"xpu_woq", NULL},                {"turbomind", "marlin"},           {"batched_triton", "cublaslt"},
    {"deep_gemm_mega_moe", "cublaslt"}, {"flashinfer_moe_ep_mega_deep_gemm", "cublaslt"},
    {"flashinfer_moe_ep_mega_cutedsl", "cublaslt"}, {"triton_unfused", "cublaslt"},
    {"aiter_triton_mxfp4_bf16", NULL}, {"flydsl", NULL},                 {"hpc", "cublaslt"},
};
#define N_VLLM_ONLY (sizeof VLLM_ONLY / sizeof VLLM_ONLY[0])

#define MAX_NAMES 16

/* Unique kernel names from every priority list and descriptor, in first-seen order. */
static int known_names(const char *out[MAX_NAMES])
{
    int n = 0;
    for (int p = 1; p >= 0; p--) /* CUDA first: the user-facing order */
        for (int k = 0; k < 2; k++)
            for (int s = 0; s < QS_SCHEME_COUNT; s++) {
                int c;
                const char *const *l = qs_registry_priority_list((qs_platform)p, (qs_layer_kind)k, (qs_scheme)s, &c);
                for (int i = 0; i < c; i++) {
                    int seen = 0;
                    for (int j = 0; j < n; j++)
                        seen |= !strcmp(out[j], l[i]);
                    if (!seen && n < MAX_NAMES)
                        out[n++] = l[i];
                }
            }
    int nk;
    const qs_kernel *const *all = qs_registry_kernels(&nk);
    for (int i = 0; i < nk; i++) {
        int seen = 0;
        for (int j = 0; j < n && all[i]; j++)
            seen |= !strcmp(out[j], all[i]->name);
        if (all[i] && !seen && n < MAX_NAMES)
            out[n++] = all[i]->name;
    }
    return n;
}

const char *qs_registry_backend_names(void)
{
    static char buf[256];
    const char *names[MAX_NAMES];
    int n = known_names(names);
    size_t len = (size_t)snprintf(buf, sizeof buf, "auto");
    for (int i = 0; i < n && len < sizeof buf; i++)
        len += (size_t)snprintf(buf + len, sizeof buf - len, ", %s", names[i]);
    return buf;
}

static int is_known_kernel(const char *name)
{
    const char *names[MAX_NAMES];
    int n = known_names(names);
    for (int i = 0; i < n; i++)
        if (!strcmp(names[i], name))
            return 1;
    return 0;
}

bool qs_registry_is_vllm_only_name(const char *name)
{
    for (size_t i = 0; i < N_VLLM_ONLY; i++)
        if (!strcmp(VLLM_ONLY[i].name, name))
            return true;
    return false;
}

/* Fills err for a name that is neither auto nor a qserve kernel. */
static int unknown_name(const char *name, const char *what, const char *source, bool allow_auto, qs_err *err)
{
    const char *list = qs_registry_backend_names();
    if (!allow_auto)
        list += strlen("auto, ");
    for (size_t i = 0; i < N_VLLM_ONLY; i++)
        if (!strcmp(VLLM_ONLY[i].name, name)) {
            char closest[96] = "";
            if (VLLM_ONLY[i].closest)
                snprintf(closest, sizeof closest, " (the closest qserve kernel is %s)", VLLM_ONLY[i].closest);
            return qs_errf(err, "%s: '%s' is a vLLM %s that qserve does not have%s; qserve's %ss are: %s",
                           source, name, what, closest, what, list);
        }
    const char *names[MAX_NAMES];
    int n = known_names(names);
    const char *best = NULL;
    int best_d = 3;
    for (int i = 0; i < n; i++) {
        int d = qs_edit_distance(name, names[i]);
        if (d < best_d) {
            best_d = d;
            best = names[i];
        }
    }
    if (best)
        return qs_errf(err, "%s: unknown %s '%s' (did you mean %s?); qserve's %ss are: %s", source, what, name,
                       best, what, list);
    return qs_errf(err, "%s: unknown %s '%s'; qserve's %ss are: %s", source, what, name, what, list);
}

int qs_registry_check_backend_name(const char *name, qs_layer_kind kind, const char *flag, qs_err *err)
{
    char norm[QS_NAME_MAX];
    snprintf(norm, sizeof norm, "%s", name ? name : "");
    qs_normalize_name(norm);
    if (!strcmp(norm, "auto") || is_known_kernel(norm))
        return 0;
    if (!norm[0])
        return qs_errf(err, "%s: empty backend name; qserve's %s backends are: %s", flag, qs_layer_kind_name(kind),
                       qs_registry_backend_names());
    return unknown_name(norm, kind == QS_KIND_MOE ? "MoE backend" : "linear backend", flag, true, err);
}

int qs_registry_check_kernel_name(const char *name, const char *source, qs_err *err)
{
    if (is_known_kernel(name))
        return 0;
    return unknown_name(name, "kernel", source, false, err);
}

int qs_registry_check_kernel_config(const qs_kernel_config *kc, qs_err *err)
{
    if (qs_registry_check_backend_name(kc->linear_backend, QS_KIND_LINEAR, "--linear-backend", err) ||
        qs_registry_check_backend_name(kc->moe_backend, QS_KIND_MOE, "--moe-backend", err))
        return -1;
    for (int s = 0; s < QS_SCHEME_COUNT; s++) {
        if (!kc->linear_backend_per_quant[s][0])
            continue;
        char where[96];
        snprintf(where, sizeof where, "linear_backend_per_quant[%s]", qs_scheme_name((qs_scheme)s));
        if (qs_registry_check_backend_name(kc->linear_backend_per_quant[s], QS_KIND_LINEAR, where, err))
            return -1;
    }
    for (int i = 0; i < kc->n_disabled; i++)
        if (qs_registry_check_kernel_name(kc->disabled_kernels[i], "QSERVE_DISABLED_KERNELS", err))
            return -1;
    return 0;
}
