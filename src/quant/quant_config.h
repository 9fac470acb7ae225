/* quant_config.h — a checkpoint's quantization config, parsed once (config.json's
 * quantization_config or ModelOpt's hf_quant_config.json), and what it says about one module:
 * its weight and activation quantization, or that it stays unquantized (ignore / exclude lists).
 * Formats (../shared/reference/checkpoint-formats.md §2–§4): compressed-tensors float-quantized
 * and nvfp4-pack-quantized (and mixed-precision of those), quant_method "fp8" (block or
 * per-tensor), ModelOpt FP8 / FP8_PER_CHANNEL_PER_TOKEN / FP8_PB_WO / NVFP4 / W4A16_NVFP4 /
 * MIXED_PRECISION. Anything else is an error naming it and listing what is supported.
 * linear_desc.c then reconciles this with the tensors actually present. */
#ifndef QS_QUANT_QUANT_CONFIG_H
#define QS_QUANT_QUANT_CONFIG_H

#include <stdbool.h>

#include "util/error.h"

typedef enum {
    QS_QMETHOD_NONE,               /* unquantized checkpoint */
    QS_QMETHOD_COMPRESSED_TENSORS, /* llm-compressor */
    QS_QMETHOD_FP8,                /* quant_method "fp8" (DeepSeek / Qwen block FP8, AutoFP8) */
    QS_QMETHOD_MODELOPT            /* NVIDIA ModelOpt */
} qs_quant_method;

typedef enum {
    QS_QSTRAT_TENSOR, QS_QSTRAT_CHANNEL, QS_QSTRAT_GROUP, QS_QSTRAT_BLOCK, QS_QSTRAT_TOKEN,
    QS_QSTRAT_TENSOR_GROUP
} qs_quant_strategy;

/* One side (weights or input activations) of a module's quantization. */
typedef struct qs_quant_args {
    bool present;              /* false: not quantized (input side of a weight-only scheme) */
    int num_bits;              /* 8 (FP8 E4M3) or 4 (NVFP4 E2M1) */
    qs_quant_strategy strategy;
    int group_size;            /* GROUP, TENSOR_GROUP */
    int block_n, block_k;      /* BLOCK */
    bool dynamic;              /* scales computed at run time (CT true or "local") */
} qs_quant_args;

typedef enum { QS_LQ_NONE, QS_LQ_FP8, QS_LQ_NVFP4 } qs_layer_format;

/* What the config says about one module. */
typedef struct qs_layer_quant {
    qs_layer_format format;
    qs_quant_args weights, input;
    char source[96];           /* where it came from: "config_groups.group_0", "quant_algo FP8" */
} qs_layer_quant;

typedef struct qs_quant_group {
    char name[64];
    char **targets;            /* "Linear" or "re:<regex>" or a module name */
    void **target_re;          /* compiled regex for "re:" targets, else NULL */
    int n_targets;
    qs_layer_quant lq;
} qs_quant_group;

typedef struct qs_modelopt_layer {
    char *name;
    qs_layer_quant lq;
} qs_modelopt_layer;

typedef enum { QS_IGNORE_CT, QS_IGNORE_FNMATCH, QS_IGNORE_SUBSTRING } qs_ignore_style;

typedef struct qs_quant_config {
    qs_quant_method method;
    char description[160];     /* "compressed-tensors float-quantized (config.json)" */
    char kv_cache_scheme[32];  /* "fp8" when the checkpoint carries FP8 KV-cache scales, else "" */
    /* compressed-tensors groups (also ModelOpt's config.json mirror is not used: see .c) */
    qs_quant_group *groups;
    int n_groups;
    /* modules that stay unquantized: CT ignore, fp8 ignored_layers / modules_to_not_convert,
     * ModelOpt exclude_modules */
    char **ignore;
    void **ignore_re;          /* compiled regex for CT "re:" entries */
    int n_ignore;
    qs_ignore_style ignore_style;
    /* fp8 and ModelOpt: one rule for every module not ignored */
    qs_layer_quant all_layers;
    char quant_algo[32];       /* ModelOpt quant_algo */
    qs_modelopt_layer *layers; /* ModelOpt MIXED_PRECISION quantized_layers */
    int n_layers;
    bool scale_fmt_ue8m0;      /* fp8: scale_fmt "ue8m0" */
} qs_quant_config;

/* Parses quantization_config_json (may be NULL: then MODEL_DIR/hf_quant_config.json is looked
 * for; model_dir may be NULL). A ModelOpt config.json whose directory also holds
 * hf_quant_config.json reads the latter (it is what ModelOpt always writes). */
int qs_quant_config_parse(const char *quantization_config_json, const char *model_dir, qs_quant_config *qc,
                          qs_err *err);
void qs_quant_config_free(qs_quant_config *qc);

/* True if the config's ignore/exclude list names this module. */
bool qs_quant_config_is_ignored(const qs_quant_config *qc, const char *module);
/* Fills *out with what the config says about module (format QS_LQ_NONE: unquantized). */
void qs_quant_config_layer(const qs_quant_config *qc, const char *module, qs_layer_quant *out);

const char *qs_quant_method_name(qs_quant_method m);
const char *qs_quant_strategy_name(qs_quant_strategy s);

#endif
