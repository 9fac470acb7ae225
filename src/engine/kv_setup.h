/* kv_setup.h — turns --kv-cache-dtype into a KV cache element type and its per-layer scales
 * (kv_scales.h) for `qserve serve` and `qserve generate`, logging where the scales came from. */
#ifndef QS_ENGINE_KV_SETUP_H
#define QS_ENGINE_KV_SETUP_H

#include "config/config.h"
#include "model/kv_cache.h"
#include "model/model_config.h"

typedef struct qs_kv_setup {
    qs_kv_dtype dtype;
    float *k_scales, *v_scales;   /* [num_layers] for FP8, else NULL */
} qs_kv_setup;

/* Resolves cfg->kv_cache_dtype for the model on platform. Errors: an unknown name. */
int qs_kv_setup_resolve(const qs_config *cfg, const qs_model_config *mc, qs_platform platform, qs_kv_setup *out,
                        qs_err *err);
void qs_kv_setup_free(qs_kv_setup *s);
/* A KV cache of num_blocks blocks as set up. */
int qs_kv_setup_create_cache(const qs_kv_setup *s, const qs_model_config *mc, qs_platform platform, int num_blocks,
                             qs_kv_cache **out, qs_err *err);

#endif
