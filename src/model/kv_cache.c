/* kv_cache.c — the paged KV cache pool (kv_cache.h): per layer one K and one V buffer of
 * num_blocks blocks laid out [block][kv_head][slot][head_dim], allocated through the platform's
 * ops in the element type chosen (activation type, bf16 or FP8 E4M3 with per-layer scales), and a
 * LIFO free list of block ids handed to sequences. */
#include "model/kv_cache.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/ops.h"
#include "device/backends.h"

struct qs_kv_cache {
    const qs_ops *ops;
    int num_layers;
    int num_blocks;
    qs_kv_dtype dtype;
    float *k_scale, *v_scale; /* [num_layers] */
    void **k, **v;        /* [num_layers] device buffers */
    int32_t *free_ids;    /* stack of free block ids */
    int n_free;
    unsigned char *in_use;
};

size_t qs_kv_dtype_size(qs_kv_dtype dtype, qs_platform platform)
{
    switch (dtype) {
    case QS_KV_FP8_E4M3: return 1;
    case QS_KV_BF16: return 2;
    default: {
        const qs_ops *ops = qs_ops_for_platform(platform, NULL);
        return ops ? ops->act_size : 4;
    }
    }
}

int qs_kv_dtype_from_name(const char *name, qs_kv_dtype *out)
{
    if (!strcmp(name, "auto"))
        *out = QS_KV_ACT;
    else if (!strcmp(name, "bf16"))
        *out = QS_KV_BF16;
    else if (!strcmp(name, "fp8") || !strcmp(name, "fp8_e4m3"))
        *out = QS_KV_FP8_E4M3;
    else
        return -1;
    return 0;
}

const char *qs_kv_dtype_name(qs_kv_dtype dtype, qs_platform platform)
{
    if (dtype == QS_KV_FP8_E4M3)
        return "fp8_e4m3";
    return qs_kv_dtype_size(dtype, platform) == 2 ? "bf16" : "float32";
}

static size_t block_bytes(const qs_model_config *mc, qs_kv_dtype dtype, qs_platform platform)
{
    return (size_t)mc->num_kv_heads * QS_KV_BLOCK_SIZE * (size_t)mc->head_dim * qs_kv_dtype_size(dtype, platform);
}

int qs_kv_cache_blocks_for_bytes_dtype(const qs_model_config *mc, qs_platform platform, qs_kv_dtype dtype,
                                       size_t bytes)
{
    const qs_ops *ops = qs_ops_for_platform(platform, NULL);
    if (!ops || mc->num_layers <= 0 || mc->num_kv_heads <= 0 || mc->head_dim <= 0)
        return 0;
    size_t per_block = 2 * (size_t)mc->num_layers * block_bytes(mc, dtype, platform);
    size_t n = bytes / per_block;
    return n > (size_t)INT32_MAX / QS_KV_BLOCK_SIZE ? INT32_MAX / QS_KV_BLOCK_SIZE : (int)n;
}

int qs_kv_cache_blocks_for_bytes(const qs_model_config *mc, qs_platform platform, size_t bytes)
{
    return qs_kv_cache_blocks_for_bytes_dtype(mc, platform, QS_KV_ACT, bytes);
}

int qs_kv_cache_create(const qs_model_config *mc, qs_platform platform, int num_blocks, qs_kv_cache **out, qs_err *err)
{
    return qs_kv_cache_create_dtype(mc, platform, num_blocks, QS_KV_ACT, NULL, NULL, out, err);
}

