/* backends_model.h — what `qserve backends MODEL_DIR` needs from a checkpoint without loading
 * weights: config.json, the quantization config and safetensors headers only, turned into the
 * linear and MoE layer descriptions the registry selects for (the same modules the model loader
 * builds: attention q/k/v/o, dense MLP or router + experts, lm_head unless tied). */
#ifndef QS_CLI_BACKENDS_MODEL_H
#define QS_CLI_BACKENDS_MODEL_H

#include <stdbool.h>

#include "model/model_config.h"
#include "model/safetensors.h"
#include "quant/quant_config.h"
#include "registry/kernel.h"
#include "util/error.h"

typedef struct qs_backends_model {
    qs_model_config mc;
    qs_quant_config qc;
    bool has_mc, has_qc;
    qs_checkpoint *ck;
    qs_linear_desc *linears;   /* every linear layer, in model order */
    int n_linears;
    qs_moe_desc *moes;         /* every MoE layer's experts */
    int n_moes;
} qs_backends_model;

int qs_backends_model_open(const char *model_dir, qs_backends_model *m, qs_err *err);
void qs_backends_model_close(qs_backends_model *m);

#endif
