/* prefix_cache.h — the KV block pool as the scheduler sees it, with automatic prefix caching
 * (vLLM V1's design): every full block a sequence computes gets a hash chained over its parent
 * block's hash and its 16 token ids (the first block's parent is a root hashed from the request's
 * cache_salt), a hash table maps hashes to cached blocks, blocks carry reference counts (the
 * sequences whose block tables hold them), and a block whose count drops to zero keeps its
 * content and its hash on an LRU list until a new allocation needs it (evicted oldest first).
 * Without caching it is a reference-counted pass-through to the backend's free list.
 *
 * Block storage stays with the backend (qs_engine_backend alloc_block / release_block): a
 * cached free block is held here, and eviction hands it back to the backend and takes a fresh
 * one, so a reused block never looks different from a new one to the model. Pure bookkeeping,
 * the same on CPU and GPU: block ids are what the block tables of both devices hold. */
#ifndef QS_ENGINE_PREFIX_CACHE_H
#define QS_ENGINE_PREFIX_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/backend.h"

typedef struct qs_prefix_cache qs_prefix_cache;

/* seed keys every hash (a random one per server, so clients cannot precompute collisions). */
qs_prefix_cache *qs_prefix_cache_new(const qs_engine_backend *b, bool enabled, uint64_t seed);
void qs_prefix_cache_free(qs_prefix_cache *pc);
bool qs_prefix_cache_enabled(const qs_prefix_cache *pc);

/* Blocks an allocation can get: the backend's free ones plus cached blocks nobody holds. */
int qs_prefix_cache_num_free(const qs_prefix_cache *pc);
/* Blocks that hold cached content (held or not). */
int qs_prefix_cache_num_cached(const qs_prefix_cache *pc);
/* A block for new content, reference count 1: a free one, else the least recently used cached
 * block nobody holds (its hash is dropped). -1 when there is none. */
int32_t qs_prefix_cache_alloc(qs_prefix_cache *pc);
/* One more holder of a cached block (a prefix hit); takes it off the LRU list. */
void qs_prefix_cache_ref(qs_prefix_cache *pc, int32_t block);
/* One holder less. At zero a cached block goes to the LRU list (most recent end), any other back
 * to the backend. */
void qs_prefix_cache_unref(qs_prefix_cache *pc, int32_t block);
/* Whether taking a reference on this block removes it from the free count (cached, unheld). */
bool qs_prefix_cache_is_evictable(const qs_prefix_cache *pc, int32_t block);

/* The root of a request's hash chain: seed and cache_salt (NULL or "" = no salt). */
uint64_t qs_prefix_cache_root(const qs_prefix_cache *pc, const char *salt);
/* The hash of a full block (QS_KV_BLOCK_SIZE token ids) after the block whose hash is parent. */
uint64_t qs_prefix_cache_block_hash(uint64_t parent, const int32_t *tokens);

/* The longest run of cached blocks matching hashes[0..n) (block i holds tokens[16i..16i+16),
 * chained from root); writes their ids to out and returns how many. A match compares the hash,
 * the parent hash and the token ids, so a hash collision can never hand out foreign KV. Takes no
 * references. */
int qs_prefix_cache_lookup(qs_prefix_cache *pc, uint64_t root, const uint64_t *hashes, const int32_t *tokens, int n,
                           int32_t *out);
/* Registers a block whose 16 positions are scheduled for computation (or computed) under hash
 * (parent hash, tokens). No-op when caching is off, the block is cached already or another block
 * holds this hash (that block stays the cached one). Blocks registered since the last commit are
 * pending: qs_prefix_cache_rollback drops their hashes (the forward pass that was to fill them
 * failed), qs_prefix_cache_commit keeps them. */
void qs_prefix_cache_insert(qs_prefix_cache *pc, int32_t block, uint64_t hash, uint64_t parent, const int32_t *tokens);
void qs_prefix_cache_commit(qs_prefix_cache *pc);
void qs_prefix_cache_rollback(qs_prefix_cache *pc);

#endif
