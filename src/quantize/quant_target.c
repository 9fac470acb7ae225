/* quant_target.c — the command-line names of the quantization targets and formats. */
#include "quantize/quant_target.h"

#include <string.h>

static const char *const TARGET_NAMES[QS_QTARGET_COUNT] = {"fp8-dynamic", "fp8-static", "fp8-block", "nvfp4",
                                                           "nvfp4-w4a16"};
static const char *const FORMAT_NAMES[QS_QFORMAT_COUNT] = {"compressed-tensors", "modelopt", "fp8"};

int qs_quant_target_from_name(const char *name)
{
    for (int i = 0; i < QS_QTARGET_COUNT; i++)
        if (!strcmp(name, TARGET_NAMES[i]))
            return i;
    return -1;
}

int qs_quant_format_from_name(const char *name)
{
    for (int i = 0; i < QS_QFORMAT_COUNT; i++)
        if (!strcmp(name, FORMAT_NAMES[i]))
            return i;
    return -1;
}

const char *qs_quant_target_name(qs_quant_target t) { return (unsigned)t < QS_QTARGET_COUNT ? TARGET_NAMES[t] : "?"; }
const char *qs_quant_format_name(qs_quant_format f) { return (unsigned)f < QS_QFORMAT_COUNT ? FORMAT_NAMES[f] : "?"; }
