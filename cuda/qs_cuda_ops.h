/* qs_cuda_ops.h — the CUDA implementation of the ops interface (src/core/ops.h): BF16 activations,
 * BF16 weights for norms/embeddings/biases, FP32 math inside every kernel. Only built when nvcc
 * is found (QS_HAVE_CUDA). */
#ifndef QS_CUDA_OPS_H
#define QS_CUDA_OPS_H

#include "core/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

const qs_ops *qs_ops_cuda(void);

/* The fused-projection ops of the table (ops.h: split_qkv, swiglu_gate_up, qkv_rope_cache), in
 * split_cuda.cu. */
int qs_cuda_split_qkv(void *out0, void *out1, void *out2, const void *x, int64_t rows, int64_t n0, int64_t n1,
                      int64_t n2, qs_err *err);
int qs_cuda_swiglu_gate_up(void *out, const void *gate_up, int64_t rows, int64_t n, qs_act_order order, qs_err *err);
int qs_cuda_qkv_rope_cache(void *q, void *k_cache, void *v_cache, const void *qkv, const qs_attn_batch *b,
                           const void *inv_freq, int n_heads, int n_kv_heads, int head_dim, qs_err *err);
/* The sampling op of the table (ops.h: sample; core/sample.h), in sample_cuda.cu. */
int qs_cuda_sample(int32_t *tokens, const void *logits, const qs_sample_row *rows, int64_t n_rows, int64_t vocab,
                   qs_err *err);
/* Llama 4's ops of the table (ops.h: rope_interleaved, attn_temperature, moe_route_scale_input,
 * add), in llama4_cuda.cu. */
int qs_cuda_rope_interleaved(void *x, const int32_t *pos, const void *inv_freq, int64_t n_tokens, int n_heads,
                             int head_dim, qs_err *err);
int qs_cuda_attn_temperature(void *x, const int32_t *pos, int64_t n_tokens, int64_t n, float floor_scale,
                             float attn_scale, qs_err *err);
int qs_cuda_moe_route_scale_input(const void *router_logits, const void *x, void *x_scaled, int32_t *topk_ids,
                                  float *topk_weights, int64_t n_tokens, int n_experts, int64_t d, qs_err *err);
int qs_cuda_add(void *y, const void *x, int64_t n, qs_err *err);
/* Streams and decode-step graphs (ops.h: qs_graph_ops), in graph_cuda.cu. */
extern const qs_graph_ops qs_cuda_graph_ops;

#ifdef __cplusplus
}
#endif

#endif
