/* kv_scales.h — per-layer K and V scales for an FP8 KV cache from a checkpoint: ModelOpt's
 * k_proj.k_scale / v_proj.v_scale, compressed-tensors' (kv_cache_scheme) self_attn.k_scale /
 * v_scale, or 1.0 where there are none, as vLLM does. */
#ifndef QS_MODEL_KV_SCALES_H
#define QS_MODEL_KV_SCALES_H

#include <stddef.h>

#include "model/model_config.h"
#include "util/error.h"

/* Fills k_scales and v_scales [mc->num_layers] and a sentence naming their source for the log.
 * Returns the number of layers that had both scales in the checkpoint, or -1 (a scale tensor
 * that is not one positive finite number, an unreadable checkpoint). */
int qs_kv_scales_load(const char *model_dir, const qs_model_config *mc, float *k_scales, float *v_scales,
                      char *source, size_t source_cap, qs_err *err);

#endif
