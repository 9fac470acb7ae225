/* registry_list.c — what the registry holds: the descriptors the backends bring
 * (device/backends.c) and the priority lists per (platform, layer kind, scheme) from
 * ../shared/BACKENDS.md. Lists name kernels rather than point at them, so a kernel joins by
 * adding its descriptor to its backend's list and its name to a list here; a listed name whose
 * descriptor is not built in is refused at selection time with "not built into this binary".
 * Several descriptors may share a name (cublaslt has one for bf16 and one for FP8): selection
 * takes the one that serves the layer's scheme. */
#include <string.h>

#include "device/backends.h"
#include "registry/registry_list.h"

static const qs_kernel *const *g_test_kernels;
static int g_test_count;

void qs_registry_set_test_kernels(const qs_kernel *const *kernels, int count)
{
    g_test_kernels = kernels;
    g_test_count = kernels ? count : 0;
}

const qs_kernel *const *qs_registry_kernels(int *count)
{
    if (g_test_kernels) {
        *count = g_test_count;
        return g_test_kernels;
    }
    return qs_backends_kernels(count);
}

const qs_kernel *qs_registry_find(const char *name, qs_platform platform, qs_layer_kind kind)
{
    int n;
    const qs_kernel *const *all = qs_registry_kernels(&n);
    for (int i = 0; i < n; i++)
        if (all[i] && all[i]->platform == platform && all[i]->kind == kind && !strcmp(all[i]->name, name))
            return all[i];
    return NULL;
}

const qs_kernel *qs_registry_find_for_scheme(const char *name, qs_platform platform, qs_layer_kind kind,
                                             qs_scheme scheme)
{
    int n;
    const qs_kernel *const *all = qs_registry_kernels(&n);
    for (int i = 0; i < n; i++)
        if (all[i] && all[i]->platform == platform && all[i]->kind == kind && !strcmp(all[i]->name, name) &&
            (all[i]->schemes & (1u << scheme)))
            return all[i];
    return qs_registry_find(name, platform, kind);
}

/* A priority list: names, first that passes wins. */
typedef struct {
    int n;
    const char *names[4];
} prio_list;

#define L1(a) {1, {a}}
#define L2(a, b) {2, {a, b}}
#define L3(a, b, c) {3, {a, b, c}}

/* CUDA linear (BACKENDS.md "CUDA priority lists"). */
static const prio_list CUDA_LINEAR[QS_SCHEME_COUNT] = {
    [QS_SCHEME_BF16] = L1("cublaslt"),
    [QS_SCHEME_FP8_W8A8] = L3("cublaslt", "marlin", "emulation"),
    [QS_SCHEME_FP8_BLOCK_W8A8] = L3("cublaslt", "marlin", "emulation"),
    [QS_SCHEME_W8A16_FP8] = L2("marlin", "emulation"),
    [QS_SCHEME_NVFP4_W4A4] = L3("cublaslt", "marlin", "emulation"),
    [QS_SCHEME_NVFP4_W4A16] = L2("marlin", "emulation"),
};

/* CUDA MoE (BACKENDS.md "MoE kernels"): cublaslt first where it serves the experts (bf16, FP8
 * W8A8), Marlin weight-only for weight-only and NVFP4 experts, emulation always last. */
static const prio_list CUDA_MOE[QS_SCHEME_COUNT] = {
    [QS_SCHEME_BF16] = L2("cublaslt", "emulation"),
    [QS_SCHEME_FP8_W8A8] = L3("cublaslt", "marlin", "emulation"),
    [QS_SCHEME_FP8_BLOCK_W8A8] = L3("cublaslt", "marlin", "emulation"),
    [QS_SCHEME_W8A16_FP8] = L2("marlin", "emulation"),
    [QS_SCHEME_NVFP4_W4A4] = L2("marlin", "emulation"),
    [QS_SCHEME_NVFP4_W4A16] = L2("marlin", "emulation"),
};

static const prio_list CPU_ANY = L1("reference");

/* Kernels allowed on weight-only schemes whatever the backend asks (rule 2 exception). */
static const char *const WEIGHT_ONLY_KERNELS[] = {"marlin", "emulation", "reference"};

const char *const *qs_registry_priority_list(qs_platform platform, qs_layer_kind kind, qs_scheme scheme,
                                             int *count)
{
    *count = 0;
    if ((int)scheme < 0 || scheme >= QS_SCHEME_COUNT)
        return NULL;
    const prio_list *l = &CPU_ANY;
    if (platform == QS_PLATFORM_CUDA)
        l = kind == QS_KIND_MOE ? &CUDA_MOE[scheme] : &CUDA_LINEAR[scheme];
    *count = l->n;
    return l->names;
}

bool qs_registry_is_weight_only_kernel(const char *name)
{
    for (size_t i = 0; i < sizeof WEIGHT_ONLY_KERNELS / sizeof *WEIGHT_ONLY_KERNELS; i++)
        if (!strcmp(name, WEIGHT_ONLY_KERNELS[i]))
            return true;
    return false;
}

const char *qs_platform_name(qs_platform p) { return p == QS_PLATFORM_CUDA ? "cuda" : "cpu"; }

const char *qs_layer_kind_name(qs_layer_kind k) { return k == QS_KIND_MOE ? "moe" : "linear"; }
