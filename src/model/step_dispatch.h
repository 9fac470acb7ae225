/* step_dispatch.h — per-step choice between two prepared kernels for one linear layer (see
 * step_dispatch.c). */
#ifndef QS_MODEL_STEP_DISPATCH_H
#define QS_MODEL_STEP_DISPATCH_H

#include "config/config.h"
#include "model/model_internal.h"
#include "registry/registry.h"

/* Tokens per step up to which W8A8 FP8 layers that `auto` gave to cublaslt run on marlin
 * instead on dev: QSERVE_SMALL_STEP_TOKENS, else QS_SMALL_STEP_TOKENS_HOPPER on compute
 * capability 9.0 in a build with sm_90a code (marlin's stream kernel) and QS_SMALL_STEP_TOKENS
 * elsewhere; 0 turns the dispatch off. -1 with err set when the variable is not a whole number in
 * 0..4096. */
int qs_small_step_tokens(const qs_device_caps *dev, qs_err *err);
#define QS_SMALL_STEP_TOKENS 32
#define QS_SMALL_STEP_TOKENS_HOPPER 64

/* The tokens per step up to which layers of `scheme` that `sel` chose would run on marlin on dev
 * (0: the dispatch does not apply; -1 with err: a bad QSERVE_SMALL_STEP_TOKENS). Needs no weights:
 * `qserve backends` reports it too. */
int qs_step_dispatch_tokens(const qs_kernel_config *kc, const qs_device_caps *dev, const qs_selection *sel,
                            qs_scheme scheme, qs_err *err);

/* Layers cublaslt would run with scalar scales only (one for the weight, one for the input) join
 * for steps of at most this many tokens (measured: marlin beats that GEMM up to 8 tokens per
 * decoder layer with the small-M kernel alone, up to 32 with the Hopper stream kernel, and up to
 * 64 when the ops write its input in the order it reads: activation orders). */
#define QS_SCALAR_SCALE_STEP_TOKENS 8
#define QS_SCALAR_SCALE_STEP_TOKENS_HOPPER 32
#define QS_SCALAR_SCALE_STEP_TOKENS_HOPPER_ORDERED 64

/* The tokens per step up to which one layer runs on marlin on dev, given the scheme's max_tokens
 * and whether activation orders are on (qs_act_orders_from_env). */
int qs_step_dispatch_layer_tokens(const qs_linear_desc *d, const qs_device_caps *dev, int max_tokens,
                                  bool act_orders);

/* After `sel` chose the kernel for the layers of one scheme (already prepared): when the rule
 * above applies, also prepares marlin for every layer it can run and logs the choice once. */
int qs_step_dispatch_prepare(const qs_model *m, const qs_config *cfg, const qs_selection *sel, qs_scheme scheme,
                             qs_linear *const *layers, int n, qs_err *err);

#endif
