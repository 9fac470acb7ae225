/* model_internal.h — the parts of a loaded model shared by the loader (model_load.c,
 * model_weights.c), the forward pass (forward.c, driven by model_step.c) and the step scratch
 * (model_scratch.c). Each linear layer keeps its checkpoint description, the kernel the registry chose and that kernel's
 * prepared state; norms, embeddings and biases are device buffers made by ops->upload_tensor. */
#ifndef QS_MODEL_MODEL_INTERNAL_H
#define QS_MODEL_MODEL_INTERNAL_H

#include "model/model.h"
#include "model/online_quant.h"
#include "model/projection_fusion.h"
#include "model/tp_layout.h"
#include "io/safetensors.h"
#include "core/ops.h"
#include "parallel/comm.h"
#include "quant/linear_shard.h"
#include "quant/quant_config.h"
#include "registry/registry.h"
#include "registry/step_plan.h"

typedef struct qs_linear {
    qs_linear_desc desc;
    const qs_kernel *kernel;
    void *state;
    void *bias;                 /* device bias added by ops->add_bias, or NULL */
    qs_online_fp8 *online;      /* --quantization fp8: the quantized weights desc points at */
    qs_fused_linear *fused;     /* qkv_proj / gate_up_proj: the concatenated tensors desc points at */
    qs_linear_shard *shard;     /* tensor parallelism: this rank's part of the tensors desc points at */
    /* The kernel for a step of m tokens (registry/step_plan.h; made by step_dispatch.c): rows by
     * token count, the last one `kernel` and `state`; the others own their prepared states. */
    qs_plan plan;
} qs_linear;

typedef struct qs_moe_layer {
    qs_moe_desc desc;
    qs_linear_desc *gate, *up, *down; /* [num_experts] */
    const qs_kernel *kernel;
    void *state;
    qs_linear router;
    qs_online_fp8 *online;      /* --quantization fp8: [3 * num_experts] gate, up, down */
    qs_linear_shard *shards;    /* tensor parallelism: [3 * num_experts] gate, up, down of this rank */
    /* Llama 4's fused 3-D expert tensors, split per expert and transposed to [out, in]
     * (model_llama4.c): 3 * num_experts tensors over one buffer, or NULL. */
    qs_tensor *split;
    void *split_data;
    char *split_names;
} qs_moe_layer;

typedef struct qs_layer {
    void *attn_norm, *mlp_norm;
    void *q_norm, *k_norm;      /* Qwen3: per-head RMSNorm weights [head_dim] */
    qs_linear q, k, v, o;
    bool qkv_fused;             /* q, k, v run as the one layer qkv (projection_fusion_load.c); q, k, v are unused */
    qs_linear qkv;
    bool is_moe;
    qs_linear gate, up, down;   /* dense MLP */
    bool gate_up_fused;         /* gate, up run as gate_up; its output is [T, 2 x intermediate] */
    qs_linear gate_up;
    qs_moe_layer moe;
    bool has_shared;            /* Llama 4: the always-on shared expert of a MoE layer */
    qs_linear sh_gate, sh_up, sh_down;
    bool rope;                  /* Llama 4: a RoPE layer (else NoPE); true for every other architecture */
} qs_layer;

/* Where a tensor-parallel rank's step time goes beyond its own compute (model_tp_step.c; logged
 * when the ranks stop): the collectives' wall time, waiting for slower ranks included. */
typedef struct qs_tp_stats {
    long steps, all_reduces;
    double all_reduce_s, gather_s, broadcast_s;
} qs_tp_stats;

