/* matcher.c — runs a compiled grammar over bytes and computes token masks (structured.h).
 *
 * State: a set of parse stacks, as llama.cpp's grammar sampler keeps them. A stack is a linked
 * list of positions (element indices) in an arena; its top is always a byte-class element, and
 * the empty stack means "complete". A byte advances every stack whose top class holds it, then
 * expands rule references top-down until each new top is a byte class again (a reference in tail
 * position replaces its caller's frame, so right recursion does not grow the stack). Each node
 * carries a hash of the whole stack, so sets are deduplicated and keyed by hash.
 *
 * Mask: a depth-first walk of the vocabulary trie (vocab_trie.h) that advances the stack set
 * one byte per trie edge and skips a whole subtree as soon as the set is empty; nodes made while
 * exploring a subtree are dropped on the way back (arena marks). Masks are cached on the grammar
 * by the hash of the stack set, so a state met again (every character inside a JSON string, the
 * same field in the next request) costs a copy. */
#include <stdlib.h>
#include <string.h>

#include "structured/grammar.h"
#include "structured/vocab_trie.h"
#include "util/grow.h"

#define EMPTY_STACK (-1)
#define EMPTY_HASH 0x9e3779b97f4a7c15ULL
#define MAX_EXPAND 100000 /* bound on stacks one expansion may make (ambiguous grammars) */

typedef struct snode {
    int32_t elem, parent;
    uint64_t hash;
} snode;

/* Where stack nodes live: a matcher's own state, or the grammar's walk DFA. */
typedef struct node_arena {
    snode *nodes;
    int n, cap;
} node_arena;

/* The stack sets met while walking the trie, as states of a DFA built on the fly and kept with
 * the grammar's mask cache: many trie nodes reach the same set (every letter inside a JSON string
 * leads back to "inside the string"), and the next state's walk meets most of the previous one's
 * sets again, so each (set, byte) transition is computed once and a walk is mostly table lookups.
 * Its stacks live in its own arena; it is dropped and rebuilt when it grows past its bounds. */
typedef struct walk_dfa {
    int n, cap;
    int *first, *count;    /* [cap]: tops of state s are pool[first[s] .. first[s] + count[s]) */
    uint64_t *key;         /* [cap] */
    int32_t *trans;        /* [cap * 256]: -2 unknown, -1 dead, else the next state */
    int32_t *pool;
    uint64_t *pool_h;
    int pool_n, pool_cap;
    int32_t *slots;        /* open addressing over keys: state index or -1 */
    int slot_cap;
    node_arena arena;
} walk_dfa;

#define DFA_MAX_STATES 4096
#define DFA_MAX_NODES (1 << 20)

struct qs_mask_cache {
    pthread_mutex_t walk_mu; /* one walk at a time uses the DFA */
    walk_dfa dfa;
    pthread_mutex_t mu;
    const qs_vocab_trie *trie;
    size_t words;
    int cap, n, max_entries;
    uint64_t *keys;     /* 0 = free slot */
    uint32_t **masks;
    int *counts;
};

struct qs_matcher {
    qs_grammar *g;
    const qs_vocab_trie *trie;
    node_arena own;
    node_arena *ar;     /* where expand / advance make nodes: own, or the walk DFA's arena */
    /* the current state: stack tops (node indices or EMPTY_STACK) and their hashes */
    int32_t *cur;
    uint64_t *cur_h;
    int n_cur, cap_cur;
    /* scratch sets, one level per trie depth, stored back to back */
    int32_t *lv;
    uint64_t *lv_h;
    int cap_lv;
    int *lv_start;      /* [max_depth + 2] */
    int *lv_mark;       /* arena size when the level was made */
    uint32_t *mask_tmp;
    int mask_allowed;
    bool mask_ready;    /* mask_tmp holds the current state's mask */
    long expand_budget;
    /* hashes of the rule-topped stacks expanded during this advance: a stack met again (a
     * repetition of something that may be empty) has already given its expansions */
    uint64_t *seen;
    int seen_cap, seen_n;
    bool ended;
    bool oom;
};

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    h *= 0xff51afd7ed558ccdULL;
    return h ^ (h >> 33);
}

