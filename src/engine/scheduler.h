/* scheduler.h — which sequences run in the next forward step and with how many tokens.
 * vLLM-style continuous batching: running sequences first (one decode token each, or the next
 * chunk of an unfinished prompt), then waiting ones first come first served while the token
 * budget (max_num_batched_tokens), max_num_seqs and free KV blocks allow; a long prompt is
 * prefilled in chunks so decodes keep flowing. When blocks run out the newest running sequence
 * is preempted by recompute: its blocks are freed and it goes back to the front of the queue. */
#ifndef QS_ENGINE_SCHEDULER_H
#define QS_ENGINE_SCHEDULER_H

#include "engine/engine.h"
#include "engine/request.h"

typedef struct qs_scheduler {
    int max_num_seqs;
    int max_num_batched_tokens;
    const qs_engine_backend *backend;
    int free_blocks;            /* tracked here: backend blocks not held by any sequence */
    qs_seq **waiting;           /* FCFS; preempted sequences are put back at the front */
    int n_waiting, cap_waiting;
    qs_seq **running;           /* in admission order */
    int n_running, cap_running;
    long long preemptions;
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

int qs_scheduler_init(qs_scheduler *s, int max_num_seqs, int max_num_batched_tokens, const qs_engine_backend *b);
void qs_scheduler_destroy(qs_scheduler *s);   /* frees the queue arrays, not the sequences */
int qs_scheduler_add(qs_scheduler *s, qs_seq *seq);     /* to the back of waiting */
/* Picks the next step. Returns 0 (batch may be empty), -1 on allocation failure. */
int qs_scheduler_schedule(qs_scheduler *s, qs_sched_batch *batch);
/* Removes seq from whichever queue holds it and returns its blocks to the pool. */
void qs_scheduler_remove(qs_scheduler *s, qs_seq *seq);
void qs_sched_batch_free(qs_sched_batch *b);

#endif
