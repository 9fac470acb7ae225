/* scheduler.c — continuous batching with chunked prefill and preemption by recompute, over the
 * prefix-caching block pool (see scheduler.h): admission looks up a sequence's cached prefix,
 * scheduling registers the full blocks a step will fill. Pure bookkeeping over qs_seq and the
 * backend's block pool, so the unit test can drive it with a fake model. */
#include "engine/scheduler.h"

#include <stdlib.h>
#include <string.h>

#include "model/kv_cache.h"

static int blocks_for(int positions) { return (positions + QS_KV_BLOCK_SIZE - 1) / QS_KV_BLOCK_SIZE; }

static int grow(void **arr, int *cap, int need, size_t elem)
{
    if (need <= *cap)
        return 0;
    int n = *cap ? *cap * 2 : 16;
    while (n < need)
        n *= 2;
    void *p = realloc(*arr, (size_t)n * elem);
    if (!p)
        return -1;
    *arr = p;
    *cap = n;
    return 0;
}

int qs_scheduler_init(qs_scheduler *s, int max_num_seqs, int max_num_batched_tokens, const qs_engine_backend *b,
                      bool prefix_caching, uint64_t hash_seed)
{
    memset(s, 0, sizeof *s);
    s->max_num_seqs = max_num_seqs > 0 ? max_num_seqs : 1;
    s->max_num_batched_tokens = max_num_batched_tokens > 0 ? max_num_batched_tokens : 1;
    s->pc = qs_prefix_cache_new(b, prefix_caching, hash_seed);
    s->hit_buf = malloc((size_t)(b->num_blocks > 0 ? b->num_blocks : 1) * sizeof *s->hit_buf);
    if (!s->pc || !s->hit_buf) {
        qs_scheduler_destroy(s);
        return -1;
    }
    return 0;
}

void qs_scheduler_destroy(qs_scheduler *s)
{
    free(s->waiting);
    free(s->running);
    free(s->hit_buf);
    qs_prefix_cache_free(s->pc);
    memset(s, 0, sizeof *s);
}

int qs_scheduler_free_blocks(const qs_scheduler *s) { return qs_prefix_cache_num_free(s->pc); }

int qs_scheduler_add(qs_scheduler *s, qs_seq *seq)
{
    if (grow((void **)&s->waiting, &s->cap_waiting, s->n_waiting + 1, sizeof *s->waiting))
        return -1;
    seq->hash_root = qs_prefix_cache_root(s->pc, seq->cache_salt);
    s->waiting[s->n_waiting++] = seq;
    return 0;
}

/* Blocks go back last first, so a sequence's tail blocks are evicted before its head, which
 * other prompts are likelier to share. */
static void release_blocks(qs_scheduler *s, qs_seq *seq)
{
    for (int i = seq->n_blocks - 1; i >= 0; i--)
        qs_prefix_cache_unref(s->pc, seq->blocks[i]);
    seq->n_blocks = 0;
    seq->n_cached_blocks = 0;
}

/* Gives seq blocks to cover `positions`; the caller checked the free count. */
static int take_blocks(qs_scheduler *s, qs_seq *seq, int positions)
{
    int need = blocks_for(positions);
    if (qs_seq_reserve_blocks(seq, need))
        return -1;
    while (seq->n_blocks < need) {
        int32_t b = qs_prefix_cache_alloc(s->pc);
        if (b < 0)
            return -1;
        seq->blocks[seq->n_blocks++] = b;
    }
    return 0;
}

/* The chained hashes of seq's first n full blocks of tokens. */
static int ensure_hashes(qs_seq *seq, int n)
{
    if (n > seq->cap_hashes) {
        int cap = seq->cap_hashes ? seq->cap_hashes * 2 : 16;
        while (cap < n)
            cap *= 2;
        uint64_t *p = realloc(seq->block_hashes, (size_t)cap * sizeof *p);
        if (!p)
            return -1;
        seq->block_hashes = p;
        seq->cap_hashes = cap;
    }
    for (int i = seq->n_hashes; i < n; i++)
        seq->block_hashes[i] = qs_prefix_cache_block_hash(i ? seq->block_hashes[i - 1] : seq->hash_root,
                                                          seq->tokens + (size_t)i * QS_KV_BLOCK_SIZE);
    if (n > seq->n_hashes)
        seq->n_hashes = n;
    return 0;
}

