/* bpe.c — the BPE model over one pre-tokenized word, as HF tokenizers runs it: initial symbols
 * (bytes through the GPT-2 table, or characters with <0xNN> byte fallback / unk), then merges
 * taken lowest rank first, leftmost on ties, from a binary heap of candidate pairs with stale
 * entries skipped. A word cache (raw word bytes -> ids, behind a mutex so one tokenizer serves
 * many threads) makes repeated words cost one hash lookup. A long word is merged piece by piece
 * between boundaries no merge can cross (bpe_pieces.c), so its memory is bounded by a piece; a
 * long piece that cannot be cut merges in bpe_compact.c's smaller records. */
#include <stdlib.h>
#include <string.h>
#include <unistr.h>

#include "tokenizer/tokenizer_internal.h"

/* ---------------- word cache ---------------- */

enum { CACHE_MAX_WORD = 256, CACHE_MAX_ENTRIES = 1 << 17 };

typedef struct {
    uint64_t hash;
    uint32_t key_off, key_len, ids_off, n_ids;
} cache_entry;

struct qs_word_cache {
    pthread_mutex_t mu;
    uint32_t *slots; /* entry index + 1; 0 = empty */
    size_t n_slots;
    cache_entry *entries;
    size_t n_entries;
    qs_tbuf keys;
    qs_tids ids;
};

qs_word_cache *qs_word_cache_new(void)
{
    qs_word_cache *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->n_slots = (size_t)CACHE_MAX_ENTRIES * 2;
    c->slots = calloc(c->n_slots, sizeof *c->slots);
    c->entries = malloc(CACHE_MAX_ENTRIES * sizeof *c->entries);
    if (!c->slots || !c->entries) {
        free(c->slots);
        free(c->entries);
        free(c);
        return NULL;
    }
    pthread_mutex_init(&c->mu, NULL);
    return c;
}

void qs_word_cache_free(qs_word_cache *c)
{
    if (!c)
        return;
    pthread_mutex_destroy(&c->mu);
    free(c->slots);
    free(c->entries);
    qs_tbuf_free(&c->keys);
    free(c->ids.data);
    free(c);
}

static bool cache_get(qs_word_cache *c, const char *w, size_t n, uint64_t h, qs_tids *out)
{
    bool found = false;
    pthread_mutex_lock(&c->mu);
    size_t mask = c->n_slots - 1;
    for (size_t i = h & mask; c->slots[i]; i = (i + 1) & mask) {
        const cache_entry *e = &c->entries[c->slots[i] - 1];
        if (e->hash == h && e->key_len == n && !memcmp(c->keys.data + e->key_off, w, n)) {
            found = qs_tids_append(out, c->ids.data + e->ids_off, e->n_ids) == 0;
            break;
        }
    }
    pthread_mutex_unlock(&c->mu);
    return found;
}

static void cache_put(qs_word_cache *c, const char *w, size_t n, uint64_t h, const int32_t *ids, size_t n_ids)
{
    pthread_mutex_lock(&c->mu);
    if (c->n_entries == CACHE_MAX_ENTRIES) { /* full: start over rather than track recency */
        memset(c->slots, 0, c->n_slots * sizeof *c->slots);
        c->n_entries = 0;
        c->keys.len = 0;
        c->ids.len = 0;
    }
    size_t key_off = c->keys.len, ids_off = c->ids.len;
    if (qs_tbuf_append(&c->keys, w, n) == 0 && qs_tids_append(&c->ids, ids, n_ids) == 0) {
        size_t mask = c->n_slots - 1, i = h & mask;
        while (c->slots[i])
            i = (i + 1) & mask;
        c->entries[c->n_entries] = (cache_entry){h, (uint32_t)key_off, (uint32_t)n, (uint32_t)ids_off, (uint32_t)n_ids};
        c->slots[i] = (uint32_t)++c->n_entries;
    }
    pthread_mutex_unlock(&c->mu);
}

/* ---------------- merging ---------------- */

/* Per-symbol and per-candidate records are kept small (12 and 8 bytes) and the candidate heap
 * grows as needed: a long word costs a few times its length, not tens of times. */
typedef struct {
    int32_t id, prev, next; /* id -1: merged into its left neighbour */
} symbol;

typedef struct {
    int32_t rank, pos; /* what it makes is merges.merged_by_rank[rank] */
} cand;