int qs_kv_cache_create_dtype(const qs_model_config *mc, qs_platform platform, int num_blocks, qs_kv_dtype dtype,
                             const float *k_scales, const float *v_scales, qs_kv_cache **out, qs_err *err)
{
    *out = NULL;
    const qs_ops *ops = qs_ops_for_platform(platform, err);
    if (!ops)
        return -1;
    if (dtype == QS_KV_BF16 && ops->act_size == 2)
        dtype = QS_KV_ACT; /* bf16 activations: the same thing */
    for (int l = 0; l < mc->num_layers && (k_scales || v_scales); l++) {
        float ks = k_scales ? k_scales[l] : 1.0f, vs = v_scales ? v_scales[l] : 1.0f;
        if (!(ks > 0 && isfinite(ks)) || !(vs > 0 && isfinite(vs)))
            return qs_errf(err, "kv cache: layer %d has KV scales k %g, v %g; they must be positive and finite", l,
                           (double)ks, (double)vs);
    }
    if (num_blocks <= 0)
        return qs_errf(err, "kv cache: num_blocks must be positive, got %d", num_blocks);
    if (mc->num_layers <= 0 || mc->num_kv_heads <= 0 || mc->head_dim <= 0)
        return qs_errf(err, "kv cache: model config has %d layers, %d kv heads, head_dim %d", mc->num_layers,
                       mc->num_kv_heads, mc->head_dim);
    qs_kv_cache *kv = calloc(1, sizeof(*kv));
    if (!kv)
        return qs_errf(err, "kv cache: out of memory");
    kv->ops = ops;
    kv->num_layers = mc->num_layers;
    kv->num_blocks = num_blocks;
    kv->dtype = dtype;
    kv->k_scale = malloc(sizeof(float) * (size_t)mc->num_layers);
    kv->v_scale = malloc(sizeof(float) * (size_t)mc->num_layers);
    if (kv->k_scale && kv->v_scale)
        for (int l = 0; l < mc->num_layers; l++) {
            kv->k_scale[l] = k_scales ? k_scales[l] : 1.0f;
            kv->v_scale[l] = v_scales ? v_scales[l] : 1.0f;
        }
    kv->k = calloc((size_t)mc->num_layers, sizeof(void *));
    kv->v = calloc((size_t)mc->num_layers, sizeof(void *));
    kv->free_ids = malloc(sizeof(int32_t) * (size_t)num_blocks);
    kv->in_use = calloc((size_t)num_blocks, 1);
    if (!kv->k || !kv->v || !kv->free_ids || !kv->in_use || !kv->k_scale || !kv->v_scale) {
        qs_kv_cache_free(kv);
        return qs_errf(err, "kv cache: out of memory for %d blocks", num_blocks);
    }
    size_t bytes = block_bytes(mc, dtype, platform) * (size_t)num_blocks;
    for (int l = 0; l < mc->num_layers; l++) {
        kv->k[l] = ops->alloc(bytes, err);
        kv->v[l] = kv->k[l] ? ops->alloc(bytes, err) : NULL;
        if (!kv->v[l]) {
            qs_kv_cache_free(kv);
            return qs_err_prefix(err, "kv cache layer %d (%d blocks): ", l, num_blocks);
        }
    }
    /* hand out low ids first */
    for (int i = 0; i < num_blocks; i++)
        kv->free_ids[i] = num_blocks - 1 - i;
    kv->n_free = num_blocks;
    *out = kv;
    return 0;
}

void qs_kv_cache_free(qs_kv_cache *kv)
{
    if (!kv)
        return;
    for (int l = 0; l < kv->num_layers; l++) {
        if (kv->k)
            kv->ops->free(kv->k[l]);
        if (kv->v)
            kv->ops->free(kv->v[l]);
    }
    free(kv->k);
    free(kv->v);
    free(kv->free_ids);
    free(kv->in_use);
    free(kv->k_scale);
    free(kv->v_scale);
    free(kv);
}

int qs_kv_cache_num_blocks(const qs_kv_cache *kv) { return kv->num_blocks; }
int qs_kv_cache_num_free(const qs_kv_cache *kv) { return kv->n_free; }

int32_t qs_kv_cache_alloc(qs_kv_cache *kv)
{
    if (kv->n_free == 0)
        return -1;
    int32_t id = kv->free_ids[--kv->n_free];
    kv->in_use[id] = 1;
    return id;
}

void qs_kv_cache_release(qs_kv_cache *kv, int32_t block)
{
    /* releasing an unknown or already free block is ignored: it must never corrupt the list */
    if (block < 0 || block >= kv->num_blocks || !kv->in_use[block])
        return;
    kv->in_use[block] = 0;
    kv->free_ids[kv->n_free++] = block;
}

void *qs_kv_cache_k(qs_kv_cache *kv, int layer)
{
    return layer >= 0 && layer < kv->num_layers ? kv->k[layer] : NULL;
}

void *qs_kv_cache_v(qs_kv_cache *kv, int layer)
{
    return layer >= 0 && layer < kv->num_layers ? kv->v[layer] : NULL;
}

qs_kv_dtype qs_kv_cache_dtype(const qs_kv_cache *kv) { return kv->dtype; }

float qs_kv_cache_k_scale(const qs_kv_cache *kv, int layer)
{
    return layer >= 0 && layer < kv->num_layers ? kv->k_scale[layer] : 1.0f;
}

float qs_kv_cache_v_scale(const qs_kv_cache *kv, int layer)
{
    return layer >= 0 && layer < kv->num_layers ? kv->v_scale[layer] : 1.0f;
}

void qs_kv_attn_params(const qs_kv_cache *kv, int layer, qs_attn_batch *b)
{
    b->kv_dtype = kv->dtype;
    b->k_scale = qs_kv_cache_k_scale(kv, layer);
    b->v_scale = qs_kv_cache_v_scale(kv, layer);
}