static uint64_t stack_hash(const qs_matcher *m, int32_t node) { return node == EMPTY_STACK ? EMPTY_HASH : m->ar->nodes[node].hash; }

static int32_t new_node(qs_matcher *m, int32_t elem, int32_t parent)
{
    snode *p = qs_grow(m->ar->nodes, &m->ar->cap, m->ar->n + 1, 1024, sizeof *p);
    if (!p) {
        m->oom = true;
        return EMPTY_STACK;
    }
    m->ar->nodes = p;
    snode *n = &m->ar->nodes[m->ar->n];
    n->elem = elem;
    n->parent = parent;
    n->hash = mix(stack_hash(m, parent), (uint64_t)elem + 1);
    return m->ar->n++;
}

/* Room for `need` stacks and their hashes in a pair of parallel arrays, doubling from `first`;
 * false when out of memory (whatever was grown stays valid). */
static bool grow_stack_pair(int32_t **stacks, uint64_t **hashes, int *cap, int need, int first)
{
    if (need <= *cap)
        return true;
    int n = qs_grown_cap(*cap, need, first);
    int32_t *a = realloc(*stacks, sizeof *a * (size_t)n);
    if (a)
        *stacks = a;
    uint64_t *h = realloc(*hashes, sizeof *h * (size_t)n);
    if (h)
        *hashes = h;
    if (!a || !h)
        return false;
    *cap = n;
    return true;
}

/* A growable set of stacks in the level buffer: [start, *end). */
static bool lv_reserve(qs_matcher *m, int need)
{
    if (grow_stack_pair(&m->lv, &m->lv_h, &m->cap_lv, need, 256))
        return true;
    m->oom = true;
    return false;
}

static void set_add(qs_matcher *m, int start, int *end, int32_t node)
{
    uint64_t h = stack_hash(m, node);
    for (int i = start; i < *end; i++)
        if (m->lv_h[i] == h)
            return;
    if (!lv_reserve(m, *end + 1))
        return;
    m->lv[*end] = node;
    m->lv_h[*end] = h;
    (*end)++;
}

static void seen_reset(qs_matcher *m)
{
    if (m->seen_n)
        memset(m->seen, 0, sizeof *m->seen * (size_t)m->seen_cap);
    m->seen_n = 0;
}

/* False if h was already there. */
static bool seen_insert(qs_matcher *m, uint64_t h)
{
    if (!h)
        h = 1;
    if (2 * (m->seen_n + 1) > m->seen_cap) {
        int cap = qs_grown_cap(m->seen_cap, 2 * (m->seen_n + 1), 64);
        uint64_t *p = calloc((size_t)cap, sizeof *p);
        if (!p) {
            m->oom = true;
            return false;
        }
        for (int i = 0; i < m->seen_cap; i++)
            if (m->seen[i]) {
                int j = (int)(m->seen[i] & (uint64_t)(cap - 1));
                while (p[j])
                    j = (j + 1) & (cap - 1);
                p[j] = m->seen[i];
            }
        free(m->seen);
        m->seen = p;
        m->seen_cap = cap;
    }
    int j = (int)(h & (uint64_t)(m->seen_cap - 1));
    while (m->seen[j]) {
        if (m->seen[j] == h)
            return false;
        j = (j + 1) & (m->seen_cap - 1);
    }
    m->seen[j] = h;
    m->seen_n++;
    return true;
}

/* Expands node (whose top may be a rule reference) into stacks with byte-class tops. */
static void expand(qs_matcher *m, int32_t node, int start, int *end)
{
    if (node == EMPTY_STACK) {
        set_add(m, start, end, EMPTY_STACK);
        return;
    }
    if (--m->expand_budget < 0 || m->oom)
        return;
    const qs_grammar *g = m->g;
    qs_gelem el = g->elems[m->ar->nodes[node].elem];
    if (el.kind == QS_EL_BYTES) {
        set_add(m, start, end, node);
        return;
    }
    if (!seen_insert(m, m->ar->nodes[node].hash))
        return;
    int32_t cont = m->ar->nodes[node].elem + 1, parent = m->ar->nodes[node].parent;
    int32_t base = g->elems[cont].kind == QS_EL_END ? parent : new_node(m, cont, parent);
    int rule = (int)el.arg;
    for (int a = g->rule_alts[rule]; a < g->rule_alts[rule + 1]; a++) {
        int32_t first = g->alts[a];
        if (g->elems[first].kind == QS_EL_END)
            expand(m, base, start, end);
        else
            expand(m, new_node(m, first, base), start, end);
    }
}

