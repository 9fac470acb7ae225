/* init_model.h — what `qserve init-model` writes: random-initialised checkpoints of real model
 * shapes (and tiny test shapes of each architecture) with a byte-level BPE tokenizer, so every
 * loader, kernel and benchmark can run without downloading weights. */
#ifndef QS_CLI_INIT_MODEL_H
#define QS_CLI_INIT_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/tensor.h"
#include "util/error.h"

typedef enum { QS_TOKFAM_LLAMA3, QS_TOKFAM_QWEN, QS_TOKFAM_MISTRAL, QS_TOKFAM_LLAMA4 } qs_token_family;

typedef struct qs_init_shape {
    const char *name;          /* "llama-3.1-8b", "tiny-qwen3-moe" */
    const char *arch;          /* "LlamaForCausalLM" */
    const char *model_type;    /* "llama" */
    qs_token_family tokens;
    int vocab, hidden, inter, layers, heads, kv_heads, head_dim, max_pos;
    double rope_theta, rms_eps;
    bool llama3_rope;          /* rope_scaling {"rope_type": "llama3", factor 8, ...} */
    bool tie, qkv_bias, qk_norm;
    int experts, top_k, moe_inter;  /* 0 experts: dense MLP */
} qs_init_shape;

/* What a Llama 4 shape adds (Llama4ForConditionalGeneration, text_config; fused 3-D experts as
 * transformers saves them): dense layers' intermediate_size_mlp (the shape's inter is the experts'
 * and shared expert's width), every moe_step-th layer MoE, RoPE layers chunked by chunk, every
 * fourth layer NoPE with floor_scale, use_qk_norm. */
typedef struct qs_init_llama4 {
    const char *name;
    int inter_mlp, moe_step, chunk;
    double floor_scale;
    bool l2_qk_norm;           /* Scout: true; Maverick: false */
} qs_init_llama4;

/* The Llama 4 part of shape s, or NULL for the other architectures. */
const qs_init_llama4 *qs_init_shape_llama4(const qs_init_shape *s);

const qs_init_shape *qs_init_shape_find(const char *name);
const char *qs_init_shape_names(void);      /* "llama-3.1-8b, qwen3-8b, ..." */

/* BOS, EOS (end of text) and end-of-turn token ids of the shape's tokenizer (bos -1: none). */
void qs_init_special_ids(const qs_init_shape *s, int *bos, int *eos, int *eot);

/* config.json */
int qs_init_write_config(const char *dir, const qs_init_shape *s, qs_dtype dtype, qs_err *err);
/* tokenizer.json, tokenizer_config.json, generation_config.json */
int qs_init_write_tokenizer(const char *dir, const qs_init_shape *s, qs_err *err);

typedef enum { QS_INIT_NORMAL, QS_INIT_ONES, QS_INIT_ZEROS } qs_init_kind;
typedef struct qs_init_tensor {
    char name[128];
    int ndim;
    int64_t shape[3];
    qs_init_kind kind;
} qs_init_tensor;

/* Every tensor of the shape, in checkpoint order (malloc'd; *n set). */
int qs_init_tensor_list(const qs_init_shape *s, qs_init_tensor **out, int *n, qs_err *err);
/* Generates and writes the weights (std 0.02 normal-ish from seed, norms 1, biases 0) as
 * model.safetensors or shards of at most shard_bytes plus model.safetensors.index.json. */
int qs_init_write_weights(const char *dir, const qs_init_shape *s, uint64_t seed, qs_dtype dtype, size_t shard_bytes,
                          qs_err *err);
/* Total bytes of the weights. */
uint64_t qs_init_weight_bytes(const qs_init_shape *s, qs_dtype dtype);

#endif
