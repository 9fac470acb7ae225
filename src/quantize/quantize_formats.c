/* quantize_formats.c — what each producer writes into config.json (and ModelOpt into
 * hf_quant_config.json), per checkpoint-formats.md:
 *   compressed-tensors (§3.1.1, §4.3): presets FP8_DYNAMIC, FP8 (static), FP8_BLOCK, NVFP4,
 *     NVFP4A16 as llm-compressor serialises QuantizationArgs; ignore uses "re:" regexes;
 *   fp8 (§3.2): {"quant_method": "fp8", "activation_scheme", "fmt": "e4m3", "weight_block_size"};
 *   ModelOpt (§3.3, §4.1, §4.2): hf_quant_config.json {"producer", "quantization": {quant_algo,
 *     kv_cache_quant_algo, exclude_modules[, group_size]}} and its config.json mirror. */
#include "quantize/quantize_formats.h"

#include <stdio.h>
#include <string.h>

#define CT_VERSION "0.12.2"
#define MODELOPT_VERSION "0.35.0"

/* QuantizationArgs as compressed-tensors serialises it. dynamic: "true", "false" or "local". */
static cJSON *ct_args(int bits, const char *strategy, int group_size, bool block, const char *dynamic)
{
    cJSON *a = cJSON_CreateObject();
    cJSON_AddNumberToObject(a, "num_bits", bits);
    cJSON_AddStringToObject(a, "type", "float");
    cJSON_AddBoolToObject(a, "symmetric", true);
    if (group_size)
        cJSON_AddNumberToObject(a, "group_size", group_size);
    else
        cJSON_AddNullToObject(a, "group_size");
    cJSON_AddStringToObject(a, "strategy", strategy);
    if (block) {
        cJSON *bs = cJSON_AddArrayToObject(a, "block_structure");
        cJSON_AddItemToArray(bs, cJSON_CreateNumber(128));
        cJSON_AddItemToArray(bs, cJSON_CreateNumber(128));
    } else {
        cJSON_AddNullToObject(a, "block_structure");
    }
    if (!strcmp(dynamic, "local"))
        cJSON_AddStringToObject(a, "dynamic", "local");
    else
        cJSON_AddBoolToObject(a, "dynamic", !strcmp(dynamic, "true"));
    cJSON_AddNullToObject(a, "actorder");
    if (bits == 4)
        cJSON_AddStringToObject(a, "scale_dtype", "torch.float8_e4m3fn");
    else
        cJSON_AddNullToObject(a, "scale_dtype");
    cJSON_AddNullToObject(a, "zp_dtype");
    if (!strcmp(dynamic, "true"))
        cJSON_AddNullToObject(a, "observer");
    else
        cJSON_AddStringToObject(a, "observer", "minmax");
    cJSON_AddItemToObject(a, "observer_kwargs", cJSON_CreateObject());
    return a;
}

static void add_skipped(cJSON *arr, const qs_quant_excludes *ex)
{
    for (int i = 0; i < ex->n_skipped; i++)
        cJSON_AddItemToArray(arr, cJSON_CreateString(ex->skipped[i]));
}

