/* backends_report.h — the facts `qserve backends` prints (one row per layer kind and scheme, with
 * every candidate's status and reason) and the two renderings of them: a text table and JSON. */
#ifndef QS_CLI_BACKENDS_REPORT_H
#define QS_CLI_BACKENDS_REPORT_H

#include <stdio.h>

#include "config/config.h"
#include "model/projection_fusion.h"
#include "registry/registry.h"
#include "registry/step_plan.h"

typedef struct qs_backends_row {
    qs_selection sel;
    int n_layers;               /* layers of this kind and scheme in the model; 0 without a model */
    int n_fused;                /* of them, fused q/k/v or gate/up layers */
    char first_layer[160];      /* one of them, for the reader */
    qs_plan plan;               /* the kernel by tokens per step (registry/step_plan.h; without states) */
    int fewest_small_tokens;    /* with a model: the smallest limit of a layer's small-step row (0: none) */
    int failed;                 /* selection failed: error holds why */
    char error[QS_ERR_MSG_MAX];
} qs_backends_row;

typedef struct qs_backends_report {
    const char *model_dir;      /* NULL: no model, describe the whole registry */
    const char *architecture;
    const char *quantization;   /* the checkpoint's quantization config, described */
    const qs_fusion_summary *fusion; /* which projections are fused (with a model) */
    const qs_device_caps *dev;
    const qs_kernel_config *kc;
    qs_backends_row *rows;
    int n_rows;
} qs_backends_report;

void qs_backends_print_text(FILE *out, const qs_backends_report *r);
/* Returns 0, or -1 (with err) if the JSON could not be built. */
int qs_backends_print_json(FILE *out, const qs_backends_report *r, qs_err *err);

#endif
