/* quantize_checkpoint.h — `qserve quantize`: round-to-nearest quantization of an unquantized
 * (BF16/F16/F32) checkpoint into the real on-disk formats (checkpoint-formats.md): config.json's
 * quantization_config (and ModelOpt's hf_quant_config.json) exactly as llm-compressor, ModelOpt
 * or the DeepSeek/Qwen fp8 checkpoints write them, with their tensor names, dtypes and shapes.
 * lm_head, embeddings, norms and MoE routers stay unquantized. Static activation scales come from
 * a calibration pass through the model (calibrate.h). */
#ifndef QS_QUANTIZE_QUANTIZE_CHECKPOINT_H
#define QS_QUANTIZE_QUANTIZE_CHECKPOINT_H

#include <stddef.h>

#include "util/error.h"

typedef enum {
    QS_QTARGET_FP8_DYNAMIC,   /* FP8 weights per channel, activations dynamic per token */
    QS_QTARGET_FP8_STATIC,    /* FP8 weights per tensor, activations static per tensor (calibrated) */
    QS_QTARGET_FP8_BLOCK,     /* FP8 weights 128x128 blocks, activations dynamic per token-group of 128 */
    QS_QTARGET_NVFP4,         /* NVFP4 weights and activations (input global scale calibrated) */
    QS_QTARGET_NVFP4_W4A16,   /* NVFP4 weights only */
    QS_QTARGET_COUNT
} qs_quant_target;

typedef enum { QS_QFORMAT_COMPRESSED_TENSORS, QS_QFORMAT_MODELOPT, QS_QFORMAT_FP8, QS_QFORMAT_COUNT } qs_quant_format;

typedef struct qs_quantize_options {
    qs_quant_target target;
    qs_quant_format format;
    size_t shard_bytes;       /* 0 = 5 GB */
    int calib_tokens;         /* tokens per calibration prompt; 0 = 128 */
} qs_quantize_options;

int qs_quant_target_from_name(const char *name);  /* "fp8-dynamic" -> target, -1 if unknown */
int qs_quant_format_from_name(const char *name);  /* "compressed-tensors" -> format, -1 if unknown */
const char *qs_quant_target_name(qs_quant_target t);
const char *qs_quant_format_name(qs_quant_format f);

int qs_quantize_checkpoint(const char *in_dir, const char *out_dir, const qs_quantize_options *opt, qs_err *err);

#endif
