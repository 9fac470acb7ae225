/* backends_model.h — what `qserve backends MODEL` needs from a checkpoint without loading
 * weights: config.json, the quantization config and safetensors headers only, turned into the
 * linear and MoE layer descriptions the registry selects for (the same modules the model loader
 * builds: attention q/k/v/o, dense MLP or router + experts, lm_head unless tied), with q/k/v and
 * gate/up fused into qkv_proj / gate_up_proj by the loader's own plan (model/projection_fusion.h). */
#ifndef QS_CLI_BACKENDS_MODEL_H
#define QS_CLI_BACKENDS_MODEL_H

#include <stdbool.h>

#include "model/model_config.h"
#include "model/projection_fusion.h"
#include "io/safetensors.h"
#include "quant/quant_config.h"
#include "core/kernel.h"
#include "util/error.h"

typedef struct qs_backends_model {
    qs_model_config mc;
    qs_quant_config qc;
    bool has_mc, has_qc;
    qs_checkpoint *ck;
    qs_linear_desc *linears;   /* every linear layer, in model order (fused ones instead of their parts) */
    bool *linear_is_fused;     /* [n_linears]: a qkv_proj / gate_up_proj */
    int n_linears;
    qs_fused_linear *fused;    /* the fused layers' own descriptions, [2 * num_layers] */
    qs_fusion_summary fusion;
    qs_moe_desc *moes;         /* every MoE layer's experts */
    int n_moes;
    qs_tensor *expert_shapes;  /* Llama 4's fused 3-D experts: [3 * num_layers] per-expert [out, in]
                                * shapes (headers only, no data) the expert descriptions point at */
} qs_backends_model;

/* Fuses projections as serve would on a device of `platform`; no_fuse keeps q/k/v and gate/up
 * separate, as QSERVE_NO_FUSE=1 makes serve do. */
int qs_backends_model_open(const char *model_dir, qs_platform platform, bool no_fuse, qs_backends_model *m,
                           qs_err *err);
void qs_backends_model_close(qs_backends_model *m);

#endif
