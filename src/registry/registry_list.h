/* registry_list.h — the registry's contents (registry_list.c): the kernel descriptors linked into
 * this binary and the priority lists of kernel names, which selection (registry.h) walks. */
#ifndef QS_REGISTRY_REGISTRY_LIST_H
#define QS_REGISTRY_REGISTRY_LIST_H

#include <stdbool.h>

#include "core/kernel.h"

/* Every descriptor linked into this binary (or the test kernels, see below). */
const qs_kernel *const *qs_registry_kernels(int *count);
/* The descriptor named `name` for (platform, kind), or NULL if none is built in. */
const qs_kernel *qs_registry_find(const char *name, qs_platform platform, qs_layer_kind kind);
/* The same, preferring a descriptor of that name that serves `scheme` (names may repeat). */
const qs_kernel *qs_registry_find_for_scheme(const char *name, qs_platform platform, qs_layer_kind kind,
                                             qs_scheme scheme);
/* The priority list (kernel names, first wins) for (platform, kind, scheme). */
const char *const *qs_registry_priority_list(qs_platform platform, qs_layer_kind kind, qs_scheme scheme,
                                             int *count);
/* The weight-only whitelist (rule 2 exception): kernels that may serve w8a16_fp8 / nvfp4_w4a16. */
bool qs_registry_is_weight_only_kernel(const char *name);
const char *qs_platform_name(qs_platform p);    /* "cpu", "cuda" */
const char *qs_layer_kind_name(qs_layer_kind k); /* "linear", "moe" */

/* Test hook: replaces the descriptor table by `kernels` (NULL restores the built-in one). The
 * array must outlive its use. Lets tests register fake CUDA descriptors named cublaslt, marlin... */
void qs_registry_set_test_kernels(const qs_kernel *const *kernels, int count);

#endif