/* Advances the set lv[in_start, in_end) by byte into lv[in_end, *out_end). */
static void advance(qs_matcher *m, int in_start, int in_end, unsigned byte, int *out_end)
{
    const qs_grammar *g = m->g;
    *out_end = in_end;
    m->expand_budget = MAX_EXPAND;
    seen_reset(m);
    for (int i = in_start; i < in_end; i++) {
        int32_t node = m->lv[i];
        if (node == EMPTY_STACK)
            continue;
        qs_gelem el = g->elems[m->ar->nodes[node].elem];
        if (!qs_byteset_has(&g->sets[el.arg], byte))
            continue;
        int32_t next = m->ar->nodes[node].elem + 1, parent = m->ar->nodes[node].parent;
        if (g->elems[next].kind == QS_EL_END)
            expand(m, parent, in_end, out_end);
        else
            expand(m, new_node(m, next, parent), in_end, out_end);
    }
}

/* Copies the stacks of lv[start, end) into a fresh arena as the current state. */
static bool set_current(qs_matcher *m, int start, int end)
{
    int n = end - start;
    snode *old = m->ar->nodes;
    int n_old = m->ar->n;
    int32_t *tops = malloc(sizeof *tops * (size_t)(n ? n : 1));
    uint64_t *hs = malloc(sizeof *hs * (size_t)(n ? n : 1));
    snode *fresh = malloc(sizeof *fresh * (size_t)(n_old ? n_old : 1));
    int32_t *map = malloc(sizeof *map * (size_t)(n_old ? n_old : 1));
    if (!tops || !hs || !fresh || !map) {
        free(tops);
        free(hs);
        free(fresh);
        free(map);
        m->oom = true;
        return false;
    }
    for (int i = 0; i < n_old; i++)
        map[i] = -2;
    int n_fresh = 0;
    for (int i = 0; i < n; i++) {
        int32_t node = m->lv[start + i];
        hs[i] = m->lv_h[start + i];
        /* copy the chain root-first so parents get their new index before children */
        int32_t chain[4096];
        int depth = 0;
        int32_t k = node;
        for (; k != EMPTY_STACK && map[k] == -2 && depth < 4096; k = old[k].parent)
            chain[depth++] = k;
        if (k != EMPTY_STACK && map[k] == -2) { /* nested deeper than we copy */
            free(tops);
            free(hs);
            free(fresh);
            free(map);
            m->oom = true;
            return false;
        }
        for (int d = depth - 1; d >= 0; d--) {
            k = chain[d];
            fresh[n_fresh] = old[k];
            fresh[n_fresh].parent = old[k].parent == EMPTY_STACK ? EMPTY_STACK : map[old[k].parent];
            map[k] = n_fresh++;
        }
        tops[i] = node == EMPTY_STACK ? EMPTY_STACK : map[node];
    }
    free(map);
    free(old);
    m->ar->nodes = fresh;
    m->ar->n = n_fresh;
    m->ar->cap = n_old ? n_old : 1;
    free(m->cur);
    free(m->cur_h);
    m->mask_ready = false;
    m->cur = tops;
    m->cur_h = hs;
    m->n_cur = n;
    return true;
}

/* Loads the current state into level 0 of the scratch buffer: [0, n_cur). */
static bool load_current(qs_matcher *m)
{
    if (!lv_reserve(m, m->n_cur + 1))
        return false;
    if (m->n_cur) {
        memcpy(m->lv, m->cur, sizeof *m->cur * (size_t)m->n_cur);
        memcpy(m->lv_h, m->cur_h, sizeof *m->cur_h * (size_t)m->n_cur);
    }
    return true;
}

