/* registry_names.h — the kernel and backend names qserve knows (registry_names.c), checked where
 * flags, YAML, JSON and the environment are read, and by selection (registry.h). */
#ifndef QS_REGISTRY_REGISTRY_NAMES_H
#define QS_REGISTRY_REGISTRY_NAMES_H

#include <stdbool.h>

#include "core/kernel.h"
#include "registry/kernel_choice.h"
#include "util/error.h"

/* 0 if name (normalised) is "auto" or a qserve backend for that kind; otherwise -1 with an error
 * naming `flag`, saying whether it is a vLLM backend qserve lacks, and listing qserve's names. */
int qs_registry_check_backend_name(const char *name, qs_layer_kind kind, const char *flag, qs_err *err);
/* 0 if name is a kernel name qserve knows (for QSERVE_DISABLED_KERNELS). */
int qs_registry_check_kernel_name(const char *name, const char *source, qs_err *err);
/* Validates every name in kc (backends, per-scheme overrides, disabled kernels). */
int qs_registry_check_kernel_config(const qs_kernel_config *kc, qs_err *err);
/* "auto, cublaslt, marlin, emulation, reference" */
const char *qs_registry_backend_names(void);
/* True if name is a vLLM linear/MoE backend that qserve does not implement. */
bool qs_registry_is_vllm_only_name(const char *name);

#endif