typedef struct {
    cand *h;
    size_t n, cap;
} cand_heap;

static bool cand_less(const cand *a, const cand *b) { return a->rank < b->rank || (a->rank == b->rank && a->pos < b->pos); }

static int heap_push(cand_heap *hp, cand c)
{
    if (hp->n == hp->cap) {
        size_t cap = hp->cap ? hp->cap * 2 : 64;
        cand *h = realloc(hp->h, cap * sizeof *h);
        if (!h)
            return -1;
        hp->h = h;
        hp->cap = cap;
    }
    cand *h = hp->h;
    size_t i = hp->n++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!cand_less(&c, &h[p]))
            break;
        h[i] = h[p];
        i = p;
    }
    h[i] = c;
    return 0;
}

static cand heap_pop(cand_heap *hp)
{
    cand *h = hp->h;
    size_t *n = &hp->n;
    cand top = h[0], last = h[--*n];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        const cand *best = &last;
        if (l < *n && cand_less(&h[l], best)) {
            m = l;
            best = &h[l];
        }
        if (r < *n && cand_less(&h[r], best))
            m = r;
        if (m == i)
            break;
        h[i] = h[m];
        i = m;
    }
    if (*n)
        h[i] = last;
    return top;
}

/* Initial symbol ids of a word into the records sym, or (sym NULL) into bpe_compact.c's plain
 * array ids; room for n either way (one symbol per byte at most). */
static int initial_symbols(const qs_tokenizer *tok, const char *w, size_t n, symbol *sym, int32_t *ids,
                           size_t *n_sym, qs_err *err)
{
    size_t k = 0;
#define ADD(id_) (sym ? (void)(sym[k].id = (id_)) : (void)(ids[k] = (id_)), k++)
    if (tok->byte_level) {
        for (size_t i = 0; i < n; i++) {
            int32_t id = tok->byte_ids[(uint8_t)w[i]];
            if (id < 0)
                return qs_errf(err, "BPE: byte 0x%02X has no token in the vocabulary", (uint8_t)w[i]);
            ADD(id);
        }
        *n_sym = k;
        return 0;
    }
    bool last_unk = false;
    for (size_t i = 0; i < n;) {
        int cl = u8_mblen((const uint8_t *)w + i, n - i);
        if (cl <= 0)
            cl = 1;
        int32_t id = qs_vocab_find(&tok->vocab, w + i, (size_t)cl);
        if (id >= 0) {
            ADD(id);
            last_unk = false;
            i += (size_t)cl;
            continue;
        }
        if (tok->byte_fallback) {
            bool all = true;
            for (int j = 0; j < cl; j++)
                all = all && tok->byte_ids[(uint8_t)w[i + j]] >= 0;
            if (all) {
                for (int j = 0; j < cl; j++)
                    ADD(tok->byte_ids[(uint8_t)w[i + j]]);
                last_unk = false;
                i += (size_t)cl;
                continue;
            }
        }
        if (tok->unk_id < 0)
            return qs_errf(err, "BPE: character '%.*s' is not in the vocabulary and there is no unk_token", cl, w + i);
        if (!(tok->fuse_unk && last_unk)) /* a fused unk extends the previous one */
            ADD(tok->unk_id);
        last_unk = true;
        i += (size_t)cl;
    }
#undef ADD
    *n_sym = k;
    return 0;
}

/* Merges lowest rank first, leftmost on ties; a popped candidate is stale (skipped) unless its
 * pair still merges into what it made when pushed, as HF tokenizers checks. */