qs_matcher *qs_matcher_new(qs_grammar *g, const qs_vocab_trie *t)
{
    qs_matcher *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->g = g;
    m->trie = t;
    m->ar = &m->own;
    int depth = t ? t->max_depth : 0;
    m->lv_start = malloc(sizeof(int) * (size_t)(depth + 2));
    m->lv_mark = malloc(sizeof(int) * (size_t)(depth + 2));
    m->mask_tmp = t ? malloc(sizeof(uint32_t) * qs_mask_words(t)) : NULL;
    if (!m->lv_start || !m->lv_mark || (t && !m->mask_tmp) || !lv_reserve(m, 256)) {
        free(m->lv_start);
        free(m->lv_mark);
        free(m->mask_tmp);
        free(m->lv);
        free(m->lv_h);
        free(m);
        return NULL;
    }
    qs_grammar_retain(g);
    /* the start state: the root rule expanded */
    int end = 0;
    m->expand_budget = MAX_EXPAND;
    seen_reset(m);
    for (int a = g->rule_alts[g->root]; a < g->rule_alts[g->root + 1]; a++) {
        int32_t first = g->alts[a];
        if (g->elems[first].kind == QS_EL_END)
            expand(m, EMPTY_STACK, 0, &end);
        else
            expand(m, new_node(m, first, EMPTY_STACK), 0, &end);
    }
    if (m->oom || !set_current(m, 0, end)) {
        qs_matcher_free(m);
        return NULL;
    }
    return m;
}

void qs_matcher_free(qs_matcher *m)
{
    if (!m)
        return;
    qs_grammar_release(m->g);
    free(m->own.nodes);
    free(m->cur);
    free(m->cur_h);
    free(m->lv);
    free(m->lv_h);
    free(m->lv_start);
    free(m->lv_mark);
    free(m->mask_tmp);
    free(m->seen);
    free(m);
}

bool qs_matcher_is_complete(const qs_matcher *m)
{
    for (int i = 0; i < m->n_cur; i++)
        if (m->cur[i] == EMPTY_STACK)
            return true;
    return false;
}

bool qs_matcher_is_terminated(const qs_matcher *m) { return m->ended || (m->n_cur == 1 && m->cur[0] == EMPTY_STACK); }
bool qs_matcher_ended(const qs_matcher *m) { return m->ended; }

bool qs_matcher_accept_bytes(qs_matcher *m, const void *bytes, size_t len)
{
    if (m->ended || !load_current(m))
        return false;
    const uint8_t *p = bytes;
    int start = 0, end = m->n_cur;
    int arena = m->ar->n;
    for (size_t k = 0; k < len; k++) {
        int out_end;
        advance(m, start, end, p[k], &out_end);
        if (out_end == end || m->oom) {
            m->ar->n = arena;
            return false;
        }
        /* keep only the newest level: move it down to the start */
        int n = out_end - end;
        memmove(m->lv, m->lv + end, sizeof *m->lv * (size_t)n);
        memmove(m->lv_h, m->lv_h + end, sizeof *m->lv_h * (size_t)n);
        start = 0;
        end = n;
    }
    return set_current(m, start, end);
}

bool qs_matcher_accept_token(qs_matcher *m, int32_t id)
{
    const qs_vocab_trie *t = m->trie;
    if (!t || id < 0 || id >= t->vocab_size || m->ended)
        return false;
    for (int i = 0; i < t->n_end; i++)
        if (t->end_ids[i] == id) {
            if (!qs_matcher_is_complete(m))
                return false;
            m->ended = true;
            m->mask_ready = false;
            return true;
        }
    int64_t off = t->bytes_off[id], len = t->bytes_off[id + 1] - off;
    if (len == 0)
        return false;
    return qs_matcher_accept_bytes(m, t->bytes + off, (size_t)len);
}

/* ---- mask cache ---- */

static void mask_cache_free(qs_mask_cache *c);

