/* vocab.c — the two hash maps BPE lives on: token string <-> id (open addressing over the id
 * array, so a lookup costs one hash and a memcmp) and merge pair -> (rank, merged id). */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tokenizer_internal.h"

uint64_t qs_hash_bytes(const void *p, size_t n)
{
    /* FNV-1a over 8-byte words, then a final avalanche: fast and good enough for token strings. */
    const uint8_t *s = p;
    uint64_t h = 0xcbf29ce484222325ull ^ n;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ w) * 0x100000001b3ull;
        h ^= h >> 29;
        s += 8;
        n -= 8;
    }
    while (n--) {
        h = (h ^ *s++) * 0x100000001b3ull;
    }
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h;
}

static int vocab_grow_ids(qs_vocab *v, size_t need)
{
    if (need <= v->id_cap)
        return 0;
    size_t n = v->id_cap ? v->id_cap : 1024;
    while (n < need)
        n *= 2;
    char **str = realloc(v->str, n * sizeof *str);
    if (!str)
        return -1;
    v->str = str;
    uint32_t *len = realloc(v->len, n * sizeof *len);
    if (!len)
        return -1;
    v->len = len;
    for (size_t i = v->id_cap; i < n; i++) {
        v->str[i] = NULL;
        v->len[i] = 0;
    }
    v->id_cap = n;
    return 0;
}

static void slots_insert(int32_t *slots, size_t n_slots, const qs_vocab *v, int32_t id)
{
    size_t mask = n_slots - 1, i = qs_hash_bytes(v->str[id], v->len[id]) & mask;
    while (slots[i] >= 0)
        i = (i + 1) & mask;
    slots[i] = id;
}

static int vocab_rehash(qs_vocab *v, size_t n_slots)
{
    int32_t *slots = malloc(n_slots * sizeof *slots);
    if (!slots)
        return -1;
    memset(slots, 0xff, n_slots * sizeof *slots);
    for (size_t i = 0; i < v->n_slots; i++)
        if (v->slots[i] >= 0)
            slots_insert(slots, n_slots, v, v->slots[i]);
    free(v->slots);
    v->slots = slots;
    v->n_slots = n_slots;
    return 0;
}

int32_t qs_vocab_find(const qs_vocab *v, const char *s, size_t n)
{
    if (!v->n_slots)
        return -1;
    size_t mask = v->n_slots - 1, i = qs_hash_bytes(s, n) & mask;
    for (;;) {
        int32_t id = v->slots[i];
        if (id < 0)
            return -1;
        if (v->len[id] == n && !memcmp(v->str[id], s, n))
            return id;
        i = (i + 1) & mask;
    }
}

/* Token strings live in large chunks: one malloc per megabyte rather than per token. */
static char *arena_alloc(qs_vocab *v, size_t n)
{
    enum { CHUNK = 1 << 20 };
    if (!v->n_chunks || v->chunk_used + n > v->chunk_cap) {
        size_t cap = n > CHUNK ? n : CHUNK;
        char **chunks = realloc(v->chunks, (v->n_chunks + 1) * sizeof *chunks);
        if (!chunks)
            return NULL;
        v->chunks = chunks;
        if (!(v->chunks[v->n_chunks] = malloc(cap)))
            return NULL;
        v->n_chunks++;
        v->chunk_used = 0;
        v->chunk_cap = cap;
    }
    char *p = v->chunks[v->n_chunks - 1] + v->chunk_used;
    v->chunk_used += n;
    return p;
}

int qs_vocab_reserve(qs_vocab *v, size_t n_tokens)
{
    size_t slots = 1024;
    while (slots < 2 * n_tokens)
        slots *= 2;
    if (slots > v->n_slots && vocab_rehash(v, slots))
        return -1;
    return vocab_grow_ids(v, n_tokens);
}

