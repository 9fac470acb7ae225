/* scheduler.h — which sequences run in the next forward step and with how many tokens.
 * vLLM-style continuous batching: running sequences first (one decode token each, or the next
 * chunk of an unfinished prompt), then waiting ones first come first served while the token
 * budget (max_num_batched_tokens), max_num_seqs and free KV blocks allow; a long prompt is
 * prefilled in chunks so decodes keep flowing. When blocks run out the newest running sequence
 * is preempted by recompute: its blocks are freed and it goes back to the front of the queue.
 * Blocks come from the prefix cache (prefix_cache.h): a sequence admitted with nothing computed
 * takes the longest run of cached full blocks of its tokens (at most all but its last token, which
 * must run to give logits) and starts computing after them; every full block scheduled for
 * computation is registered in the cache when it is scheduled, so a sequence admitted later in
 * the same step (the n choices of one prompt) shares it: within a forward pass every layer writes
 * the KV of all tokens before any attention reads it. */
#ifndef QS_ENGINE_SCHEDULER_H
#define QS_ENGINE_SCHEDULER_H

#include "engine/backend.h"
#include "engine/prefix_cache.h"
#include "engine/seq.h"

typedef struct qs_scheduler {
    int max_num_seqs;
    int max_num_batched_tokens;
    qs_prefix_cache *pc;        /* the block pool, with or without caching */
    int32_t *hit_buf;           /* [num_blocks] lookup scratch */
    qs_seq **waiting;           /* FCFS; preempted sequences are put back at the front */
    int n_waiting, cap_waiting;
    qs_seq **running;           /* in admission order */
    int n_running, cap_running;
    long long preemptions;
    /* prefix caching, counted at each sequence's first admission as vLLM does: prompt tokens
     * looked up, and those found cached */
    unsigned long long prefix_queries, prefix_hits;
} qs_scheduler;

typedef struct qs_sched_item {
    qs_seq *seq;
    int n_new;                  /* tokens computed this step, from seq->n_computed */
    bool want_logits;           /* this step completes the sequence's known tokens */
} qs_sched_item;

typedef struct qs_sched_batch {
    qs_sched_item *items;
    int n_items, cap_items;
    int n_tokens;
} qs_sched_batch;

/* Returns -1 when out of memory. hash_seed keys the prefix cache's block hashes. */
int qs_scheduler_init(qs_scheduler *s, int max_num_seqs, int max_num_batched_tokens, const qs_engine_backend *b,
                      bool prefix_caching, uint64_t hash_seed);
/* Blocks free for allocation (cached blocks nobody holds count as free). */
int qs_scheduler_free_blocks(const qs_scheduler *s);
void qs_scheduler_destroy(qs_scheduler *s);   /* frees the queue arrays, not the sequences */
int qs_scheduler_add(qs_scheduler *s, qs_seq *seq);     /* to the back of waiting */
/* Picks the next step. Returns 0 (batch may be empty), -1 on allocation failure. */
int qs_scheduler_schedule(qs_scheduler *s, qs_sched_batch *batch);
/* Removes seq from whichever queue holds it and returns its blocks to the pool. */
void qs_scheduler_remove(qs_scheduler *s, qs_seq *seq);
/* After the step's forward pass: keeps (ok) or drops (failed: their KV was never written) the
 * blocks the step registered in the prefix cache. Call a failure before freeing the sequences. */
void qs_scheduler_step_done(qs_scheduler *s, bool ok);
void qs_sched_batch_free(qs_sched_batch *b);

#endif