/* Per-step buffers, grown to the largest step seen. */
typedef struct qs_scratch {
    uint64_t epoch;             /* changes whenever a buffer gets a new address (recorded graphs hold them) */
    int64_t cap_tokens;
    int64_t cap_table;          /* block-table entries */
    int cap_out;
    void *x, *h, *q, *k, *v, *attn, *o, *gate, *up, *act, *router;
    void *qkv, *gate_up;        /* outputs of fused projections (only when the model has them) */
    void *moe_in, *shared;      /* Llama 4: the scaled expert input and the shared expert's output */
    int32_t *topk_ids;
    float *topk_w;
    void *out_rows, *logits;
    qs_sample_row *d_sample;    /* [cap_out] sampling parameters of the rows (ops->sample) */
    int32_t *d_tokens;          /* [cap_out] their tokens */
    int32_t *d_ids, *d_pos, *d_seq, *d_slots, *d_tables, *d_out_rows;
    /* host mirrors of the index arrays */
    int32_t *h_ids, *h_pos, *h_seq, *h_slots, *h_tables, *h_out_rows;
} qs_scratch;

struct qs_model {
    qs_model_config mc;
    qs_device_caps dev;
    const qs_ops *ops;
    qs_checkpoint *ck;
    qs_quant_config qc;         /* parsed quantization_config (method NONE when absent) */
    bool has_qc;
    void *embed;                /* [vocab, hidden] */
    void *final_norm;
    void *inv_freq;             /* [head_dim / 2] float32 */
    void *ones_head;            /* Llama 4: [head_dim] of 1, the weight of its weightless q/k norm */
    qs_linear lm_head;
    qs_layer *layers;
    qs_fusion_summary fusion;
    qs_scratch s;
    /* Decode-step graphs (step_graph.c), unless QSERVE_CUDA_GRAPHS=0: the stream every op and kernel
     * of the forward pass is queued on, and the graphs. Both NULL otherwise (the device's default
     * stream, every step eager). */
    void *stream;
    struct qs_step_graphs *graphs;
    bool sample_on_device;      /* ops->sample exists and QSERVE_DEVICE_SAMPLING is not 0 */
    bool act_order;             /* QSERVE_ACT_ORDER is not 0: ops write x in its linear's input order */
    /* Tensor parallelism (model_tp.c): the communicator (one rank without it) and this rank's part;
     * mc then holds this rank's heads, KV heads and MLP width, and the global vocabulary. */
    qs_comm *comm;              /* host buffers: the step broadcast */
    qs_comm *dev_comm;          /* device buffers: the all-reduces and the logits gather (comm on CPU, NCCL on CUDA) */
    void *tp_gather;            /* device buffer the ranks' logits slices are gathered into */
    size_t tp_gather_bytes;
    qs_tp_layout tp;
    bool tp_loaded;             /* the load succeeded: rank 0 tells the other ranks when it stops */
    qs_tp_stats tp_stats;
};

/* Fuses every layer's q/k/v and dense gate/up where projection_fusion.h allows (nothing when
 * disabled), filling m->fusion and logging it; before biases are uploaded and kernels chosen. */
int qs_model_fuse_projections(qs_model *m, bool disabled, qs_err *err);
/* The device work of one step, from the embedding of ids to the logits of the rows out_rows
 * (n_out of them, left in m->s.logits), over indices already on the device; no allocation, no
 * copy and no wait, so that a decode-step graph can record it. */
int qs_forward_run(qs_model *m, qs_kv_cache *kv, const qs_attn_batch *b, const int32_t *ids, const int32_t *out_rows,
                   int n_out, qs_err *err);
/* qs_forward_run, then, when d_sample is not NULL, ops->sample over the n_out rows of logits into
 * m->s.d_tokens with the parameters d_sample (device memory); still no allocation, copy or wait. */
int qs_forward_run_sample(qs_model *m, qs_kv_cache *kv, const qs_attn_batch *b, const int32_t *ids,
                          const int32_t *out_rows, int n_out, const qs_sample_row *d_sample, qs_err *err);
/* A step's outputs to the host (waits for the device): with sample (the n_out rows' host
 * parameters), the tokens in m->s.d_tokens and the logits of the skipped rows; without, the
 * logits of every row. */
int qs_forward_outputs(qs_model *m, const qs_sample_row *sample, int n_out, float *logits, int32_t *tokens,
                       qs_err *err);
