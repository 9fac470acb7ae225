/* kernel.h — what a kernel descriptor is (../shared/BACKENDS.md). A kernel says which schemes it
 * serves, whether the device supports it and whether it can implement a given layer (with a
 * full-sentence reason when not), and owns its weight layout through prepare/apply/release.
 * Activations are float32 on the CPU platform and bf16 on CUDA; row-major [m, k] in, [m, n] out. */
#ifndef QS_CORE_KERNEL_H
#define QS_CORE_KERNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/platform.h"
#include "core/scheme.h"
#include "util/error.h"

typedef enum { QS_KIND_LINEAR, QS_KIND_MOE } qs_layer_kind;

#define QS_REASON_MAX 256

typedef struct qs_kernel {
    const char *name;         /* what users type: "reference", "cublaslt", "marlin", "emulation" */
    qs_platform platform;
    qs_layer_kind kind;
    uint32_t schemes;         /* bit (1u << qs_scheme) per scheme served */
    bool batch_invariant;     /* result independent of batch composition */
    /* 1 = ok; 0 = not, with a sentence in why. */
    int (*is_supported)(const qs_device_caps *dev, char *why, size_t cap);
    int (*can_implement_linear)(const qs_linear_desc *d, char *why, size_t cap);
    int (*can_implement_moe)(const qs_moe_desc *d, char *why, size_t cap);
    /* Linear: state = prepare(desc); y[m,n] = x[m,k] W^T (+ bias). */
    int (*prepare_linear)(const qs_linear_desc *d, void **state, qs_err *err);
    int (*apply_linear)(const void *state, const void *x, void *y, int64_t m, void *stream, qs_err *err);
    /* MoE: y[m,hidden] = sum_j w[i,j] * down(silu(gate(x_i)) * up(x_i)) over the top-k experts ids[i,j].
     * ids[i,j] = -1 (another rank's expert under expert parallelism, ops->moe_expert_slice): that
     * slot adds nothing and no expert runs it. */
    int (*prepare_moe)(const qs_moe_desc *d, void **state, qs_err *err);
    int (*apply_moe)(const void *state, const void *x, const int32_t *topk_ids, const float *topk_weights,
                     void *y, int64_t m, void *stream, qs_err *err);
    void (*release)(void *state);
    /* Optional (NULL: x always in natural order): the order (core/act_order.h, a qs_act_order) this
     * linear wants x in at m rows, and the apply for x already in that order. The op that produces
     * x writes it so where the linear is x's only reader (model/forward.c), sparing the kernel a
     * reordering pass; apply_linear still takes natural x at every m. */
    int (*input_order)(const void *state, int64_t m);
    int (*apply_linear_ordered)(const void *state, const void *x, void *y, int64_t m, void *stream, qs_err *err);
    /* MoE: apply_moe routes on the device (no host round trip), so a decode step may be captured
     * in a graph (model/step_graph.c). */
    bool moe_device_routed;
} qs_kernel;

#endif
