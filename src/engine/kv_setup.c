/* kv_setup.c — --kv-cache-dtype to a KV cache element type and scales (kv_setup.h). */
#include "engine/kv_setup.h"

#include <stdlib.h>
#include <string.h>

#include "model/kv_scales.h"
#include "util/log.h"

int qs_kv_setup_resolve(const qs_config *cfg, const qs_model_config *mc, qs_platform platform, qs_kv_setup *out,
                        qs_err *err)
{
    memset(out, 0, sizeof *out);
    const char *name = cfg->kv_cache_dtype[0] ? cfg->kv_cache_dtype : "auto";
    if (qs_kv_dtype_from_name(name, &out->dtype))
        return qs_errf(err, "--kv-cache-dtype: unknown KV cache dtype '%s'; expected auto, bf16, fp8 or fp8_e4m3", name);
    if (out->dtype != QS_KV_FP8_E4M3)
        return 0;
    out->k_scales = malloc(sizeof(float) * (size_t)mc->num_layers);
    out->v_scales = malloc(sizeof(float) * (size_t)mc->num_layers);
    if (!out->k_scales || !out->v_scales) {
        qs_kv_setup_free(out);
        return qs_errf(err, "out of memory for the KV scales");
    }
    char source[512];
    if (qs_kv_scales_load(cfg->model_dir, mc, out->k_scales, out->v_scales, source, sizeof source, err) < 0) {
        qs_kv_setup_free(out);
        return qs_err_prefix(err, "--kv-cache-dtype %s: ", name);
    }
    qs_info("KV cache dtype fp8_e4m3 (--kv-cache-dtype %s): per-layer K/V scales from %s", name, source);
    (void)platform;
    return 0;
}

void qs_kv_setup_free(qs_kv_setup *s)
{
    free(s->k_scales);
    free(s->v_scales);
    s->k_scales = s->v_scales = NULL;
}

int qs_kv_setup_create_cache(const qs_kv_setup *s, const qs_model_config *mc, qs_platform platform, int num_blocks,
                             qs_kv_cache **out, qs_err *err)
{
    return qs_kv_cache_create_dtype(mc, platform, num_blocks, s->dtype, s->k_scales, s->v_scales, out, err);
}