/* Registers the full blocks that positions [0, upto) fill once this step has run. */
static int cache_full_blocks(qs_scheduler *s, qs_seq *seq, int upto)
{
    if (!qs_prefix_cache_enabled(s->pc))
        return 0;
    int full = upto / QS_KV_BLOCK_SIZE;
    if (full <= seq->n_cached_blocks)
        return 0;
    if (ensure_hashes(seq, full))
        return -1;
    for (int i = seq->n_cached_blocks; i < full; i++)
        qs_prefix_cache_insert(s->pc, seq->blocks[i], seq->block_hashes[i], i ? seq->block_hashes[i - 1] : seq->hash_root,
                               seq->tokens + (size_t)i * QS_KV_BLOCK_SIZE);
    seq->n_cached_blocks = full;
    return 0;
}

void qs_scheduler_step_done(qs_scheduler *s, bool ok)
{
    if (ok)
        qs_prefix_cache_commit(s->pc);
    else
        qs_prefix_cache_rollback(s->pc);
}

static int remove_at(qs_seq **arr, int *n, qs_seq *seq)
{
    for (int i = 0; i < *n; i++)
        if (arr[i] == seq) {
            memmove(arr + i, arr + i + 1, (size_t)(*n - i - 1) * sizeof *arr);
            (*n)--;
            return 1;
        }
    return 0;
}

void qs_scheduler_remove(qs_scheduler *s, qs_seq *seq)
{
    if (!remove_at(s->running, &s->n_running, seq))
        remove_at(s->waiting, &s->n_waiting, seq);
    release_blocks(s, seq);
}

/* Preempts the newest running sequence: frees its blocks, forgets its cache and puts it at the
 * front of the waiting queue (its outputs so far stay in its tokens and are recomputed). */
static int preempt_last(qs_scheduler *s)
{
    qs_seq *victim = s->running[--s->n_running];
    release_blocks(s, victim);
    victim->n_computed = 0;
    if (grow((void **)&s->waiting, &s->cap_waiting, s->n_waiting + 1, sizeof *s->waiting))
        return -1;
    memmove(s->waiting + 1, s->waiting, (size_t)s->n_waiting * sizeof *s->waiting);
    s->waiting[0] = victim;
    s->n_waiting++;
    s->preemptions++;
    return 0;
}

static int add_item(qs_sched_batch *b, qs_seq *seq, int n_new)
{
    if (grow((void **)&b->items, &b->cap_items, b->n_items + 1, sizeof *b->items))
        return -1;
    bool want = seq->n_computed + n_new == seq->n_tokens || qs_seq_collects_prompt_logprobs(seq);
    b->items[b->n_items++] = (qs_sched_item){seq, n_new, want};
    b->n_tokens += n_new;
    return 0;
}

/* For a sequence being admitted with nothing computed: the cached blocks of its longest cached
 * prefix (in s->hit_buf), at most all but its last token. */
static int lookup_prefix(qs_scheduler *s, qs_seq *seq, int *n_hit)
{
    *n_hit = 0;
    if (!qs_prefix_cache_enabled(s->pc) || seq->n_computed != 0 || seq->n_blocks != 0 || seq->prompt_lp)
        return 0;
    int max_blocks = (seq->n_tokens - 1) / QS_KV_BLOCK_SIZE;
    if (max_blocks <= 0)
        return 0;
    if (ensure_hashes(seq, max_blocks))
        return -1;
    *n_hit = qs_prefix_cache_lookup(s->pc, seq->hash_root, seq->block_hashes, seq->tokens, max_blocks, s->hit_buf);
    return 0;
}

