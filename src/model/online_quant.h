/* online_quant.h — `--quantization fp8` at load time, as vLLM's online FP8: a dense linear
 * layer's weights become FP8 E4M3 with one scale per output channel, activations are quantized
 * dynamically per token (scheme fp8_w8a8). The quantized tensors are owned here and described to
 * the kernels exactly like a checkpoint's FP8 tensors; embeddings, lm_head and MoE routers stay
 * unquantized. */
#ifndef QS_MODEL_ONLINE_QUANT_H
#define QS_MODEL_ONLINE_QUANT_H

#include <stdint.h>

#include "core/tensor.h"
#include "core/scheme.h"
#include "util/error.h"

typedef struct qs_online_fp8 {
    qs_tensor weight, scale;
    char weight_name[192], scale_name[192];
    uint8_t *codes;
    float *scales;
} qs_online_fp8;

/* Quantizes d (which must be dense: scheme bf16) into *own and points d at it. */
int qs_online_fp8_quantize(qs_linear_desc *d, qs_online_fp8 *own, qs_err *err);
void qs_online_fp8_free(qs_online_fp8 *own);

#endif