static qs_mask_cache *cache_get(qs_grammar *g, const qs_vocab_trie *t)
{
    static pthread_mutex_t create_mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&create_mu);
    if (!g->cache) {
        qs_mask_cache *c = calloc(1, sizeof *c);
        if (c) {
            pthread_mutex_init(&c->mu, NULL);
            pthread_mutex_init(&c->walk_mu, NULL);
            c->trie = t;
            c->words = qs_mask_words(t);
            size_t budget = (size_t)8 << 20; /* bytes of masks per grammar (8 grammars stay cached) */
            c->max_entries = (int)(budget / (c->words * 4));
            if (c->max_entries < 8)
                c->max_entries = 8;
            if (c->max_entries > 4096)
                c->max_entries = 4096;
            c->cap = 1;
            while (c->cap < c->max_entries * 2)
                c->cap *= 2;
            c->keys = calloc((size_t)c->cap, sizeof *c->keys);
            c->masks = calloc((size_t)c->cap, sizeof *c->masks);
            c->counts = calloc((size_t)c->cap, sizeof *c->counts);
            if (!c->keys || !c->masks || !c->counts) {
                free(c->keys);
                free(c->masks);
                free(c->counts);
                free(c);
                c = NULL;
            }
        }
        g->cache = c;
        g->free_cache = mask_cache_free;
    }
    pthread_mutex_unlock(&create_mu);
    return g->cache && g->cache->trie == t ? g->cache : NULL;
}

static void dfa_free(walk_dfa *d);

static void mask_cache_free(qs_mask_cache *c)
{
    if (!c)
        return;
    for (int i = 0; i < c->cap; i++)
        free(c->masks[i]);
    free(c->keys);
    free(c->masks);
    free(c->counts);
    dfa_free(&c->dfa);
    pthread_mutex_destroy(&c->mu);
    pthread_mutex_destroy(&c->walk_mu);
    free(c);
}

static uint64_t set_key(const uint64_t *h, int n);
static uint64_t state_key(const qs_matcher *m) { return set_key(m->cur_h, m->n_cur); }

static bool cache_lookup(qs_mask_cache *c, uint64_t key, uint32_t *mask, int *count)
{
    bool hit = false;
    pthread_mutex_lock(&c->mu);
    for (int i = (int)(key & (uint64_t)(c->cap - 1));; i = (i + 1) & (c->cap - 1)) {
        if (!c->keys[i])
            break;
        if (c->keys[i] == key) {
            memcpy(mask, c->masks[i], c->words * 4);
            *count = c->counts[i];
            hit = true;
            break;
        }
    }
    pthread_mutex_unlock(&c->mu);
    return hit;
}

static void cache_store(qs_mask_cache *c, uint64_t key, const uint32_t *mask, int count)
{
    pthread_mutex_lock(&c->mu);
    if (c->n < c->max_entries) {
        uint32_t *copy = malloc(c->words * 4);
        if (copy) {
            memcpy(copy, mask, c->words * 4);
            int i = (int)(key & (uint64_t)(c->cap - 1));
            while (c->keys[i] && c->keys[i] != key)
                i = (i + 1) & (c->cap - 1);
            if (c->keys[i]) {
                free(copy);
            } else {
                c->keys[i] = key;
                c->masks[i] = copy;
                c->counts[i] = count;
                c->n++;
            }
        }
    }
    pthread_mutex_unlock(&c->mu);
}


static void dfa_free(walk_dfa *d)
{
    free(d->first);
    free(d->count);
    free(d->key);
    free(d->trans);
    free(d->pool);
    free(d->pool_h);
    free(d->slots);
    free(d->arena.nodes);
    memset(d, 0, sizeof *d);
}

static uint64_t set_key(const uint64_t *h, int n)
{
    uint64_t sum = 0, x = 0;
    for (int i = 0; i < n; i++) {
        sum += h[i];
        x ^= mix(h[i], 7);
    }
    uint64_t k = mix(mix(sum, x), (uint64_t)n);
    return k ? k : 1;
}

static int dfa_find(const walk_dfa *d, uint64_t key)
{
    if (!d->slot_cap)
        return -1;
    for (int j = (int)(key & (uint64_t)(d->slot_cap - 1)); d->slots[j] >= 0; j = (j + 1) & (d->slot_cap - 1))
        if (d->key[d->slots[j]] == key)
            return d->slots[j];
    return -1;
}

