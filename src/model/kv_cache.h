/* kv_cache.h — the paged KV cache: a pool of fixed-size blocks per layer, handed out to
 * sequences through block tables. Layout per layer, for K and for V:
 * [block][kv_head][slot][head_dim] with QS_KV_BLOCK_SIZE slots a block, the layout the GPU decode
 * kernel reads best; the CPU uses the same one. The element type is the device's activation type,
 * bf16, or FP8 E4M3 with one K and one V scale per layer (--kv-cache-dtype; qs_kv_dtype in
 * core/kv_layout.h): FP8 takes one byte an element, so the same memory holds twice the blocks of bf16.
 * The model's forward pass reads and writes it; the engine above hands its blocks to sequences. */
#ifndef QS_MODEL_KV_CACHE_H
#define QS_MODEL_KV_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "core/kernel.h"
#include "core/kv_layout.h"
#include "core/ops.h"
#include "model/model_config.h"
#include "util/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct qs_kv_cache qs_kv_cache;

/* Creates num_blocks blocks for every layer on the platform (float32 on CPU, bf16 on CUDA). */
int qs_kv_cache_create(const qs_model_config *mc, qs_platform platform, int num_blocks, qs_kv_cache **out, qs_err *err);
/* The same with an element type; k_scales / v_scales ([num_layers], copied) are the FP8 scales
 * (NULL: 1.0 everywhere) and must be positive and finite. */
int qs_kv_cache_create_dtype(const qs_model_config *mc, qs_platform platform, int num_blocks, qs_kv_dtype dtype,
                             const float *k_scales, const float *v_scales, qs_kv_cache **out, qs_err *err);
/* Number of blocks that fit in `bytes`. */
int qs_kv_cache_blocks_for_bytes(const qs_model_config *mc, qs_platform platform, size_t bytes);
int qs_kv_cache_blocks_for_bytes_dtype(const qs_model_config *mc, qs_platform platform, qs_kv_dtype dtype,
                                       size_t bytes);
/* Bytes an element of the cache takes on the platform. */
size_t qs_kv_dtype_size(qs_kv_dtype dtype, qs_platform platform);
/* "auto" -> QS_KV_ACT, "bf16", "fp8" / "fp8_e4m3" -> QS_KV_FP8_E4M3 (normalised names); -1 else. */
int qs_kv_dtype_from_name(const char *name, qs_kv_dtype *out);
/* What the cache holds on the platform, for logs: "float32", "bf16", "fp8_e4m3". */
const char *qs_kv_dtype_name(qs_kv_dtype dtype, qs_platform platform);
qs_kv_dtype qs_kv_cache_dtype(const qs_kv_cache *kv);
float qs_kv_cache_k_scale(const qs_kv_cache *kv, int layer);
float qs_kv_cache_v_scale(const qs_kv_cache *kv, int layer);
/* Sets b's kv_dtype, k_scale and v_scale for layer (the ops read them). */
void qs_kv_attn_params(const qs_kv_cache *kv, int layer, qs_attn_batch *b);
void qs_kv_cache_free(qs_kv_cache *kv);
int qs_kv_cache_num_blocks(const qs_kv_cache *kv);
int qs_kv_cache_num_free(const qs_kv_cache *kv);
/* Takes a free block (returns its id) or returns -1 when none is left. */
int32_t qs_kv_cache_alloc(qs_kv_cache *kv);
void qs_kv_cache_release(qs_kv_cache *kv, int32_t block);
/* Base pointers of one layer's K and V pools (device memory on CUDA). */
void *qs_kv_cache_k(qs_kv_cache *kv, int layer);
void *qs_kv_cache_v(qs_kv_cache *kv, int layer);

#ifdef __cplusplus
}
#endif

#endif
