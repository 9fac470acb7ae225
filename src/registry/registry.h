/* registry.h — kernel selection (../shared/BACKENDS.md "Selection rules"). For one (layer kind,
 * scheme) the registry walks the platform's priority list of kernel names, resolves each name to
 * a descriptor linked into this binary, and records for every candidate whether it was chosen,
 * passed, was filtered out by the requested backend, or was refused — always with a sentence
 * saying why. Selection never logs by itself: qs_selection_log prints the one line per layer type
 * (selection_log.c) and the warnings, so `qserve backends` can print the same facts as a table. */
#ifndef QS_REGISTRY_REGISTRY_H
#define QS_REGISTRY_REGISTRY_H

#include <stdbool.h>

#include "core/kernel.h"
#include "registry/kernel_choice.h"
#include "registry/registry_list.h"
#include "registry/registry_names.h"

#define QS_MAX_CANDIDATES 16
#define QS_MAX_WARNINGS 4
#define QS_WARNING_MAX 384

typedef enum {
    QS_CAND_CHOSEN,    /* the kernel that runs this layer type */
    QS_CAND_PASSED,    /* would work, but a candidate earlier in the list was chosen */
    QS_CAND_REFUSED,   /* not built, disabled, not batch-invariant, unsupported or cannot implement */
    QS_CAND_FILTERED   /* not the requested backend (--linear-backend / --moe-backend / override) */
} qs_candidate_status;

typedef struct qs_candidate {
    const char *name;              /* the name in the priority list ("marlin") */
    const qs_kernel *kernel;       /* NULL when not built into this binary */
    qs_candidate_status status;
    char reason[QS_REASON_MAX];    /* a sentence for REFUSED / FILTERED, "" otherwise */
} qs_candidate;

typedef struct qs_selection {
    qs_layer_kind kind;
    qs_scheme scheme;
    qs_platform platform;
    char requested[QS_NAME_MAX];   /* backend asked for this layer type after rule 1 ("auto", "marlin") */
    char requested_by[96];         /* "auto", "--linear-backend", "linear_backend_per_quant[fp8_w8a8]" */
    char used[QS_NAME_MAX];        /* backend actually applied: requested, or "auto" after a fallback */
    const qs_kernel *kernel;       /* the chosen kernel, NULL if selection failed */
    int n_candidates;
    qs_candidate candidates[QS_MAX_CANDIDATES];
    int n_warnings;
    char warnings[QS_MAX_WARNINGS][QS_WARNING_MAX];
} qs_selection;

/* Chooses the kernel for one (kind, scheme) on dev. `example` / `moe_example` (either may be NULL)
 * is a representative layer passed to can_implement. On failure returns -1 with every candidate's
 * reason in err; *out is still filled so callers can print the candidates. */
int qs_registry_select(const qs_kernel_config *kc, const qs_device_caps *dev, qs_layer_kind kind,
                       qs_scheme scheme, const qs_linear_desc *example, const qs_moe_desc *moe_example,
                       qs_selection *out, qs_err *err);

/* The same, but a kernel must pass can_implement for every one of the n layers given (linears for
 * QS_KIND_LINEAR, moes for QS_KIND_MOE; the other array may be NULL). The model loader calls this
 * once per (kind, scheme) present in the checkpoint. Refusal reasons name the first failing layer. */
int qs_registry_select_for_layers(const qs_kernel_config *kc, const qs_device_caps *dev, qs_layer_kind kind,
                                  qs_scheme scheme, const qs_linear_desc *const *linears, int n_linears,
                                  const qs_moe_desc *const *moes, int n_moes, qs_selection *out, qs_err *err);

/* Logs the selection's warnings, then one line: kind, scheme, layer count, chosen kernel and how it
 * was requested, then every refused or filtered candidate with its reason. */
void qs_selection_log(const qs_selection *sel, qs_layer_kind kind, qs_scheme scheme, int n_layers);
/* Formats that line (without the log prefix) into buf; returns buf. */
char *qs_selection_format(const qs_selection *sel, int n_layers, char *buf, size_t cap);
/* The same two, saying how many of the n_layers are fused q/k/v or gate/up layers
 * ("linear bf16 (9 layers, 4 of them fused): reference [auto]"). */
void qs_selection_log_fused(const qs_selection *sel, qs_layer_kind kind, qs_scheme scheme, int n_layers, int n_fused);
char *qs_selection_format_fused(const qs_selection *sel, int n_layers, int n_fused, char *buf, size_t cap);
const char *qs_candidate_status_name(qs_candidate_status s); /* "chosen", "passed", ... */

#endif
