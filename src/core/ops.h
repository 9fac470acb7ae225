/* ops.h — the small device-neutral operation set the forward pass (src/model/forward.c) is
 * written over. Each backend (core/backend.h: src/cpu, cuda/) fills one struct qs_ops with
 * function pointers; the forward pass never touches device memory directly, only through these calls and
 * through the registry-chosen qs_kernel for linear layers and MoE experts.
 *
 * Conventions every implementation follows:
 *  - Device buffers are opaque `void *` handed out by alloc(). Activations are in the device's
 *    activation format (act_size bytes an element: float32 on CPU, bf16 on CUDA), row-major.
 *  - Small per-step index arrays (token ids, positions, slot mappings, block tables) are int32
 *    device buffers uploaded with copy_to_device().
 *  - Norm weights, embeddings and biases are uploaded once at load with upload_tensor(), which
 *    converts any float checkpoint dtype into the device's weight format (float32 on CPU).
 *  - Every op returns 0, or -1 with err filled (a CUDA launch failure, say). Shapes are trusted:
 *    the forward pass validates them at load.
 *  - The KV cache layout is the one of core/kv_layout.h: per layer K and V as
 *    [block][kv_head][slot][head_dim] with QS_KV_BLOCK_SIZE slots a block.
 *  - A device may run the ops on a stream of its own (graph->set_stream below); they are then
 *    queued in call order on it, and only the copies to the host wait for them. */
#ifndef QS_CORE_OPS_H
#define QS_CORE_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/tensor.h"
#include "core/act_order.h"
#include "core/kv_layout.h"
#include "core/sample.h"
#include "core/kernel.h"
#include "util/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One forward step's attention layout, all arrays in device memory except the scalars. Token t
 * belongs to sequence tok_seq[t] and sits at absolute position tok_pos[t]; it attends causally to
 * positions [0, tok_pos[t]] of its sequence, whose KV blocks are
 * block_tables[tok_seq[t] * max_blocks + 0 .. ]. The KV of every token of the step is written
 * (kv_write) before attention runs, so a prefill chunk sees itself. With a sliding window
 * (Mistral, Mixtral) the oldest positions drop out as transformers' mask says. */
typedef struct qs_attn_batch {
    int64_t n_tokens;
    int n_seqs;
    int max_blocks;               /* row stride of block_tables */
    const int32_t *tok_seq;       /* [n_tokens] */
    const int32_t *tok_pos;       /* [n_tokens] */
    const int32_t *block_tables;  /* [n_seqs * max_blocks] */
    const int32_t *slot_mapping;  /* [n_tokens]: block * QS_KV_BLOCK_SIZE + slot to write; < 0: not written
                                   * (the dummy rows that pad a decode batch up to its graph's size) */
    int sliding_window;           /* > 0: token t attends only positions > tok_pos[t] - sliding_window */
    /* the layer's cache element type and, for QS_KV_FP8_E4M3, its K and V scales (set per layer) */
    qs_kv_dtype kv_dtype;
    float k_scale, v_scale;
    int attention_chunk;          /* > 0 (Llama 4's RoPE layers): token t attends only positions of its own
                                   * chunk, >= tok_pos[t] / attention_chunk * attention_chunk */
} qs_attn_batch;

/* Decode-step graphs (src/model/step_graph.c): a device that can record a step's launches once
 * and replay them fills this; NULL where it cannot (CPU). Everything here acts on the calling
 * thread's current stream. */
typedef struct qs_graph_ops {
    /* A stream of the device's own for the forward pass (captures cannot use the default one). */
    void *(*stream_create)(qs_err *err);
    void (*stream_destroy)(void *stream);
    /* Makes stream (NULL: the device's default) the one every op, kernel and copy of the calling
     * thread is queued on; returns the previous one. */
    void *(*set_stream)(void *stream);
    /* Page-locked, zeroed host memory, so that asynchronous copies from it really are. */
    void *(*host_alloc)(size_t bytes, qs_err *err);
    void (*host_free)(void *p);
    /* Asynchronous host-to-device copies on the current stream: bytes, and rows of width bytes
     * at the given pitches. The host memory must stay as it is until the stream gets there. */
    int (*copy_async)(void *dst, const void *src, size_t bytes, qs_err *err);
    int (*copy_2d_async)(void *dst, size_t dst_pitch, const void *src, size_t src_pitch, size_t width, size_t rows,
                         qs_err *err);
    /* Starts recording the current stream's work instead of running it. */
    int (*capture_begin)(qs_err *err);
    /* Ends the recording: an executable graph in *graph, or -1 with err (a call in between that a
     * capture forbids, such as an allocation or a synchronisation) and *graph NULL. Either way
     * the stream is back to running work. nodes (may be NULL) receives the graph's size. */
    int (*capture_end)(void **graph, size_t *nodes, qs_err *err);
    /* Queues one replay on the current stream. */
    int (*graph_launch)(void *graph, qs_err *err);
    void (*graph_destroy)(void *graph);
    /* Changes whenever the device reallocates a scratch buffer kernels keep between calls (a
     * recorded graph holds the old address). */
    uint64_t (*buffers_epoch)(void);
} qs_graph_ops;

