/* scheduler.c — continuous batching with chunked prefill and preemption by recompute (see
 * scheduler.h). Pure bookkeeping over qs_seq and the backend's block pool, so the unit test can
 * drive it with a fake model. */
#include "engine/scheduler.h"

#include <stdlib.h>
#include <string.h>

#include "engine/kv_cache.h"

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

int qs_scheduler_init(qs_scheduler *s, int max_num_seqs, int max_num_batched_tokens, const qs_engine_backend *b)
{
    memset(s, 0, sizeof *s);
    s->max_num_seqs = max_num_seqs > 0 ? max_num_seqs : 1;
    s->max_num_batched_tokens = max_num_batched_tokens > 0 ? max_num_batched_tokens : 1;
    s->backend = b;
    s->free_blocks = b->num_blocks;
    return 0;
}

void qs_scheduler_destroy(qs_scheduler *s)
{
    free(s->waiting);
    free(s->running);
    memset(s, 0, sizeof *s);
}

int qs_scheduler_add(qs_scheduler *s, qs_seq *seq)
{
    if (grow((void **)&s->waiting, &s->cap_waiting, s->n_waiting + 1, sizeof *s->waiting))
        return -1;
    s->waiting[s->n_waiting++] = seq;
    return 0;
}

static void release_blocks(qs_scheduler *s, qs_seq *seq)
{
    for (int i = 0; i < seq->n_blocks; i++)
        s->backend->release_block(s->backend->ctx, seq->blocks[i]);
    s->free_blocks += seq->n_blocks;
    seq->n_blocks = 0;
}

/* Gives seq blocks to cover `positions`; the caller checked free_blocks. */
static int take_blocks(qs_scheduler *s, qs_seq *seq, int positions)
{
    int need = blocks_for(positions);
    if (qs_seq_reserve_blocks(seq, need))
        return -1;
    while (seq->n_blocks < need) {
        int32_t b = s->backend->alloc_block(s->backend->ctx);
        if (b < 0)
            return -1;
        seq->blocks[seq->n_blocks++] = b;
        s->free_blocks--;
    }
    return 0;
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
    b->items[b->n_items++] = (qs_sched_item){seq, n_new, seq->n_computed + n_new == seq->n_tokens};
    b->n_tokens += n_new;
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
        if (n_new <= 0) { /* nothing to compute (cannot happen for a live sequence) */
            i++;
            continue;
        }
        int need = blocks_for(seq->n_computed + n_new) - seq->n_blocks;
        bool self_preempted = false;
        while (need > s->free_blocks) {
            if (s->running[s->n_running - 1] == seq)
                self_preempted = true;
            if (preempt_last(s))
                return -1;
            if (self_preempted)
                break;
        }
        if (self_preempted)
            break;
        if (take_blocks(s, seq, seq->n_computed + n_new) || add_item(batch, seq, n_new))
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
        int n_new = seq->n_tokens - seq->n_computed;
        if (n_new > budget)
            n_new = budget;
        int need = blocks_for(seq->n_computed + n_new) - seq->n_blocks;
        if (need > s->free_blocks)
            break;
        if (grow((void **)&s->running, &s->cap_running, s->n_running + 1, sizeof *s->running))
            return -1;
        if (take_blocks(s, seq, seq->n_computed + n_new))
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
