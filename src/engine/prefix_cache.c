/* prefix_cache.c — reference counts, the hash table of cached blocks and the LRU list of cached
 * blocks nobody holds (see prefix_cache.h). The table chains blocks through per-block links in a
 * power-of-two bucket array twice the pool size; the LRU list is doubly linked through per-block
 * links, oldest at the head. Every operation is O(1) except lookup (O(blocks matched)) and the
 * removal of a hash from its bucket (O(bucket length), ~1). */
#include "engine/prefix_cache.h"

#include <stdlib.h>
#include <string.h>

#include "model/kv_cache.h"

typedef struct pc_block {
    int32_t ref;
    bool cached;
    bool pending;               /* registered since the last commit */
    uint64_t hash, parent;
    int32_t bucket_next;        /* next block in this hash's bucket */
    int32_t lru_prev, lru_next; /* on the LRU list when cached and ref == 0 */
    int32_t tokens[QS_KV_BLOCK_SIZE];
} pc_block;

struct qs_prefix_cache {
    qs_engine_backend backend;
    bool enabled;
    uint64_t seed;
    int num_blocks;
    int backend_free;           /* blocks the backend still has */
    int n_cached, n_evictable;
    pc_block *blocks;
    int32_t *buckets;
    uint32_t bucket_mask;
    int32_t lru_head, lru_tail;
    int32_t *pending;           /* blocks registered since the last commit */
    int n_pending;
};

