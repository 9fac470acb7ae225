/* quantize_checkpoint.h — `qserve quantize`: round-to-nearest quantization of an unquantized
 * (BF16/F16/F32) checkpoint into the real on-disk formats (checkpoint-formats.md): config.json's
 * quantization_config (and ModelOpt's hf_quant_config.json) exactly as llm-compressor, ModelOpt
 * or the DeepSeek/Qwen fp8 checkpoints write them, with their tensor names, dtypes and shapes.
 * lm_head, embeddings, norms and MoE routers stay unquantized. Static activation scales come from
 * a calibration pass through the model (calibrate.h). */
#ifndef QS_QUANTIZE_QUANTIZE_CHECKPOINT_H
#define QS_QUANTIZE_QUANTIZE_CHECKPOINT_H

#include <stddef.h>

#include "quantize/quant_target.h"
#include "util/error.h"

typedef struct qs_quantize_options {
    qs_quant_target target;
    qs_quant_format format;
    size_t shard_bytes;       /* 0 = 5 GB */
    int calib_tokens;         /* tokens per calibration prompt; 0 = 128 */
} qs_quantize_options;

int qs_quantize_checkpoint(const char *in_dir, const char *out_dir, const qs_quantize_options *opt, qs_err *err);

#endif