static int merge_word(const qs_tokenizer *tok, symbol *s, size_t n, qs_err *err)
{
    for (size_t i = 0; i < n; i++) {
        s[i].prev = (int32_t)i - 1;
        s[i].next = (int32_t)i + 1;
    }
    if (n < 2)
        return 0;
    cand_heap hp = {0};
    int32_t rank, merged;
    const int32_t *made = tok->merges.merged_by_rank;
    for (size_t i = 0; i + 1 < n; i++)
        if (qs_merges_find(&tok->merges, s[i].id, s[i + 1].id, &rank, &merged) &&
            heap_push(&hp, (cand){rank, (int32_t)i}))
            goto oom;
    while (hp.n) {
        cand top = heap_pop(&hp);
        symbol *cur = &s[top.pos];
        if (cur->id < 0 || cur->next >= (int32_t)n)
            continue;
        int32_t rpos = cur->next;
        symbol right = s[rpos];
        int32_t new_id = made[top.rank];
        if (!qs_merges_find(&tok->merges, cur->id, right.id, &rank, &merged) || merged != new_id)
            continue; /* stale: one side was merged into something else since */
        cur->id = new_id;
        cur->next = right.next;
        s[rpos].id = -1;
        if (right.next < (int32_t)n)
            s[right.next].prev = top.pos;
        if (cur->prev >= 0 && qs_merges_find(&tok->merges, s[cur->prev].id, cur->id, &rank, &merged) &&
            heap_push(&hp, (cand){rank, cur->prev}))
            goto oom;
        if (cur->next < (int32_t)n && qs_merges_find(&tok->merges, cur->id, s[cur->next].id, &rank, &merged) &&
            heap_push(&hp, (cand){rank, top.pos}))
            goto oom;
    }
    free(hp.h);
    return 0;
oom:
    free(hp.h);
    return qs_errf(err, "BPE: out of memory");
}

/* ignore_merges: a word that is itself a token is emitted whole. */
static int32_t whole_word_id(const qs_tokenizer *tok, const char *w, size_t n)
{
    if (n > tok->max_token_len) /* a byte maps to at least one byte of a vocab string */
        return -1;
    if (!tok->byte_level)
        return qs_vocab_find(&tok->vocab, w, n);
    char small[CACHE_MAX_WORD * 2] = {0}, *mapped = n <= CACHE_MAX_WORD ? small : malloc(2 * n);
    if (!mapped)
        return -1;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += (size_t)qs_byte_level_char((uint8_t)w[i], mapped + k);
    int32_t id = qs_vocab_find(&tok->vocab, mapped, k);
    if (mapped != small)
        free(mapped);
    return id;
}

/* Pieces longer than this (only words with no safe cut come out so long) merge in bpe_compact.c's
 * small records; shorter ones take the faster heap loop above. */
enum { BPE_COMPACT_MIN = 16384 };

/* One piece of a word (or a whole word): the word cache, then initial symbols and merges. */
static int bpe_piece(const qs_tokenizer *tok, const char *word, size_t len, qs_tids *out, qs_err *err)
{
    bool cacheable = tok->cache && len <= CACHE_MAX_WORD;
    uint64_t h = 0;
    if (cacheable) {
        h = qs_hash_bytes(word, len);
        if (cache_get(tok->cache, word, len, h, out))
            return 0;
    }
    size_t start = out->len, n = 0;
    if (len > BPE_COMPACT_MIN && tok->compact_merges) {
        int32_t *ids = malloc(len * sizeof *ids);
        if (!ids)
            return qs_errf(err, "BPE: out of memory");
        if (initial_symbols(tok, word, len, NULL, ids, &n, err)) {
            free(ids);
            return -1;
        }
        return qs_bpe_merge_compact(tok, ids, n, out, err); /* takes ids over */
    }
    symbol *sym = malloc(len * sizeof *sym);
    if (!sym)
        return qs_errf(err, "BPE: out of memory");
    if (initial_symbols(tok, word, len, sym, NULL, &n, err) ||
        merge_word(tok, sym, n, err)) {
        free(sym);
        return -1;
    }
    for (int32_t i = 0; n && i < (int32_t)n; i = sym[i].next)
        if (qs_tids_push(out, sym[i].id)) {
            free(sym);
            return qs_errf(err, "BPE: out of memory");
        }
    free(sym);
    if (cacheable)
        cache_put(tok->cache, word, len, h, out->data + start, out->len - start);
    return 0;
}

/* Words longer than this are merged piece by piece where no merge can cross (bpe_pieces.c). */
enum { BPE_PIECE_MIN = 4096 };

int qs_bpe_word(const qs_tokenizer *tok, const char *word, size_t len, qs_tids *out, qs_err *err)
{
    if (!len)
        return 0;
    int32_t whole = tok->ignore_merges ? whole_word_id(tok, word, len) : -1;
    if (whole >= 0) {
        if (qs_tids_push(out, whole))
            return qs_errf(err, "BPE: out of memory");
        return 0;
    }
    for (size_t start = 0; start < len;) {
        size_t end = qs_bpe_next_cut(tok, word, start, len, BPE_PIECE_MIN);
        if (bpe_piece(tok, word + start, end - start, out, err))
            return -1;
        start = end;
    }
    return 0;
}
