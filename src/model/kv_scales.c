/* kv_scales.c — the per-layer K and V scales of an FP8 KV cache (kv_scales.h), read as vLLM reads
 * them: compressed-tensors checkpoints with a `kv_cache_scheme` store
 * `model.layers.N.self_attn.{k,v}_scale`; ModelOpt checkpoints (`kv_cache_quant_algo: FP8`) store
 * `model.layers.N.self_attn.{k,v}_proj.{k,v}_scale`. Both layouts are looked for in every
 * checkpoint; a layer without a scale gets 1.0, and the result says where the scales came from. */
#include "model/kv_scales.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "io/safetensors.h"
#include "util/fileio.h"

/* Which quantization tool the checkpoint's config names for its KV cache, for the log. */
static const char *declared_by(const qs_model_config *mc, const char *model_dir)
{
    const char *who = NULL;
    if (mc->quantization_config_json) {
        cJSON *q = cJSON_Parse(mc->quantization_config_json);
        if (q && cJSON_GetObjectItem(q, "kv_cache_scheme") && !cJSON_IsNull(cJSON_GetObjectItem(q, "kv_cache_scheme")))
            who = "compressed-tensors kv_cache_scheme";
        else if (q && cJSON_GetObjectItem(q, "kv_cache_quant_algo") &&
                 cJSON_IsString(cJSON_GetObjectItem(q, "kv_cache_quant_algo")))
            who = "ModelOpt kv_cache_quant_algo";
        cJSON_Delete(q);
    }
    if (!who) {
        char path[1200];
        char *text = NULL;
        qs_err e;
        qs_path_join(path, sizeof path, model_dir, "hf_quant_config.json");
        if (qs_file_exists(path) && qs_read_file(path, &text, NULL, &e) == 0) {
            cJSON *root = cJSON_Parse(text);
            cJSON *q = root ? cJSON_GetObjectItem(root, "quantization") : NULL;
            cJSON *algo = q ? cJSON_GetObjectItem(q, "kv_cache_quant_algo") : NULL;
            if (algo && cJSON_IsString(algo))
                who = "ModelOpt kv_cache_quant_algo (hf_quant_config.json)";
            cJSON_Delete(root);
        }
        free(text);
    }
    return who;
}

static int read_scale(const qs_checkpoint *ck, const char *name, float *out, qs_err *err)
{
    const qs_tensor *t = qs_checkpoint_find(ck, name);
    if (!t)
        return 0;
    if (t->numel != 1)
        return qs_errf(err, "%s: tensor %s has %lld elements; a KV scale is one number", t->file, name,
                       (long long)t->numel);
    float v = qs_tensor_get_f32(t, 0);
    if (!(v > 0) || !isfinite(v))
        return qs_errf(err, "%s: tensor %s is %g; a KV scale must be positive and finite", t->file, name, (double)v);
    *out = v;
    return 1;
}

int qs_kv_scales_load(const char *model_dir, const qs_model_config *mc, float *k_scales, float *v_scales,
                      char *source, size_t source_cap, qs_err *err)
{
    for (int l = 0; l < mc->num_layers; l++)
        k_scales[l] = v_scales[l] = 1.0f;
    qs_checkpoint *ck;
    if (qs_checkpoint_open(model_dir, false, &ck, err))
        return -1;
    static const char *const layouts[][2] = {
        {"model.layers.%d.self_attn.k_scale", "model.layers.%d.self_attn.v_scale"},           /* compressed-tensors */
        {"model.layers.%d.self_attn.k_proj.k_scale", "model.layers.%d.self_attn.v_proj.v_scale"}, /* ModelOpt */
        {"model.layers.%d.self_attn.attn.k_scale", "model.layers.%d.self_attn.attn.v_scale"},  /* vLLM's own names */
    };
    int found = 0, layout_used = -1;
    for (int l = 0; l < mc->num_layers; l++) {
        bool got_k = false, got_v = false;
        for (size_t a = 0; a < sizeof layouts / sizeof layouts[0]; a++) {
            char kn[160], vn[160];
            snprintf(kn, sizeof kn, layouts[a][0], l);
            snprintf(vn, sizeof vn, layouts[a][1], l);
            int rk = got_k ? 0 : read_scale(ck, kn, &k_scales[l], err);
            int rv = got_v ? 0 : read_scale(ck, vn, &v_scales[l], err);
            if (rk < 0 || rv < 0) {
                qs_checkpoint_close(ck);
                return -1;
            }
            if (rk > 0 || rv > 0)
                layout_used = (int)a;
            got_k |= rk > 0;
            got_v |= rv > 0;
        }
        found += got_k && got_v;
    }
    qs_checkpoint_close(ck);
    const char *who = declared_by(mc, model_dir);
    static const char *const layout_names[] = {"self_attn.k_scale/v_scale", "self_attn.k_proj.k_scale/v_proj.v_scale",
                                               "self_attn.attn.k_scale/v_scale"};
    if (found == 0)
        snprintf(source, source_cap, "1.0 for every layer: the checkpoint has no k_scale/v_scale tensors%s%s%s",
                 who ? " (though its config declares " : "", who ? who : "", who ? ")" : "");
    else
        snprintf(source, source_cap, "the checkpoint's %s tensors%s%s, %d of %d layers%s", layout_names[layout_used],
                 who ? ", " : "", who ? who : "", found, mc->num_layers,
                 found < mc->num_layers ? " (1.0 for the rest)" : "");
    return found;
}
