/* step_dispatch.c — the per-step plans of one layer type made real at load. The registry's table
 * (registry/step_plan.c) says, per layer, which kernel runs a step of m tokens; here each layer
 * gets that plan with the chosen kernel's prepared state in its last row and, where the table
 * adds a row for small steps (under `auto`, W8A8 FP8 layers that cublaslt serves run small steps
 * on marlin), that kernel's own prepared copy of the weights. One line logs it, with the memory
 * the second copy costs. */
#include "model/step_dispatch.h"

#include <stdint.h>
#include <stdio.h>

#include "util/log.h"

int qs_step_dispatch_prepare(const qs_model *m, const qs_config *cfg, const qs_selection *sel, qs_scheme scheme,
                             qs_linear *const *layers, int n, qs_err *err)
{
    int prepared = 0, most = 0, fewest = INT32_MAX;
    const qs_kernel *small = NULL, *chosen = sel->kernel;
    double bytes = 0;
    for (int i = 0; i < n; i++) {
        qs_linear *l = layers[i];
        if (qs_step_plan_for_layer(&cfg->kernels, &m->dev, sel, &l->desc, m->act_order, &l->plan, err) != 0)
            return -1;
        qs_plan_row *last = &l->plan.rows[l->plan.n_rows - 1];
        last->state = l->state;
        if (l->plan.n_rows == 1)
            continue;
        qs_plan_row *row = &l->plan.rows[0];
        if (row->kernel->prepare_linear(&l->desc, &row->state, err) != 0) {
            l->plan.n_rows = 1;
            l->plan.rows[0] = *last;
            return qs_err_prefix(err, "kernel %s (per-step dispatch) preparing %s: ", row->kernel->name, l->desc.name);
        }
        small = row->kernel;
        most = row->max_tokens > most ? (int)row->max_tokens : most;
        fewest = row->max_tokens < fewest ? (int)row->max_tokens : fewest;
        prepared++;
        bytes += (double)l->desc.n * (double)l->desc.k;
    }
    if (!prepared)
        return 0;
    char scalar_note[96] = "";
    if (fewest < most)
        snprintf(scalar_note, sizeof scalar_note, " (layers with one weight and one input scale: at most %d)", fewest);
    qs_info("kernel linear %s: steps of at most %d tokens%s run on %s, larger ones on %s (auto, per-step "
            "dispatch; QSERVE_SMALL_STEP_TOKENS=0 keeps %s only); %d of %d layers hold a second, %s-packed "
            "copy of their weights (+%.2f GB)",
            qs_scheme_name(scheme), most, scalar_note, small->name, chosen->name, chosen->name, prepared, n, small->name,
            n ? bytes / 1e9 : 0.0);
    return 0;
}