static cJSON *ct_config(qs_quant_target t, const qs_quant_excludes *ex)
{
    bool fp4 = t == QS_QTARGET_NVFP4 || t == QS_QTARGET_NVFP4_W4A16;
    const char *fmt = fp4 ? "nvfp4-pack-quantized" : "float-quantized";
    cJSON *q = cJSON_CreateObject();
    cJSON *groups = cJSON_CreateObject(), *g = cJSON_AddObjectToObject(groups, "group_0");
    cJSON *targets = cJSON_AddArrayToObject(g, "targets");
    cJSON_AddItemToArray(targets, cJSON_CreateString("Linear"));
    cJSON *w, *in;
    switch (t) {
    case QS_QTARGET_FP8_DYNAMIC:
        w = ct_args(8, "channel", 0, false, "false");
        in = ct_args(8, "token", 0, false, "true");
        break;
    case QS_QTARGET_FP8_STATIC:
        w = ct_args(8, "tensor", 0, false, "false");
        in = ct_args(8, "tensor", 0, false, "false");
        break;
    case QS_QTARGET_FP8_BLOCK:
        w = ct_args(8, "block", 0, true, "false");
        in = ct_args(8, "group", 128, false, "true");
        break;
    case QS_QTARGET_NVFP4:
        w = ct_args(4, "tensor_group", 16, false, "false");
        in = ct_args(4, "tensor_group", 16, false, "local");
        break;
    default:
        w = ct_args(4, "tensor_group", 16, false, "false");
        in = NULL;
        break;
    }
    cJSON_AddItemToObject(g, "weights", w);
    if (in)
        cJSON_AddItemToObject(g, "input_activations", in);
    else
        cJSON_AddNullToObject(g, "input_activations");
    cJSON_AddNullToObject(g, "output_activations");
    cJSON_AddStringToObject(g, "format", fmt);
    cJSON_AddItemToObject(q, "config_groups", groups);
    cJSON_AddStringToObject(q, "format", fmt);
    cJSON_AddNullToObject(q, "global_compression_ratio");
    cJSON *ign = cJSON_AddArrayToObject(q, "ignore");
    if (ex->lm_head)
        cJSON_AddItemToArray(ign, cJSON_CreateString("lm_head"));
    if (ex->qwen_router)
        cJSON_AddItemToArray(ign, cJSON_CreateString("re:.*mlp.gate$"));
    if (ex->mixtral_router)
        cJSON_AddItemToArray(ign, cJSON_CreateString("re:.*block_sparse_moe.gate$"));
    if (ex->shared_expert_gate)
        cJSON_AddItemToArray(ign, cJSON_CreateString("re:.*shared_expert_gate$"));
    if (ex->llama4_router)
        cJSON_AddItemToArray(ign, cJSON_CreateString("re:.*feed_forward.router$"));
    if (ex->vision) {
        cJSON_AddItemToArray(ign, cJSON_CreateString("re:vision_model.*"));
        cJSON_AddItemToArray(ign, cJSON_CreateString("re:multi_modal_projector.*"));
    }
    add_skipped(ign, ex);
    cJSON_AddNullToObject(q, "kv_cache_scheme");
    cJSON_AddStringToObject(q, "quant_method", "compressed-tensors");
    cJSON_AddStringToObject(q, "quantization_status", "compressed");
    cJSON_AddItemToObject(q, "sparsity_config", cJSON_CreateObject());
    cJSON_AddItemToObject(q, "transform_config", cJSON_CreateObject());
    cJSON_AddStringToObject(q, "version", CT_VERSION);
    return q;
}

static cJSON *fp8_config(qs_quant_target t)
{
    cJSON *q = cJSON_CreateObject();
    cJSON_AddStringToObject(q, "activation_scheme", t == QS_QTARGET_FP8_STATIC ? "static" : "dynamic");
    cJSON_AddStringToObject(q, "fmt", "e4m3");
    cJSON_AddStringToObject(q, "quant_method", "fp8");
    if (t == QS_QTARGET_FP8_BLOCK) {
        cJSON *b = cJSON_AddArrayToObject(q, "weight_block_size");
        cJSON_AddItemToArray(b, cJSON_CreateNumber(128));
        cJSON_AddItemToArray(b, cJSON_CreateNumber(128));
    }
    return q;
}

static const char *modelopt_algo(qs_quant_target t)
{
    switch (t) {
    case QS_QTARGET_FP8_STATIC: return "FP8";
    case QS_QTARGET_FP8_DYNAMIC: return "FP8_PER_CHANNEL_PER_TOKEN";
    case QS_QTARGET_NVFP4: return "NVFP4";
    case QS_QTARGET_NVFP4_W4A16: return "W4A16_NVFP4";
    default: return NULL;
    }
}