/* Runs a linear layer: y[m, n] = x[m, k] W^T (+ bias), on the model's stream; x's rows in `order`,
 * which must be natural or qs_linear_order's. */
int qs_linear_apply(const qs_model *m, const qs_linear *l, const void *x, void *y, int64_t rows, qs_act_order order,
                    qs_err *err);
/* The order l's kernel wants x in at `rows` (natural unless the kernel asks and m->act_order). */
qs_act_order qs_linear_order(const qs_model *m, const qs_linear *l, int64_t rows);
/* Grows the scratch buffers for a step. */
int qs_scratch_reserve(qs_model *m, int64_t n_tokens, int n_seqs, int max_blocks, int n_out, qs_err *err);
void qs_scratch_free(qs_model *m);
/* Llama 4 (model_llama4.c): the dense feed_forward of layer i, and a MoE layer's router, shared
 * expert and experts (per-expert tensors, or HF's fused 3-D gate_up_proj / down_proj split and
 * transposed); the check that the device has Llama 4's ops; the release of what the split owns. */
int qs_llama4_load_mlp(qs_model *m, int i, qs_layer *L, qs_err *err);
int qs_llama4_load_moe(qs_model *m, int i, qs_layer *L, qs_err *err);
int qs_llama4_check_device(const qs_model *m, qs_err *err);
void qs_llama4_free_split(qs_moe_layer *moe);
/* Tensor parallelism at load (model_tp.c): cut a layer's attention and dense MLP projections and
 * the lm_head to this rank's part, upload this rank's embedding rows (plus a zero row), and make
 * mc local once every layer is cut. */
int qs_tp_shard_attention(qs_model *m, qs_layer *L, qs_err *err);
int qs_tp_shard_mlp(qs_model *m, qs_layer *L, qs_err *err);
int qs_tp_shard_moe(qs_model *m, qs_layer *L, qs_err *err);
/* A layer's feed-forward part: the dense MLP, or the MoE experts (not under expert parallelism:
 * whole experts, narrowed by qs_tp_expert_slice) and the shared expert (Llama 4, always cut). */
int qs_tp_shard_feed_forward(qs_model *m, qs_layer *L, qs_err *err);
/* --enable-expert-parallel: every MoE layer's description narrowed to this rank's experts (after
 * online quantization, which walks all of them). */
int qs_tp_expert_slice(qs_model *m, qs_err *err);
int qs_tp_shard_lm_head(qs_model *m, qs_err *err);
void *qs_tp_upload_embedding(qs_model *m, const char *name, qs_err *err);
void qs_tp_localize_config(qs_model *m);
/* ... and in a step (model_tp_step.c): a token id's row in this rank's embedding shard; the
 * all-reduce of partial sums (nothing with one rank); rank 0's step broadcast and final stop; the
 * lm_head slices gathered into whole rows of logits (written on rank 0 when logits is not NULL). */
int32_t qs_tp_local_token(const qs_model *m, int32_t id);
int qs_tp_all_reduce(qs_model *m, void *buf, int64_t count, qs_err *err);
int qs_tp_send_step(qs_model *m, const qs_seq_step *seqs, int n_seqs, qs_err *err);
void qs_tp_send_stop(qs_model *m);
int qs_tp_gather_logits(qs_model *m, int n_out, float *logits, qs_err *err);
/* The device communicator of the model's platform (model_tp.c), and its release with the gather buffer. */
int qs_tp_device_comm(qs_model *m, qs_err *err);
void qs_tp_device_free(qs_model *m);
/* One log line: steps, and the time per step in all-reduces, the logits gather and the broadcast. */
void qs_tp_log_stats(const qs_model *m);
/* Fills inv_freq[head_dim/2]: the default RoPE frequencies, llama3-scaled when the config says so. */
void qs_rope_inv_freq(const qs_model_config *mc, float *inv_freq);

#endif
