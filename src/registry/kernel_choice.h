/* kernel_choice.h — what the user asks of kernel selection (qs_kernel_config): backends by layer
 * kind and scheme, kernels switched off, batch invariance; and the two questions the registry asks
 * of it. Filled from flags, YAML, JSON and the environment by config/kernel_config.c, which checks
 * every name against the registry. */
#ifndef QS_REGISTRY_KERNEL_CHOICE_H
#define QS_REGISTRY_KERNEL_CHOICE_H

#include <stdbool.h>

#include "core/scheme.h"

#define QS_NAME_MAX 64
#define QS_MAX_DISABLED 32

typedef struct qs_kernel_config {
    char linear_backend[QS_NAME_MAX];                    /* "auto" or a kernel name */
    char moe_backend[QS_NAME_MAX];
    char linear_backend_per_quant[QS_SCHEME_COUNT][QS_NAME_MAX]; /* "" = not set */
    bool batch_invariant;                                /* --batch-invariant / QSERVE_BATCH_INVARIANT=1 */
    char disabled_kernels[QS_MAX_DISABLED][QS_NAME_MAX]; /* QSERVE_DISABLED_KERNELS=a,b */
    int n_disabled;
} qs_kernel_config;

void qs_kernel_config_defaults(qs_kernel_config *kc);
/* True if name (normalised) is in disabled_kernels. */
bool qs_kernel_config_is_disabled(const qs_kernel_config *kc, const char *name);
/* The backend a layer of `scheme` asks for (rule 1): per-scheme override, else linear_backend
 * (moe_backend for experts). */
const char *qs_kernel_config_backend_for(const qs_kernel_config *kc, bool moe, qs_scheme scheme);

#endif
