/* scheme.h — the quantization schemes (layer types) of ../shared/BACKENDS.md and the description
 * of one linear layer's weights (qs_linear_desc) and of one MoE layer's experts (qs_moe_desc)
 * exactly as the checkpoint stores them, before any kernel repacks them. The loader
 * (quant/linear_desc.c) fills them; kernels (core/kernel.h) consume them. */
#ifndef QS_CORE_SCHEME_H
#define QS_CORE_SCHEME_H

#include <stdbool.h>
#include <stdint.h>

#include "core/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    QS_SCHEME_BF16,            /* unquantized (BF16, F16 or F32 weights) */
    QS_SCHEME_FP8_W8A8,        /* FP8 weights per-tensor/per-channel, FP8 activations */
    QS_SCHEME_FP8_BLOCK_W8A8,  /* FP8 weights 128x128 blocks, activations per-token groups of 128 */
    QS_SCHEME_W8A16_FP8,       /* FP8 weights, BF16 activations */
    QS_SCHEME_NVFP4_W4A4,      /* NVFP4 weights and activations */
    QS_SCHEME_NVFP4_W4A16,     /* NVFP4 weights, BF16 activations */
    QS_SCHEME_COUNT
} qs_scheme;

typedef enum {
    QS_WSCALE_NONE,      /* unquantized */
    QS_WSCALE_TENSOR,    /* one FP32 scale */
    QS_WSCALE_CHANNEL,   /* one FP32 scale per output row: [n] or [n,1] */
    QS_WSCALE_BLOCK,     /* FP32 [ceil(n/bn), ceil(k/bk)] */
    QS_WSCALE_NVFP4      /* E4M3 [n, k/16] times an FP32 global scale */
} qs_weight_scale_layout;

typedef enum {
    QS_AQUANT_NONE,           /* activations stay BF16/F32 (bf16 and weight-only schemes) */
    QS_AQUANT_STATIC_TENSOR,  /* FP8 with the checkpoint's input_scale */
    QS_AQUANT_DYNAMIC_TENSOR, /* FP8, scale = amax(x)/448 over the whole input */
    QS_AQUANT_DYNAMIC_TOKEN,  /* FP8, one scale per row */
    QS_AQUANT_DYNAMIC_GROUP,  /* FP8, one scale per row per group of act_group_size */
    QS_AQUANT_NVFP4           /* NVFP4 per 16 with the checkpoint's input global scale */
} qs_act_quant;

typedef struct qs_linear_desc {
    char name[160];             /* "model.layers.0.self_attn.q_proj" (or an expert's) */
    qs_scheme scheme;
    int64_t n, k;               /* out_features, in_features */
    qs_weight_scale_layout wscale;
    int block_n, block_k;       /* QS_WSCALE_BLOCK: usually 128, 128 */
    qs_act_quant aquant;
    int act_group_size;         /* QS_AQUANT_DYNAMIC_GROUP: 128 */
    const qs_tensor *weight;    /* [n,k] F32/F16/BF16/F8_E4M3; NVFP4: U8 [n, k/2], low nibble first */
    const qs_tensor *weight_scale;  /* see wscale; NULL when unquantized */
    float weight_global_scale;  /* NVFP4: multiply after the E4M3 block scale (ModelOpt weight_scale_2);
                                   1 otherwise. compressed-tensors' reciprocal is already inverted. */
    float input_scale;          /* FP8 static: dequant scale of activations; NVFP4: the input global
                                   scale in the same multiply-to-dequantize convention.
                                   Both scalars are 0 when the checkpoint was opened headers-only. */
    const qs_tensor *bias;      /* [n] or NULL */
} qs_linear_desc;

/* One MoE layer's experts: desc arrays [num_experts] for gate, up and down projections. */
typedef struct qs_moe_desc {
    char name[160];           /* "model.layers.3.mlp.experts" */
    qs_scheme scheme;
    int num_experts, top_k;
    int64_t hidden, inter;    /* hidden size, expert intermediate size */
    const qs_linear_desc *gate, *up, *down;
} qs_moe_desc;

/* Element i of a scale tensor as float: F32, F16, BF16, F64, F8_E4M3 or F8_E8M0. */
float qs_scale_get(const qs_tensor *t, int64_t i);
const char *qs_scheme_name(qs_scheme s);          /* "fp8_w8a8" */
int qs_scheme_from_name(const char *name);        /* -1 if unknown */
bool qs_scheme_is_weight_only(qs_scheme s);       /* w8a16_fp8, nvfp4_w4a16 */
bool qs_scheme_is_fp8(qs_scheme s);               /* fp8_w8a8, fp8_block_w8a8, w8a16_fp8 */
bool qs_scheme_is_nvfp4(qs_scheme s);             /* nvfp4_w4a4, nvfp4_w4a16 */
const char *qs_scheme_list(void);                 /* "bf16, fp8_w8a8, ..." for messages */
const char *qs_weight_scale_layout_name(qs_weight_scale_layout l); /* "per-channel" */
const char *qs_act_quant_name(qs_act_quant a);    /* "dynamic per-token" */

#ifdef __cplusplus
}
#endif

#endif