static cJSON *modelopt_excludes(const qs_quant_excludes *ex)
{
    cJSON *arr = cJSON_CreateArray();
    if (ex->lm_head)
        cJSON_AddItemToArray(arr, cJSON_CreateString("lm_head"));
    if (ex->qwen_router)
        cJSON_AddItemToArray(arr, cJSON_CreateString("model.layers.*.mlp.gate"));
    if (ex->mixtral_router)
        cJSON_AddItemToArray(arr, cJSON_CreateString("model.layers.*.block_sparse_moe.gate"));
    if (ex->shared_expert_gate)
        cJSON_AddItemToArray(arr, cJSON_CreateString("model.layers.*.mlp.shared_expert_gate"));
    if (ex->llama4_router)
        cJSON_AddItemToArray(arr, cJSON_CreateString("*feed_forward.router"));
    if (ex->vision) {
        cJSON_AddItemToArray(arr, cJSON_CreateString("vision_model*"));
        cJSON_AddItemToArray(arr, cJSON_CreateString("multi_modal_projector*"));
    }
    add_skipped(arr, ex);
    return arr;
}

static cJSON *producer(void)
{
    cJSON *p = cJSON_CreateObject();
    cJSON_AddStringToObject(p, "name", "modelopt");
    cJSON_AddStringToObject(p, "version", MODELOPT_VERSION);
    return p;
}

cJSON *qs_quant_format_hf_quant_config(qs_quant_target t, const qs_quant_excludes *ex)
{
    const char *algo = modelopt_algo(t);
    if (!algo)
        return NULL;
    cJSON *root = cJSON_CreateObject();
    cJSON_AddItemToObject(root, "producer", producer());
    cJSON *q = cJSON_AddObjectToObject(root, "quantization");
    cJSON_AddStringToObject(q, "quant_algo", algo);
    cJSON_AddNullToObject(q, "kv_cache_quant_algo");
    if (t == QS_QTARGET_NVFP4 || t == QS_QTARGET_NVFP4_W4A16)
        cJSON_AddNumberToObject(q, "group_size", 16);
    cJSON_AddItemToObject(q, "exclude_modules", modelopt_excludes(ex));
    return root;
}

/* The config.json mirror of newer ModelOpt exports. */
static cJSON *modelopt_config(qs_quant_target t, const qs_quant_excludes *ex)
{
    const char *algo = modelopt_algo(t);
    cJSON *q = cJSON_CreateObject();
    bool fp4 = t == QS_QTARGET_NVFP4 || t == QS_QTARGET_NVFP4_W4A16;
    cJSON *groups = cJSON_AddObjectToObject(q, "config_groups"), *g = cJSON_AddObjectToObject(groups, "group_0");
    cJSON *w = cJSON_AddObjectToObject(g, "weights");
    cJSON_AddBoolToObject(w, "dynamic", false);
    cJSON_AddNumberToObject(w, "num_bits", fp4 ? 4 : 8);
    cJSON_AddStringToObject(w, "type", "float");
    if (fp4)
        cJSON_AddNumberToObject(w, "group_size", 16);
    if (t != QS_QTARGET_NVFP4_W4A16) {
        cJSON *in = cJSON_AddObjectToObject(g, "input_activations");
        cJSON_AddBoolToObject(in, "dynamic", t == QS_QTARGET_FP8_DYNAMIC);
        cJSON_AddNumberToObject(in, "num_bits", fp4 ? 4 : 8);
        cJSON_AddStringToObject(in, "type", "float");
        if (fp4)
            cJSON_AddNumberToObject(in, "group_size", 16);
    }
    cJSON *targets = cJSON_AddArrayToObject(g, "targets");
    cJSON_AddItemToArray(targets, cJSON_CreateString("Linear"));
    cJSON_AddItemToObject(q, "ignore", modelopt_excludes(ex));
    cJSON_AddNullToObject(q, "kv_cache_scheme");
    cJSON_AddItemToObject(q, "producer", producer());
    cJSON_AddStringToObject(q, "quant_algo", algo);
    cJSON_AddStringToObject(q, "quant_method", "modelopt");
    return q;
}

cJSON *qs_quant_format_config(qs_quant_target t, qs_quant_format f, const qs_quant_excludes *ex)
{
    switch (f) {
    case QS_QFORMAT_COMPRESSED_TENSORS: return ct_config(t, ex);
    case QS_QFORMAT_FP8: return fp8_config(t);
    case QS_QFORMAT_MODELOPT: return modelopt_algo(t) ? modelopt_config(t, ex) : NULL;
    default: return NULL;
    }
}
