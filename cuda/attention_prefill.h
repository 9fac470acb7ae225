/* attention_prefill.h — the tensor-core prefill attention kernel over the paged KV cache
 * (attention_prefill.cu), as qs_cuda_attention (attention_cuda.cu) dispatches it. Plain C so the
 * GPU tests can call the two steps on their own.
 *
 * The kernel takes the tokens of a batch that sit in a run of at least QS_ATTN_PREFILL_MIN_RUN
 * consecutive batch tokens of one sequence (a prefill chunk); the other tokens (decode, short
 * chunks) stay with the CUDA-core kernel. Only head_dim 64 and 128 are supported. Only built when
 * nvcc is found (QS_HAVE_CUDA). */
#ifndef QS_CUDA_ATTENTION_PREFILL_H
#define QS_CUDA_ATTENTION_PREFILL_H

#include <stdbool.h>
#include <stdint.h>

#include "core/ops.h"
#include "util/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The one key-range bound both attention kernels take: a sliding window (> 0), or Llama 4's
 * chunked attention as -attention_chunk (< 0: a token sees positions from pos / chunk * chunk). */
static inline int qs_cuda_attn_window(const qs_attn_batch *b)
{
    return b->attention_chunk > 0 ? -b->attention_chunk : b->sliding_window;
}

/* A run shorter than this stays on the CUDA-core kernel: 16 rows are one m16 MMA tile. */
#define QS_ATTN_PREFILL_MIN_RUN 16

/* Which tokens the tensor-core kernel takes, in device memory (scratch: valid until the next
 * plan). is_prefill[t] is 1 for a token of a run of >= QS_ATTN_PREFILL_MIN_RUN tokens; NULL
 * means every token. rest_pos is tok_pos with 0 for those tokens, so the CUDA-core kernel can run
 * over the whole batch doing one key's work for them (the tensor-core kernel overwrites their
 * rows afterwards); NULL when no token is left for it (a batch of one sequence). */
typedef struct qs_attn_prefill_plan {
    const int32_t *is_prefill;
    const int32_t *rest_pos;
} qs_attn_prefill_plan;

/* Whether the tensor-core kernel may serve this batch and shape: a dev build's lab switch
 * QSERVE_ATTN_PREFILL is not "0" (read at every call, so a test can switch; lab_knob.h), head_dim is 64 or 128, the query heads group over
 * the kv heads, the buffers are 16-byte aligned (cp.async), and the batch could hold a run of
 * QS_ATTN_PREFILL_MIN_RUN tokens. */
bool qs_cuda_attn_prefill_wanted(const void *out, const void *q, const void *k_cache, const void *v_cache,
                                 const qs_attn_batch *b, int n_heads, int n_kv_heads, int head_dim);

/* Marks the tokens of long runs (one small kernel; none for a batch of one sequence). */
int qs_cuda_attn_prefill_plan(const qs_attn_batch *b, qs_attn_prefill_plan *plan, qs_err *err);

/* out[t, h, :] for the marked tokens t: causal (and sliding-window) softmax(q K^T * scale) V over
 * the token's own sequence in the paged cache, out's rows in `order` (core/act_order.h). Rows of
 * other tokens are not touched. Queue it after anything else that writes out (the CUDA-core kernel
 * over rest_pos). */
int qs_cuda_attn_prefill_run(void *out, const void *q, const void *k_cache, const void *v_cache,
                             const qs_attn_batch *b, const qs_attn_prefill_plan *plan, int n_heads, int n_kv_heads,
                             int head_dim, float scale, qs_act_order order, qs_err *err);

#ifdef __cplusplus
}
#endif

#endif
