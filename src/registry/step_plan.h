/* step_plan.h — a linear layer's plan: the kernel that runs a step of m tokens, as rows by token
 * count. Selection (registry.h) picks one kernel per layer type; the plan adds the per-step
 * table of step_plan.c (kStepPartners, kSchemeLimits, kScalarScaleLimits): under `auto`, where
 * the chosen kernel is slower than another at small steps, steps of up to N tokens run on that one
 * (a second, prepared copy of the weights). The model reads nothing else to pick a layer's kernel
 * (model/forward.c), `qserve backends` prints the same rows, and where a row's kernel is marlin,
 * marlin's own table (cuda/marlin_plan.h) picks which of its kernels runs the step. */
#ifndef QS_REGISTRY_STEP_PLAN_H
#define QS_REGISTRY_STEP_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "registry/registry.h"

#define QS_PLAN_MAX_ROWS 2

typedef struct qs_plan_row {
    int64_t max_tokens;        /* serves steps of (previous row's max_tokens, max_tokens]; the last row INT64_MAX */
    const qs_kernel *kernel;
    void *state;               /* the kernel's prepared weights; NULL in a plan made without them */
} qs_plan_row;

typedef struct qs_plan {
    int n_rows;
    qs_plan_row rows[QS_PLAN_MAX_ROWS];
} qs_plan;

/* The row that serves a step of `tokens` (NULL for a plan without rows). */
const qs_plan_row *qs_plan_row_for(const qs_plan *p, int64_t tokens);

/* The per-step table's token limits (step_plan.c): the scheme's, on a device where marlin's Hopper
 * kernels run (compute capability 9.0, a build with sm_90a code) or elsewhere, and those of layers
 * with one weight scale and one input scale (cuBLASLt's faster scalar-scale FP8 GEMM). */
#define QS_SMALL_STEP_TOKENS 32
#define QS_SMALL_STEP_TOKENS_HOPPER 64
#define QS_SCALAR_SCALE_STEP_TOKENS 8
#define QS_SCALAR_SCALE_STEP_TOKENS_HOPPER 32
#define QS_SCALAR_SCALE_STEP_TOKENS_HOPPER_ORDERED 64

/* Whether dev gets the Hopper limits: compute capability 9.0 in a build with sm_90a code (where
 * marlin's stream kernel runs). */
bool qs_step_plan_hopper(const qs_device_caps *dev);

/* The scheme's limit on dev: QSERVE_SMALL_STEP_TOKENS when set (0 turns the per-step rows off),
 * else the table's. -1 with err set when the variable is not a whole number in 0..4096. */
int qs_step_plan_scheme_tokens(const qs_device_caps *dev, qs_err *err);

/* For the layers of `scheme` that `sel` chose a kernel for: the kernel that takes small steps
 * (*small; NULL when no row of the table applies) and the scheme's token limit for it (0 when
 * none; -1 with err: a bad QSERVE_SMALL_STEP_TOKENS). Needs no weights. */
int qs_step_plan_small_kernel(const qs_kernel_config *kc, const qs_device_caps *dev, const qs_selection *sel,
                              qs_scheme scheme, const qs_kernel **small, qs_err *err);

/* One layer's limit for the small kernel, given the scheme's and whether activation orders are on
 * (qs_act_orders_from_env): the scheme's, capped for scalar-scale layers. */
int qs_step_plan_layer_tokens(const qs_linear_desc *d, const qs_device_caps *dev, int scheme_tokens, bool act_orders);

/* The plan of one layer that `sel` chose a kernel for (states NULL): one row of the chosen kernel,
 * or the small kernel up to the layer's limit then the chosen kernel, where the table applies and
 * the small kernel can implement the layer. -1 with err on a bad QSERVE_SMALL_STEP_TOKENS. */
int qs_step_plan_for_layer(const qs_kernel_config *kc, const qs_device_caps *dev, const qs_selection *sel,
                           const qs_linear_desc *d, bool act_orders, qs_plan *out, qs_err *err);

#endif
