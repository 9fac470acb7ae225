/* model_config.h — what config.json and generation_config.json say about a model
 * (../shared/reference/checkpoint-formats.md §6), the architectures' names, and the questions asked
 * of a read config. Reading the files is model_config_load.h's. The raw quantization_config is kept
 * for the quantization loader. */
#ifndef QS_MODEL_MODEL_CONFIG_H
#define QS_MODEL_MODEL_CONFIG_H

#include <stdbool.h>

#include "util/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    QS_ARCH_LLAMA,      /* LlamaForCausalLM */
    QS_ARCH_MISTRAL,    /* MistralForCausalLM */
    QS_ARCH_QWEN2,      /* Qwen2ForCausalLM: q/k/v bias */
    QS_ARCH_QWEN3,      /* Qwen3ForCausalLM: q/k RMSNorm per head */
    QS_ARCH_QWEN3_MOE,  /* Qwen3MoeForCausalLM */
    QS_ARCH_MIXTRAL,    /* MixtralForCausalLM */
    QS_ARCH_LLAMA4,     /* Llama4ForConditionalGeneration: its text model (text_config); vision skipped */
    QS_ARCH_LLAMA4_TEXT, /* Llama4ForCausalLM */
    QS_ARCH_COUNT
} qs_arch;

typedef enum { QS_ROPE_DEFAULT, QS_ROPE_LLAMA3 } qs_rope_type;

#define QS_MAX_EOS 8
#define QS_MAX_LAYERS 256

typedef struct qs_model_config {
    qs_arch arch;
    char arch_name[64];          /* as written in config.json "architectures"[0] */
    char model_type[32];
    int vocab_size;
    int hidden_size;
    int intermediate_size;       /* dense MLP width */
    int num_layers;
    int num_heads;
    int num_kv_heads;
    int head_dim;                /* config head_dim, else hidden_size / num_heads */
    int max_position_embeddings;
    float rms_norm_eps;
    double rope_theta;           /* rope_theta, or rope_parameters.rope_theta */
    qs_rope_type rope_type;
    double rope_factor, rope_low_freq_factor, rope_high_freq_factor;
    int rope_original_max_position;
    bool tie_word_embeddings;
    bool attention_bias;         /* q/k/v projections carry a bias (Qwen2, or attention_bias=true) */
    bool qk_norm;                /* per-head RMSNorm on q and k (Qwen3, Qwen3-MoE) */
    int sliding_window;          /* 0 = none */
    char torch_dtype[16];        /* "bfloat16", "float32", ... ("" if absent) */
    /* MoE (num_experts == 0 for dense models) */
    int num_experts;             /* num_experts / num_local_experts */
    int num_experts_per_tok;
    int moe_intermediate_size;   /* expert MLP width (Mixtral: intermediate_size) */
    bool norm_topk_prob;         /* renormalise the top-k weights (Mixtral: always true) */
    int decoder_sparse_step;     /* Qwen3-MoE: layer i is MoE when (i+1) % step == 0 */
    int mlp_only_layers[64];     /* Qwen3-MoE: layers kept dense */
    int n_mlp_only_layers;
    /* Llama 4 (model_config_llama4.c); all zero / false for the other architectures. */
    bool llama4;
    char tensor_prefix[32];      /* "language_model." for Llama4ForConditionalGeneration, else "" */
    int attention_chunk_size;    /* RoPE layers attend within chunks of this many positions (0: no chunks) */
    unsigned char layer_rope[QS_MAX_LAYERS]; /* no_rope_layers: 1 = RoPE (chunked, L2 q/k norm), 0 = NoPE */
    unsigned char layer_moe[QS_MAX_LAYERS];  /* moe_layers (from interleave_moe_layer_step) */
    bool l2_qk_norm;             /* use_qk_norm: weightless RMS ("L2") norm of q and k per head, RoPE layers */
    bool attn_temperature_tuning; /* NoPE layers: q *= 1 + attn_scale * log(floor((pos + 1) / floor_scale) + 1) */
    double floor_scale, attn_scale;
    int bos_token_id;            /* -1 if absent */
    int eos_token_ids[QS_MAX_EOS];
    int n_eos;
    char *quantization_config_json; /* malloc'd JSON text of "quantization_config", or NULL */
} qs_model_config;

typedef struct qs_generation_config {
    int eos_token_ids[QS_MAX_EOS];
    int n_eos;
    int bos_token_id;            /* -1 if absent */
    bool has_temperature, has_top_p, has_top_k, has_min_p, has_repetition_penalty, has_max_new_tokens;
    double temperature, top_p, min_p, repetition_penalty;
    int top_k;
    int max_new_tokens;          /* >= 1 when has_max_new_tokens */
    bool do_sample;
} qs_generation_config;

void qs_model_config_free(qs_model_config *cfg);
/* True if layer i uses the MoE block. */
bool qs_model_layer_is_moe(const qs_model_config *cfg, int layer);
const char *qs_arch_name(qs_arch a);
/* "LlamaForCausalLM, MistralForCausalLM, ..." for error messages. */
const char *qs_supported_architectures(void);

#ifdef __cplusplus
}
#endif

#endif