/* The state for the set (tops, hashes) of n stacks, added if new; -1 when out of memory. */
static int dfa_state(walk_dfa *d, const int32_t *tops, const uint64_t *h, int n)
{
    uint64_t key = set_key(h, n);
    if (2 * (d->n + 1) > d->slot_cap) {
        int cap = qs_grown_cap(d->slot_cap, 2 * (d->n + 1), 256);
        int32_t *sl = malloc(sizeof *sl * (size_t)cap);
        if (!sl)
            return -1;
        for (int i = 0; i < cap; i++)
            sl[i] = -1;
        for (int s = 0; s < d->n; s++) {
            int j = (int)(d->key[s] & (uint64_t)(cap - 1));
            while (sl[j] >= 0)
                j = (j + 1) & (cap - 1);
            sl[j] = s;
        }
        free(d->slots);
        d->slots = sl;
        d->slot_cap = cap;
    }
    int j = (int)(key & (uint64_t)(d->slot_cap - 1));
    while (d->slots[j] >= 0) {
        if (d->key[d->slots[j]] == key)
            return d->slots[j];
        j = (j + 1) & (d->slot_cap - 1);
    }
    if (d->n == d->cap) {
        int cap = qs_grown_cap(d->cap, d->n + 1, 64);
        int *f = realloc(d->first, sizeof *f * (size_t)cap);
        if (f)
            d->first = f;
        int *c = realloc(d->count, sizeof *c * (size_t)cap);
        if (c)
            d->count = c;
        uint64_t *k = realloc(d->key, sizeof *k * (size_t)cap);
        if (k)
            d->key = k;
        int32_t *t = realloc(d->trans, sizeof *t * (size_t)cap * 256);
        if (t)
            d->trans = t;
        if (!f || !c || !k || !t)
            return -1;
        d->cap = cap;
    }
    if (!grow_stack_pair(&d->pool, &d->pool_h, &d->pool_cap, d->pool_n + n, 1024))
        return -1;
    int s = d->n++;
    d->first[s] = d->pool_n;
    d->count[s] = n;
    d->key[s] = key;
    if (n) {
        memcpy(d->pool + d->pool_n, tops, sizeof *tops * (size_t)n);
        memcpy(d->pool_h + d->pool_n, h, sizeof *h * (size_t)n);
    }
    d->pool_n += n;
    for (int b = 0; b < 256; b++)
        d->trans[(size_t)s * 256 + (size_t)b] = -2;
    d->slots[j] = s;
    return s;
}

/* The state after byte from state s: -1 dead, -3 out of memory. */
static int dfa_step(qs_matcher *m, walk_dfa *d, int s, unsigned byte)
{
    int32_t t = d->trans[(size_t)s * 256 + byte];
    if (t != -2)
        return t;
    int n = d->count[s];
    if (!lv_reserve(m, n + 1))
        return -3;
    if (n) {
        memcpy(m->lv, d->pool + d->first[s], sizeof *m->lv * (size_t)n);
        memcpy(m->lv_h, d->pool_h + d->first[s], sizeof *m->lv_h * (size_t)n);
    }
    int out_end;
    advance(m, 0, n, byte, &out_end);
    if (m->oom)
        return -3;
    t = out_end == n ? -1 : dfa_state(d, m->lv + n, m->lv_h + n, out_end - n);
    if (t == -1 && out_end != n)
        return -3;
    d->trans[(size_t)s * 256 + byte] = t;
    return t;
}

/* Copies the current state's stacks from the matcher's arena into the DFA's; the state's index,
 * or -1 when out of memory. */
static int dfa_import_current(qs_matcher *m, walk_dfa *d)
{
    int32_t *tops = malloc(sizeof *tops * (size_t)(m->n_cur ? m->n_cur : 1));
    int32_t *chain = malloc(sizeof *chain * 4096);
    if (!tops || !chain) {
        free(tops);
        free(chain);
        return -1;
    }
    m->ar = &d->arena;
    int s = 0;
    for (int i = 0; i < m->n_cur && s >= 0; i++) {
        int depth = 0;
        for (int32_t k = m->cur[i]; k != EMPTY_STACK; k = m->own.nodes[k].parent) {
            if (depth == 4096) {
                s = -1;
                break;
            }
            chain[depth++] = k;
        }
        int32_t parent = EMPTY_STACK;
        for (int j = depth - 1; j >= 0 && s >= 0; j--)
            parent = new_node(m, m->own.nodes[chain[j]].elem, parent);
        tops[i] = parent;
    }
    m->ar = &m->own;
    if (s >= 0 && !m->oom)
        s = dfa_state(d, tops, m->cur_h, m->n_cur);
    free(tops);
    free(chain);
    return m->oom ? -1 : s;
}