int qs_scheduler_schedule(qs_scheduler *s, qs_sched_batch *batch)
{
    batch->n_items = 0;
    batch->n_tokens = 0;
    int budget = s->max_num_batched_tokens;
    long long preemptions_before = s->preemptions;

    /* 1. Running sequences, oldest first. */
    for (int i = 0; i < s->n_running && budget > 0;) {
        qs_seq *seq = s->running[i];
        int n_new = seq->n_tokens - seq->n_computed;
        if (n_new > budget)
            n_new = budget;
        if (n_new > 1 && qs_seq_collects_prompt_logprobs(seq))
            n_new = 1; /* a row of logits for every prompt position */
        if (n_new <= 0) { /* nothing to compute (cannot happen for a live sequence) */
            i++;
            continue;
        }
        int need = blocks_for(seq->n_computed + n_new) - seq->n_blocks;
        bool self_preempted = false;
        while (need > qs_prefix_cache_num_free(s->pc)) {
            if (s->running[s->n_running - 1] == seq)
                self_preempted = true;
            if (preempt_last(s))
                return -1;
            if (self_preempted)
                break;
        }
        if (self_preempted)
            break;
        if (take_blocks(s, seq, seq->n_computed + n_new) || cache_full_blocks(s, seq, seq->n_computed + n_new) ||
            add_item(batch, seq, n_new))
            return -1;
        budget -= n_new;
        i++;
    }

    /* 2. Waiting sequences, first come first served, while there is room. Nothing is admitted
     * in a step that had to preempt (the queue head is the victim and would thrash). */
    if (s->preemptions != preemptions_before && batch->n_items > 0)
        return 0;
    while (s->n_waiting > 0 && budget > 0 && s->n_running < s->max_num_seqs) {
        qs_seq *seq = s->waiting[0];
        int n_hit;
        if (lookup_prefix(s, seq, &n_hit))
            return -1;
        int computed = seq->n_computed + n_hit * QS_KV_BLOCK_SIZE;
        int n_new = seq->n_tokens - computed;
        if (n_new > budget)
            n_new = budget;
        if (n_new > 1 && qs_seq_collects_prompt_logprobs(seq))
            n_new = 1;
        /* new blocks, plus the hit blocks nobody holds: taking them leaves fewer free */
        int need = blocks_for(computed + n_new) - seq->n_blocks - n_hit;
        for (int k = 0; k < n_hit; k++)
            need += qs_prefix_cache_is_evictable(s->pc, s->hit_buf[k]);
        if (need > qs_prefix_cache_num_free(s->pc))
            break;
        if (grow((void **)&s->running, &s->cap_running, s->n_running + 1, sizeof *s->running) ||
            qs_seq_reserve_blocks(seq, blocks_for(computed + n_new)))
            return -1;
        for (int k = 0; k < n_hit; k++) {
            qs_prefix_cache_ref(s->pc, s->hit_buf[k]);
            seq->blocks[seq->n_blocks++] = s->hit_buf[k];
        }
        if (n_hit) {
            seq->n_computed = computed;
            seq->n_cached_blocks = n_hit;
        }
        if (!seq->admitted_before) {
            seq->admitted_before = true;
            seq->cached_tokens = n_hit * QS_KV_BLOCK_SIZE;
            if (qs_prefix_cache_enabled(s->pc)) {
                s->prefix_queries += (unsigned long long)seq->n_tokens;
                s->prefix_hits += (unsigned long long)seq->cached_tokens;
            }
        }
        if (take_blocks(s, seq, computed + n_new) || cache_full_blocks(s, seq, computed + n_new))
            return -1;
        memmove(s->waiting, s->waiting + 1, (size_t)(s->n_waiting - 1) * sizeof *s->waiting);
        s->n_waiting--;
        s->running[s->n_running++] = seq;
        if (add_item(batch, seq, n_new))
            return -1;
        budget -= n_new;
    }
    return 0;
}

void qs_sched_batch_free(qs_sched_batch *b)
{
    free(b->items);
    memset(b, 0, sizeof *b);
}
