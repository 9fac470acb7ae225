/* kv_cache.h — the paged KV cache: a pool of fixed-size blocks per layer, handed out to
 * sequences through block tables. Layout per layer, for K and for V:
 * [block][kv_head][slot][head_dim] with QS_KV_BLOCK_SIZE slots a block, the layout the GPU decode
 * kernel reads best; the CPU uses the same one. */
#ifndef QS_ENGINE_KV_CACHE_H
#define QS_ENGINE_KV_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "model/model_config.h"
#include "registry/kernel.h"
#include "util/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define QS_KV_BLOCK_SIZE 16

typedef struct qs_kv_cache qs_kv_cache;

/* Creates num_blocks blocks for every layer on the platform (float32 on CPU, bf16 on CUDA). */
int qs_kv_cache_create(const qs_model_config *mc, qs_platform platform, int num_blocks, qs_kv_cache **out, qs_err *err);
/* Number of blocks that fit in `bytes`. */
int qs_kv_cache_blocks_for_bytes(const qs_model_config *mc, qs_platform platform, size_t bytes);
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