int qs_vocab_set(qs_vocab *v, int32_t id, const char *s, size_t n, qs_err *err)
{
    int shown = (int)(n > 64 ? 64 : n);
    if (id < 0)
        return qs_errf(err, "token '%.*s' has a negative id %d", shown, s, id);
    if ((size_t)id < v->n_ids && v->str[id]) {
        if (v->len[id] == n && !memcmp(v->str[id], s, n))
            return 0;
        return qs_errf(err, "id %d is given to both '%s' and '%.*s'", id, v->str[id], shown, s);
    }
    int32_t other = qs_vocab_find(v, s, n);
    if (other >= 0)
        return qs_errf(err, "token '%.*s' has two ids, %d and %d", shown, s, other, id);
    if (vocab_grow_ids(v, (size_t)id + 1))
        return qs_errf(err, "vocabulary: out of memory");
    char *copy = arena_alloc(v, n + 1);
    if (!copy)
        return qs_errf(err, "vocabulary: out of memory");
    memcpy(copy, s, n);
    copy[n] = '\0';
    v->str[id] = copy;
    v->len[id] = (uint32_t)n;
    if ((size_t)id >= v->n_ids)
        v->n_ids = (size_t)id + 1;
    if ((v->n_entries + 1) * 2 > v->n_slots && vocab_rehash(v, v->n_slots ? v->n_slots * 2 : 1024))
        return qs_errf(err, "vocabulary: out of memory");
    slots_insert(v->slots, v->n_slots, v, id);
    v->n_entries++;
    return 0;
}

void qs_vocab_free(qs_vocab *v)
{
    for (size_t i = 0; i < v->n_chunks; i++)
        free(v->chunks[i]);
    free(v->chunks);
    free(v->str);
    free(v->len);
    free(v->slots);
    memset(v, 0, sizeof *v);
}

static int merges_rehash(qs_merges *m, size_t n_slots)
{
    uint64_t *keys = calloc(n_slots, sizeof *keys);
    int32_t *rank = malloc(n_slots * sizeof *rank), *merged = malloc(n_slots * sizeof *merged);
    if (!keys || !rank || !merged) {
        free(keys);
        free(rank);
        free(merged);
        return -1;
    }
    size_t mask = n_slots - 1;
    for (size_t j = 0; j < m->n_slots; j++) {
        uint64_t k = m->keys[j];
        if (!k)
            continue;
        size_t i = (size_t)((k * 0x9E3779B97F4A7C15ull) >> 20) & mask;
        while (keys[i])
            i = (i + 1) & mask;
        keys[i] = k;
        rank[i] = m->rank[j];
        merged[i] = m->merged[j];
    }
    free(m->keys);
    free(m->rank);
    free(m->merged);
    m->keys = keys;
    m->rank = rank;
    m->merged = merged;
    m->n_slots = n_slots;
    return 0;
}

int qs_merges_reserve(qs_merges *m, size_t n)
{
    size_t slots = 1024;
    while (slots < 2 * n)
        slots *= 2;
    return slots > m->n_slots ? merges_rehash(m, slots) : 0;
}

static int note_rank(qs_merges *m, int32_t rank, int32_t merged)
{
    if (rank < 0)
        return -1;
    if ((size_t)rank >= m->n_ranks) {
        size_t n = m->n_ranks ? m->n_ranks : 256;
        while (n <= (size_t)rank)
            n *= 2;
        int32_t *t = realloc(m->merged_by_rank, n * sizeof *t);
        if (!t)
            return -1;
        for (size_t i = m->n_ranks; i < n; i++)
            t[i] = -1;
        m->merged_by_rank = t;
        m->n_ranks = n;
    }
    m->merged_by_rank[rank] = merged;
    return 0;
}

int qs_merges_add(qs_merges *m, int32_t left, int32_t right, int32_t rank, int32_t merged)
{
    if (note_rank(m, rank, merged))
        return -1;
    if ((m->n_entries + 1) * 2 > m->n_slots && merges_rehash(m, m->n_slots ? m->n_slots * 2 : 1024))
        return -1;
    uint64_t key = (((uint64_t)(uint32_t)left << 32) | (uint32_t)right) + 1;
    size_t mask = m->n_slots - 1, i = (size_t)((key * 0x9E3779B97F4A7C15ull) >> 20) & mask;
    while (m->keys[i]) {
        if (m->keys[i] == key) { /* a repeated merge takes its last rank, as HF's map does */
            m->rank[i] = rank;
            m->merged[i] = merged;
            return 0;
        }
        i = (i + 1) & mask;
    }
    m->keys[i] = key;
    m->rank[i] = rank;
    m->merged[i] = merged;
    m->n_entries++;
    return 0;
}

void qs_merges_free(qs_merges *m)
{
    free(m->keys);
    free(m->rank);
    free(m->merged);
    free(m->merged_by_rank);
    memset(m, 0, sizeof *m);
}