static uint64_t mix64(uint64_t x)
{
    /* splitmix64's finalizer: every input bit reaches every output bit */
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

uint64_t qs_prefix_cache_block_hash(uint64_t parent, const int32_t *tokens)
{
    uint64_t h = mix64(parent ^ 0x9e3779b97f4a7c15ULL);
    for (int i = 0; i < QS_KV_BLOCK_SIZE; i++)
        h = mix64(h ^ ((uint64_t)(uint32_t)tokens[i] | (uint64_t)(i + 1) << 32));
    return h;
}

uint64_t qs_prefix_cache_root(const qs_prefix_cache *pc, const char *salt)
{
    uint64_t h = mix64(pc->seed ^ 0x5851f42d4c957f2dULL);
    if (salt && *salt) {
        h = mix64(h ^ 0x1); /* a salted chain never meets the unsalted one, whatever the salt */
        for (const unsigned char *p = (const unsigned char *)salt; *p; p++)
            h = mix64(h ^ *p);
    }
    return h;
}

qs_prefix_cache *qs_prefix_cache_new(const qs_engine_backend *b, bool enabled, uint64_t seed)
{
    qs_prefix_cache *pc = calloc(1, sizeof *pc);
    if (!pc)
        return NULL;
    pc->backend = *b;
    pc->enabled = enabled;
    pc->seed = seed;
    pc->num_blocks = b->num_blocks;
    pc->backend_free = b->num_blocks;
    pc->lru_head = pc->lru_tail = -1;
    uint32_t nb = 16;
    while (nb < 2u * (uint32_t)(b->num_blocks > 0 ? b->num_blocks : 1))
        nb *= 2;
    pc->bucket_mask = nb - 1;
    pc->blocks = calloc((size_t)(b->num_blocks > 0 ? b->num_blocks : 1), sizeof *pc->blocks);
    pc->buckets = malloc(nb * sizeof *pc->buckets);
    pc->pending = malloc((size_t)(b->num_blocks > 0 ? b->num_blocks : 1) * sizeof *pc->pending);
    if (!pc->blocks || !pc->buckets || !pc->pending) {
        qs_prefix_cache_free(pc);
        return NULL;
    }
    for (uint32_t i = 0; i < nb; i++)
        pc->buckets[i] = -1;
    for (int i = 0; i < b->num_blocks; i++)
        pc->blocks[i].bucket_next = pc->blocks[i].lru_prev = pc->blocks[i].lru_next = -1;
    return pc;
}

void qs_prefix_cache_free(qs_prefix_cache *pc)
{
    if (!pc)
        return;
    /* cached blocks nobody holds go back to the backend */
    if (pc->blocks)
        for (int32_t b = pc->lru_head; b >= 0;) {
            int32_t next = pc->blocks[b].lru_next;
            pc->backend.release_block(pc->backend.ctx, b);
            b = next;
        }
    free(pc->blocks);
    free(pc->buckets);
    free(pc->pending);
    free(pc);
}

bool qs_prefix_cache_enabled(const qs_prefix_cache *pc) { return pc->enabled; }
int qs_prefix_cache_num_free(const qs_prefix_cache *pc) { return pc->backend_free + pc->n_evictable; }
int qs_prefix_cache_num_cached(const qs_prefix_cache *pc) { return pc->n_cached; }

static bool valid(const qs_prefix_cache *pc, int32_t block) { return block >= 0 && block < pc->num_blocks; }

bool qs_prefix_cache_is_evictable(const qs_prefix_cache *pc, int32_t block)
{
    return valid(pc, block) && pc->blocks[block].cached && pc->blocks[block].ref == 0;
}

static void lru_remove(qs_prefix_cache *pc, int32_t b)
{
    pc_block *x = &pc->blocks[b];
    if (x->lru_prev >= 0)
        pc->blocks[x->lru_prev].lru_next = x->lru_next;
    else
        pc->lru_head = x->lru_next;
    if (x->lru_next >= 0)
        pc->blocks[x->lru_next].lru_prev = x->lru_prev;
    else
        pc->lru_tail = x->lru_prev;
    x->lru_prev = x->lru_next = -1;
    pc->n_evictable--;
}

static void lru_push_tail(qs_prefix_cache *pc, int32_t b)
{
    pc_block *x = &pc->blocks[b];
    x->lru_prev = pc->lru_tail;
    x->lru_next = -1;
    if (pc->lru_tail >= 0)
        pc->blocks[pc->lru_tail].lru_next = b;
    else
        pc->lru_head = b;
    pc->lru_tail = b;
    pc->n_evictable++;
}

static int32_t table_find(const qs_prefix_cache *pc, uint64_t hash)
{
    for (int32_t b = pc->buckets[hash & pc->bucket_mask]; b >= 0; b = pc->blocks[b].bucket_next)
        if (pc->blocks[b].hash == hash)
            return b;
    return -1;
}

/* Drops block b's hash from the table (it keeps its holders). */
static void uncache(qs_prefix_cache *pc, int32_t b)
{
    pc_block *x = &pc->blocks[b];
    int32_t *link = &pc->buckets[x->hash & pc->bucket_mask];
    while (*link >= 0 && *link != b)
        link = &pc->blocks[*link].bucket_next;
    if (*link == b)
        *link = x->bucket_next;
    x->bucket_next = -1;
    x->cached = false;
    x->pending = false;
    pc->n_cached--;
}

int32_t qs_prefix_cache_alloc(qs_prefix_cache *pc)
{
    if (pc->backend_free == 0 && pc->lru_head >= 0) {
        /* evict the least recently used cached block nobody holds */
        int32_t victim = pc->lru_head;
        lru_remove(pc, victim);
        uncache(pc, victim);
        pc->backend.release_block(pc->backend.ctx, victim);
        pc->backend_free++;
    }
    if (pc->backend_free == 0)
        return -1;
    int32_t b = pc->backend.alloc_block(pc->backend.ctx);
    if (!valid(pc, b))
        return -1;
    pc->backend_free--;
    pc->blocks[b].ref = 1;
    return b;
}

void qs_prefix_cache_ref(qs_prefix_cache *pc, int32_t block)
{
    if (!valid(pc, block))
        return;
    pc_block *x = &pc->blocks[block];
    if (x->ref == 0 && x->cached)
        lru_remove(pc, block);
    x->ref++;
}

void qs_prefix_cache_unref(qs_prefix_cache *pc, int32_t block)
{
    if (!valid(pc, block) || pc->blocks[block].ref <= 0)
        return;
    pc_block *x = &pc->blocks[block];
    if (--x->ref > 0)
        return;
    if (x->cached) {
        lru_push_tail(pc, block);
    } else {
        pc->backend.release_block(pc->backend.ctx, block);
        pc->backend_free++;
    }
}

int qs_prefix_cache_lookup(qs_prefix_cache *pc, uint64_t root, const uint64_t *hashes, const int32_t *tokens, int n,
                           int32_t *out)
{
    if (!pc->enabled)
        return 0;
    uint64_t parent = root;
    for (int i = 0; i < n; i++) {
        int32_t b = table_find(pc, hashes[i]);
        /* the same hash with another parent or other tokens is a collision: a miss */
        if (b < 0 || pc->blocks[b].parent != parent ||
            memcmp(pc->blocks[b].tokens, tokens + (size_t)i * QS_KV_BLOCK_SIZE, sizeof pc->blocks[b].tokens))
            return i;
        out[i] = b;
        parent = hashes[i];
    }
    return n;
}

void qs_prefix_cache_insert(qs_prefix_cache *pc, int32_t block, uint64_t hash, uint64_t parent, const int32_t *tokens)
{
    if (!pc->enabled || !valid(pc, block) || pc->blocks[block].cached || pc->n_pending >= pc->num_blocks ||
        table_find(pc, hash) >= 0)
        return;
    pc_block *x = &pc->blocks[block];
    x->cached = true;
    x->pending = true;
    x->hash = hash;
    x->parent = parent;
    memcpy(x->tokens, tokens, sizeof x->tokens);
    int32_t *head = &pc->buckets[hash & pc->bucket_mask];
    x->bucket_next = *head;
    *head = block;
    pc->n_cached++;
    pc->pending[pc->n_pending++] = block;
}

void qs_prefix_cache_commit(qs_prefix_cache *pc)
{
    for (int i = 0; i < pc->n_pending; i++)
        pc->blocks[pc->pending[i]].pending = false;
    pc->n_pending = 0;
}

void qs_prefix_cache_rollback(qs_prefix_cache *pc)
{
    for (int i = 0; i < pc->n_pending; i++) {
        int32_t b = pc->pending[i];
        pc_block *x = &pc->blocks[b];
        if (!x->cached || !x->pending) /* evicted and reused since */
            continue;
        bool unheld = x->ref == 0;
        if (unheld)
            lru_remove(pc, b);
        uncache(pc, b);
        if (unheld) {
            pc->backend.release_block(pc->backend.ctx, b);
            pc->backend_free++;
        }
    }
    pc->n_pending = 0;
}
