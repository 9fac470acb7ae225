/* model_weights.h — tensor lookup with shape checks, uploads of small float weights, and linear
 * layer descriptions for the model loader (model_weights.c). */
#ifndef QS_MODEL_MODEL_WEIGHTS_H
#define QS_MODEL_MODEL_WEIGHTS_H

#include <stdbool.h>
#include <stdint.h>

#include "io/safetensors.h"
#include "core/ops.h"
#include "quant/quant_config.h"
#include "core/scheme.h"
#include "util/error.h"

/* The tensor `name` with shape [d0] (d1 == 0) or [d0, d1]; NULL with err naming it otherwise. */
const qs_tensor *qs_weights_find(const qs_checkpoint *ck, const char *name, int64_t d0, int64_t d1, qs_err *err);
/* The same tensor uploaded to the device in its weight format. */
void *qs_weights_upload(const qs_ops *ops, const qs_checkpoint *ck, const char *name, int64_t d0, int64_t d1,
                        qs_err *err);
/* Describes the linear `module` ("model.layers.0.self_attn.q_proj") through the quant loader
 * (qs_linear_desc_build: dense, FP8 or NVFP4 as the tensors and qc say) and checks it is [n, k]
 * with a bias exactly when `bias`. qc may be NULL for an unquantized checkpoint. */
int qs_weights_linear_desc(const qs_checkpoint *ck, const qs_quant_config *qc, const char *module, int64_t n,
                           int64_t k, bool bias, qs_linear_desc *d, qs_err *err);

#endif
