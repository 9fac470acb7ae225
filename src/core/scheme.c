/* scheme.c — scheme names as users and logs spell them (BACKENDS.md "Schemes"). */
#include "core/scheme.h"

#include <string.h>

#include "core/fp8.h"

static const char *const SCHEME_NAMES[QS_SCHEME_COUNT] = {
    [QS_SCHEME_BF16] = "bf16",
    [QS_SCHEME_FP8_W8A8] = "fp8_w8a8",
    [QS_SCHEME_FP8_BLOCK_W8A8] = "fp8_block_w8a8",
    [QS_SCHEME_W8A16_FP8] = "w8a16_fp8",
    [QS_SCHEME_NVFP4_W4A4] = "nvfp4_w4a4",
    [QS_SCHEME_NVFP4_W4A16] = "nvfp4_w4a16",
};

const char *qs_scheme_name(qs_scheme s)
{
    if ((int)s < 0 || s >= QS_SCHEME_COUNT)
        return "unknown";
    return SCHEME_NAMES[s];
}

int qs_scheme_from_name(const char *name)
{
    if (!name)
        return -1;
    for (int i = 0; i < QS_SCHEME_COUNT; i++)
        if (!strcmp(name, SCHEME_NAMES[i]))
            return i;
    return -1;
}

bool qs_scheme_is_weight_only(qs_scheme s)
{
    return s == QS_SCHEME_W8A16_FP8 || s == QS_SCHEME_NVFP4_W4A16;
}

bool qs_scheme_is_fp8(qs_scheme s)
{
    return s == QS_SCHEME_FP8_W8A8 || s == QS_SCHEME_FP8_BLOCK_W8A8 || s == QS_SCHEME_W8A16_FP8;
}

bool qs_scheme_is_nvfp4(qs_scheme s)
{
    return s == QS_SCHEME_NVFP4_W4A4 || s == QS_SCHEME_NVFP4_W4A16;
}

const char *qs_scheme_list(void)
{
    return "bf16, fp8_w8a8, fp8_block_w8a8, w8a16_fp8, nvfp4_w4a4, nvfp4_w4a16";
}

const char *qs_weight_scale_layout_name(qs_weight_scale_layout l)
{
    switch (l) {
    case QS_WSCALE_NONE: return "none";
    case QS_WSCALE_TENSOR: return "per-tensor";
    case QS_WSCALE_CHANNEL: return "per-channel";
    case QS_WSCALE_BLOCK: return "block";
    case QS_WSCALE_NVFP4: return "nvfp4 (E4M3 per 16 x FP32 global)";
    }
    return "unknown";
}

const char *qs_act_quant_name(qs_act_quant a)
{
    switch (a) {
    case QS_AQUANT_NONE: return "none";
    case QS_AQUANT_STATIC_TENSOR: return "static per-tensor";
    case QS_AQUANT_DYNAMIC_TENSOR: return "dynamic per-tensor";
    case QS_AQUANT_DYNAMIC_TOKEN: return "dynamic per-token";
    case QS_AQUANT_DYNAMIC_GROUP: return "dynamic per-token group";
    case QS_AQUANT_NVFP4: return "nvfp4";
    }
    return "unknown";
}

float qs_scale_get(const qs_tensor *t, int64_t i)
{
    const uint8_t *p = t->data;
    switch (t->dtype) {
    case QS_DT_F8_E4M3: return qs_e4m3_to_f32(p[i]);
    case QS_DT_F8_E8M0: return qs_e8m0_to_f32(p[i]);
    default: return qs_tensor_get_f32(t, i);
    }
}
