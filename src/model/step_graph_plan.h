/* step_graph_plan.h — the bookkeeping of decode-step graphs (step_graph.c), in plain C with no
 * device in sight so that a unit test can check it: which batch sizes get a graph of their own
 * (buckets), which steps qualify, the layout of the fixed index buffer every graph reads, and
 * how a step's sequences — plus the dummy rows that pad it up to its bucket — fill that buffer.
 *
 * A recorded graph replays the same launches with the same arguments, so whatever changes from
 * step to step lives in that one buffer at fixed offsets: token ids, positions, KV slots and the
 * block tables (rows of a fixed stride, the most blocks a sequence can have). The per-sequence
 * index and the rows that want logits are the identity in a decode step, so they are written
 * once. A dummy row reads token 0 at position 0 through entry 0 of its own block-table row and
 * writes no KV (slot -1); its outputs are ignored. */
#ifndef QS_MODEL_STEP_GRAPH_PLAN_H
#define QS_MODEL_STEP_GRAPH_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "model/model.h"
#include "util/error.h"

/* Decode batches larger than this run eagerly: the launches of a step are then a small part of
 * its time, and the fixed buffers stay small. */
#define QS_GRAPH_MAX_SEQS 256

typedef struct qs_graph_plan {
    int max_seqs;   /* the largest batch a graph serves: min(max_num_seqs, QS_GRAPH_MAX_SEQS) */
    int stride;     /* block-table row stride, in entries */
    bool exact;     /* one bucket per batch size, no padding (dummy rows would change real rows) */
    int n_buckets;
} qs_graph_plan;

/* The buckets are 1, 2, 4, 8, 16, 24, 32, ... (every multiple of 8 from 8) below max_seqs, then
 * max_seqs itself; with exact, every size from 1 to max_seqs. max_num_seqs and blocks_per_seq
 * must be positive. */
int qs_graph_plan_init(qs_graph_plan *p, int max_num_seqs, int blocks_per_seq, bool exact, qs_err *err);
/* The bucket of a decode batch of n sequences: its index (0 .. n_buckets - 1) with its size in
 * *size, or -1 when no graph serves n (n < 1 or n > max_seqs). */
int qs_graph_bucket(const qs_graph_plan *p, int n, int *size);

/* Offsets, in int32 entries, of the arrays inside the fixed index buffer. The first three are
 * rewritten every step (one copy of `per_step` entries), the block tables row by row up to the
 * blocks the step reads, seq and out_rows never. */
typedef struct qs_graph_layout {
    int64_t ids, pos, slots; /* [max_seqs] each */
    int64_t per_step;        /* entries from 0 that a step rewrites in one copy: ids, pos, slots */
    int64_t tables;          /* [max_seqs][stride] */
    int64_t seq, out_rows;   /* [max_seqs] each: 0, 1, 2, ... */
    int64_t total;
} qs_graph_layout;
void qs_graph_layout_of(const qs_graph_plan *p, qs_graph_layout *l);

/* Whether a step is one the graphs serve: every sequence brings exactly one token and wants its
 * logits (what the scheduler produces between prefills). Prefill chunks and mixed steps do not. */
bool qs_graph_step_is_decode(const qs_seq_step *seqs, int n);

/* The parts written once: seq and out_rows as the identity, zero block tables (block 0 is a valid
 * block of any cache, which is all a dummy row needs). host holds layout.total entries. */
void qs_graph_fill_constant(const qs_graph_plan *p, int32_t *host);

/* Fills ids, pos, slots and the block-table rows of a decode step of n sequences padded to a
 * bucket of `size` rows (n <= size <= max_seqs): row i < n gets sequence i's token, position,
 * KV slot and the block-table entries up to that position; rows n .. size - 1 get token 0,
 * position 0 and slot -1 and keep their block-table rows as they are (entries only ever hold
 * blocks of the step's cache, or 0). Returns the most block-table entries a row reads (the width
 * the table copy needs), or -1 when a sequence reads more than `stride` of them or the step is
 * not a decode step of n <= size sequences (the caller then runs the step eagerly). */
int qs_graph_fill_step(const qs_graph_plan *p, const qs_seq_step *seqs, int n, int size, int32_t *host);

#endif
