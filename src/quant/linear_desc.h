/* linear_desc.h — builds the qs_linear_desc of one linear layer (or one expert projection) from
 * the checkpoint's tensors and its quantization config, and the qs_moe_desc of an MoE layer.
 * The tensors decide (checkpoint-formats.md §2 step 4): an F8_E4M3 weight with a scale is FP8,
 * a U8 weight (or weight_packed) with an F8_E4M3 per-16 scale is NVFP4, a float weight is dense;
 * the config decides activation quantization and the expected scale layout, and every scale
 * tensor is checked against the shape that layout needs. Works on headers-only checkpoints
 * (tensor data NULL): then the scalar scales in the desc are 0. */
#ifndef QS_QUANT_LINEAR_DESC_H
#define QS_QUANT_LINEAR_DESC_H

#include "io/safetensors.h"
#include "quant/quant_config.h"
#include "core/scheme.h"
#include "core/kernel.h"
#include "util/error.h"

/* prefix: "model.layers.0.self_attn.q_proj", "model.layers.1.mlp.experts.3.gate_proj",
 * "model.layers.1.block_sparse_moe.experts.3.w1". qc may be NULL (unquantized config). */
int qs_linear_desc_build(const qs_checkpoint *ck, const qs_quant_config *qc, const char *prefix, qs_linear_desc *out,
                         qs_err *err);

/* Builds every expert of an MoE layer: experts_prefix "model.layers.1.mlp.experts" with
 * projection names "gate_proj", "up_proj", "down_proj" (Mixtral: "w1", "w3", "w2"). All experts
 * must share one scheme and shape. The desc arrays are malloc'd: free with qs_moe_desc_free. */
int qs_moe_desc_build(const qs_checkpoint *ck, const qs_quant_config *qc, const char *experts_prefix,
                      const char *gate_name, const char *up_name, const char *down_name, int num_experts, int top_k,
                      qs_moe_desc *out, qs_err *err);
void qs_moe_desc_free(qs_moe_desc *d);

/* One-line summary for logs: "fp8_w8a8 [4096x4096] weights per-channel, activations dynamic per-token". */
void qs_linear_desc_describe(const qs_linear_desc *d, char *buf, size_t cap);

#endif
