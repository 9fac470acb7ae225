/* quant_target.h — what `qserve quantize` can produce: the target scheme and the on-disk format,
 * and their command-line names. Both the driver (quantize_checkpoint.c) and the documents each
 * format writes (quantize_formats.c) stand on it. */
#ifndef QS_QUANTIZE_QUANT_TARGET_H
#define QS_QUANTIZE_QUANT_TARGET_H

typedef enum {
    QS_QTARGET_FP8_DYNAMIC,   /* FP8 weights per channel, activations dynamic per token */
    QS_QTARGET_FP8_STATIC,    /* FP8 weights per tensor, activations static per tensor (calibrated) */
    QS_QTARGET_FP8_BLOCK,     /* FP8 weights 128x128 blocks, activations dynamic per token-group of 128 */
    QS_QTARGET_NVFP4,         /* NVFP4 weights and activations (input global scale calibrated) */
    QS_QTARGET_NVFP4_W4A16,   /* NVFP4 weights only */
    QS_QTARGET_COUNT
} qs_quant_target;

typedef enum { QS_QFORMAT_COMPRESSED_TENSORS, QS_QFORMAT_MODELOPT, QS_QFORMAT_FP8, QS_QFORMAT_COUNT } qs_quant_format;

int qs_quant_target_from_name(const char *name);  /* "fp8-dynamic" -> target, -1 if unknown */
int qs_quant_format_from_name(const char *name);  /* "compressed-tensors" -> format, -1 if unknown */
const char *qs_quant_target_name(qs_quant_target t);
const char *qs_quant_format_name(qs_quant_format f);

#endif
