/* step_dispatch.h — each linear layer's plan (registry/step_plan.h) made real at load: the rows'
 * kernels prepared, the choice logged (see step_dispatch.c). */
#ifndef QS_MODEL_STEP_DISPATCH_H
#define QS_MODEL_STEP_DISPATCH_H

#include "config/config.h"
#include "model/model_internal.h"
#include "registry/registry.h"
#include "registry/step_plan.h"

/* After `sel` chose the kernel for the layers of one scheme (already prepared: l->state): gives
 * every layer its plan, prepares the kernel of each extra row (the per-step table's small kernel,
 * a second copy of the weights) and logs the choice once when there is one. */
int qs_step_dispatch_prepare(const qs_model *m, const qs_config *cfg, const qs_selection *sel, qs_scheme scheme,
                             qs_linear *const *layers, int n, qs_err *err);

#endif