/* The walk (no end ids). With a cache, its DFA persists with the grammar. */
static int walk_trie(qs_matcher *m, qs_mask_cache *c, uint32_t *mask)
{
    const qs_vocab_trie *t = m->trie;
    size_t words = qs_mask_words(t);
    memset(mask, 0, words * 4);
    walk_dfa local = {0};
    walk_dfa *d = c ? &c->dfa : &local;
    if (c) {
        pthread_mutex_lock(&c->walk_mu);
        if (d->n > DFA_MAX_STATES || d->arena.n > DFA_MAX_NODES)
            dfa_free(d);
    }
    int allowed = 0;
    int *state_at = m->lv_start; /* [max_depth + 2]: the state after each depth of the current path */
    int start = dfa_find(d, set_key(m->cur_h, m->n_cur));
    if (start < 0)
        start = dfa_import_current(m, d);
    if (start < 0) {
        m->oom = true;
        goto out;
    }
    state_at[0] = start;
    m->ar = &d->arena;
    const qs_trie_node *nodes = t->nodes;
    for (int i = 0; i < t->n_nodes;) {
        int depth = nodes[i].depth;
        int prev = state_at[depth - 1];
        int32_t s = d->trans[(size_t)prev * 256 + nodes[i].byte];
        if (s == -2)
            s = dfa_step(m, d, prev, nodes[i].byte);
        if (s == -3) {
            m->oom = true;
            break;
        }
        if (s < 0) {
            i = nodes[i].subtree_end;
            continue;
        }
        for (int k = nodes[i].tok_first; k < nodes[i + 1].tok_first; k++) {
            int32_t id = t->ids[k];
            mask[id >> 5] |= 1u << (id & 31);
            allowed++;
        }
        state_at[depth] = s;
        i++;
    }
    m->ar = &m->own;
    if (m->oom) /* a half-built DFA is not kept */
        dfa_free(d);
out:
    if (c)
        pthread_mutex_unlock(&c->walk_mu);
    else
        dfa_free(&local);
    return allowed;
}

int qs_matcher_fill_mask(qs_matcher *m, uint32_t *mask)
{
    const qs_vocab_trie *t = m->trie;
    size_t words = qs_mask_words(t);
    if (m->ended) {
        memset(mask, 0, words * 4);
        return 0;
    }
    qs_mask_cache *c = cache_get(m->g, t);
    uint64_t key = state_key(m);
    int allowed;
    if (!c || !cache_lookup(c, key, mask, &allowed)) {
        allowed = walk_trie(m, c, mask);
        if (c && !m->oom)
            cache_store(c, key, mask, allowed);
    }
    if (qs_matcher_is_complete(m))
        for (int i = 0; i < t->n_end; i++) {
            int32_t id = t->end_ids[i];
            if (id >= 0 && id < t->vocab_size && !(mask[id >> 5] >> (id & 31) & 1)) {
                mask[id >> 5] |= 1u << (id & 31);
                allowed++;
            }
        }
    return allowed;
}

int qs_matcher_prepare_mask(qs_matcher *m)
{
    if (!m->mask_ready) {
        m->mask_allowed = qs_matcher_fill_mask(m, m->mask_tmp);
        m->mask_ready = true;
    }
    return m->mask_allowed;
}

int qs_matcher_mask_logits(qs_matcher *m, float *logits, int n_logits)
{
    int allowed = qs_matcher_prepare_mask(m);
    int n = n_logits < m->trie->vocab_size ? n_logits : m->trie->vocab_size;
    for (int i = 0; i < n; i++)
        if (!(m->mask_tmp[i >> 5] >> (i & 31) & 1))
            logits[i] = -__builtin_inff();
    for (int i = n; i < n_logits; i++)
        logits[i] = -__builtin_inff();
    return allowed;
}

bool qs_grammar_matches(qs_grammar *g, const void *bytes, size_t len)
{
    qs_matcher *m = qs_matcher_new(g, NULL);
    if (!m)
        return false;
    bool ok = qs_matcher_accept_bytes(m, bytes, len) && qs_matcher_is_complete(m);
    qs_matcher_free(m);
    return ok;
}