typedef struct qs_ops {
    const char *name;             /* "cpu" */
    qs_platform platform;
    size_t act_size;              /* bytes per activation element */

    /* Memory. alloc returns zeroed memory. */
    void *(*alloc)(size_t bytes, qs_err *err);
    void (*free)(void *p);
    int (*copy_to_device)(void *dst, const void *src, size_t bytes, qs_err *err);
    int (*copy_to_host)(void *dst, const void *src, size_t bytes, qs_err *err);
    /* New device buffer holding tensor t (F32/F16/BF16/F64) in the device weight format. */
    void *(*upload_tensor)(const qs_tensor *t, qs_err *err);
    /* Activations -> host float32 (n elements) and back. To the host waits for the current stream. */
    int (*acts_to_host_f32)(float *dst, const void *src, int64_t n, qs_err *err);
    int (*acts_from_host_f32)(void *dst, const float *src, int64_t n, qs_err *err);

    /* out[t, :] = table[ids[t], :], table being an uploaded [vocab, d] weight. */
    int (*embedding)(void *out, const void *table, const int32_t *ids, int64_t n_tokens, int64_t d, qs_err *err);
    /* out[r] = x[r] / rms(x[r]) * w, rows of d (also the per-head q/k norm: rows = tokens * heads). */
    int (*rmsnorm)(void *out, const void *x, const void *w, int64_t rows, int64_t d, float eps, qs_err *err);
    /* residual += x; out = rmsnorm(residual) * w (the pre-norm residual stream, fused), out's rows
     * in `order` (act_order.h: what the next linear kernel reads; d must fit it). */
    int (*add_rmsnorm)(void *residual, const void *x, void *out, const void *w, int64_t rows, int64_t d, float eps,
                       qs_act_order order, qs_err *err);
    /* y[r, :] += bias[:] for rows of n. */
    int (*add_bias)(void *y, const void *bias, int64_t rows, int64_t n, qs_err *err);
    /* Rotary embedding in place on x[t, h, :] (rows of n_heads * head_dim) at position pos[t], HF
     * rotate-half layout: pairs (i, i + head_dim/2) rotated by pos * inv_freq[i]. inv_freq is an
     * uploaded float32 [head_dim/2] (default or llama3-scaled, see qs_rope_inv_freq). */
    int (*rope)(void *x, const int32_t *pos, const void *inv_freq, int64_t n_tokens, int n_heads, int head_dim,
                qs_err *err);
    /* Writes k, v [t, n_kv_heads * head_dim] into the caches at slot_mapping[t] (skipping t where it
     * is negative). */
    int (*kv_write)(void *k_cache, void *v_cache, const void *k, const void *v, const qs_attn_batch *b, int n_kv_heads,
                    int head_dim, qs_err *err);
    /* out[t, h, :] = softmax(q[t,h] . K[0..pos] * scale) V over the paged cache; query head h
     * reads kv head h / (n_heads / n_kv_heads) (GQA). out's rows (n_heads * head_dim) in `order`
     * (act_order.h: what o_proj's kernel reads; the row width must fit it). */
    int (*attention)(void *out, const void *q, const void *k_cache, const void *v_cache, const qs_attn_batch *b,
                     int n_heads, int n_kv_heads, int head_dim, float scale, qs_act_order order, qs_err *err);
    /* out[r, i] = silu(gate[r, i]) * up[r, i]. */
    int (*swiglu)(void *out, const void *gate, const void *up, int64_t rows, int64_t n, qs_err *err);
    /* MoE routing: softmax over router_logits[t, 0..n_experts) (in float32), the top_k largest
     * (ties: lower expert id first), renormalised to sum 1 when norm_topk. ids/weights [t, top_k]. */
    int (*moe_route)(const void *router_logits, int32_t *topk_ids, float *topk_weights, int64_t n_tokens,
                     int n_experts, int top_k, bool norm_topk, qs_err *err);
    /* out[i, :] = x[rows[i], :] for i < n (rows of d): picks the positions that want logits. */
    int (*gather_rows)(void *out, const void *x, const int32_t *rows, int64_t n, int64_t d, qs_err *err);

    /* Fused projections (src/model/projection_fusion_load.c). Last in the table so that a device table written
     * positionally before them still compiles; where a table leaves them NULL the loader keeps the
     * projections separate. */
    /* Splits x [rows, n0 + n1 + n2] by columns into out0 [rows, n0], out1 [rows, n1] and out2
     * [rows, n2]: a fused q/k/v projection's output into q, k and v. */
    int (*split_qkv)(void *out0, void *out1, void *out2, const void *x, int64_t rows, int64_t n0, int64_t n1,
                     int64_t n2, qs_err *err);
    /* out[r, i] = silu(gate_up[r, i]) * gate_up[r, n + i] over rows of 2n: SwiGLU read straight from a
     * fused gate/up projection's output (gate columns, then up), with swiglu's arithmetic exactly;
     * out's rows in `order` (act_order.h; n must fit it). */
    int (*swiglu_gate_up)(void *out, const void *gate_up, int64_t rows, int64_t n, qs_act_order order, qs_err *err);
    /* A fused q/k/v projection's output qkv [t, (n_heads + 2 n_kv_heads) * head_dim] into q
     * [t, n_heads * head_dim] with RoPE applied, and into the caches at slot_mapping[t] (k with RoPE,
     * v as is; skipped where the slot is negative): split_qkv, rope on q and on k, and kv_write in
     * one pass, rounding for rounding (the CPU runs exactly those four). NULL where a device has
     * none: the forward pass then runs the four ops itself. */
    int (*qkv_rope_cache)(void *q, void *k_cache, void *v_cache, const void *qkv, const qs_attn_batch *b,
                          const void *inv_freq, int n_heads, int n_kv_heads, int head_dim, qs_err *err);

    /* Decode-step graphs and streams; NULL where the device has none (CPU). */
    const qs_graph_ops *graph;

    /* Sampling on the device (core/sample.h defines the algorithm): tokens[r] = the token of row r
     * of logits [n_rows, vocab] (activation format) under rows[r], or -1 where rows[r].skip.
     * tokens and rows are device memory. No allocation, no copy and no wait, so that a decode-step
     * graph can record it. NULL where the device has none: the engine samples on the host. */
    int (*sample)(int32_t *tokens, const void *logits, const qs_sample_row *rows, int64_t n_rows, int64_t vocab,
                  qs_err *err);

    /* Llama 4 (forward.c runs them only for a Llama 4 model; NULL where a device has none, and the
     * loader then refuses the model on that device, naming the op). */
    /* Rotary embedding in place with interleaved pairs (2i, 2i + 1) rotated by pos * inv_freq[i]:
     * transformers' Llama 4 apply_rotary_emb (view_as_complex over adjacent pairs). */
    int (*rope_interleaved)(void *x, const int32_t *pos, const void *inv_freq, int64_t n_tokens, int n_heads,
                            int head_dim, qs_err *err);
    /* NoPE attention temperature: x[t, :] (rows of n) *= 1 + attn_scale * log(floor((pos[t] + 1) /
     * floor_scale) + 1), the scale computed in float32. */
    int (*attn_temperature)(void *x, const int32_t *pos, int64_t n_tokens, int64_t n, float floor_scale,
                            float attn_scale, qs_err *err);
    /* Llama 4 top-1 routing: topk_ids[t] = argmax_e router_logits[t, e] (ties: lower id),
     * topk_weights[t] = 1, and x_scaled[t, :] = x[t, :] * sigmoid(router_logits[t, id]): the
     * router's score scales the expert's input, not its output. */
    int (*moe_route_scale_input)(const void *router_logits, const void *x, void *x_scaled, int32_t *topk_ids,
                                 float *topk_weights, int64_t n_tokens, int n_experts, int64_t d, qs_err *err);
    /* y[i] += x[i] for n elements (the shared expert's output onto the routed experts'). */
    int (*add)(void *y, const void *x, int64_t n, qs_err *err);

    /* Expert parallelism (model_tp.c; NULL where a device has none, and --enable-expert-parallel is
     * then refused): routing slots [n] of experts [first, first + count) become local ids
     * (id - first); every other slot gets weight 0 and id -1, which the rank's MoE kernel skips
     * (no expert computes it), and the all-reduce over ranks sums each slot exactly once. */
    int (*moe_expert_slice)(int32_t *topk_ids, float *topk_weights, int64_t n, int first, int count, qs_err *err);
} qs_ops;

#ifdef __cplusplus
}
#endif

#endif
