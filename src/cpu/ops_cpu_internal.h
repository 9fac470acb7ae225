/* ops_cpu_internal.h — the CPU ops split across files (attention, MoE routing, sampling), gathered into
 * the one qs_ops table of ops_cpu.c. Not for use outside src/cpu. */
#ifndef QS_CPU_OPS_CPU_INTERNAL_H
#define QS_CPU_OPS_CPU_INTERNAL_H

#include "core/ops.h"

int qs_cpu_kv_write(void *k_cache, void *v_cache, const void *k, const void *v, const qs_attn_batch *b,
                    int n_kv_heads, int head_dim, qs_err *err);
int qs_cpu_attention(void *out, const void *q, const void *k_cache, const void *v_cache, const qs_attn_batch *b,
                     int n_heads, int n_kv_heads, int head_dim, float scale, qs_act_order order,
                     qs_err *err);
/* The reference sampling op (sample_cpu.c). */
int qs_cpu_sample(int32_t *tokens, const void *logits, const qs_sample_row *rows, int64_t n_rows, int64_t vocab,
                  qs_err *err);
int qs_cpu_rope_interleaved(void *x, const int32_t *pos, const void *inv_freq, int64_t n_tokens, int n_heads,
                            int head_dim, qs_err *err);
int qs_cpu_attn_temperature(void *x, const int32_t *pos, int64_t n_tokens, int64_t n, float floor_scale,
                            float attn_scale, qs_err *err);
int qs_cpu_moe_route_scale_input(const void *router_logits, const void *x, void *x_scaled, int32_t *topk_ids,
                                 float *topk_weights, int64_t n_tokens, int n_experts, int64_t d, qs_err *err);
int qs_cpu_add(void *y, const void *x, int64_t n, qs_err *err);
int qs_cpu_moe_expert_slice(int32_t *topk_ids, float *topk_weights, int64_t n, int first, int count, qs_err *err);
int qs_cpu_moe_route(const void *router_logits, int32_t *topk_ids, float *topk_weights, int64_t n_tokens,
                     int n_experts, int top_k, bool norm_topk, qs_err *err);

#endif
