/* model_step.c — the step driver: qs_model_forward and qs_model_forward_sample check a step
 * against the model and the cache, then run it one of three ways: over the tensor-parallel ranks
 * (tp_step), as a replay of a recorded decode graph (step_graph.c), or eagerly — the index arrays
 * uploaded and forward.c's qs_forward_run called directly. Everything of one step runs on the
 * model's own stream when it has one (graphs on). forward.c holds the layer math and knows nothing
 * of graphs; step_graph.c records and replays qs_forward_run; this file chooses between them. */
#include <string.h>

#include "model/kv_cache.h"
#include "model/model_internal.h"
#include "model/step_graph.h"

static int check_step(const qs_model *m, qs_kv_cache *kv, const qs_seq_step *seqs, int n_seqs, int64_t *n_tokens,
                      int *max_blocks, int *n_out, qs_err *err)
{
    if (n_seqs <= 0 || !seqs)
        return qs_errf(err, "forward: a step needs at least one sequence");
    int nb = qs_kv_cache_num_blocks(kv);
    *n_tokens = 0;
    *max_blocks = 0;
    *n_out = 0;
    for (int i = 0; i < n_seqs; i++) {
        const qs_seq_step *s = &seqs[i];
        if (s->n_tokens <= 0 || !s->tokens)
            return qs_errf(err, "forward: sequence %d has no tokens", i);
        if (s->start_pos < 0)
            return qs_errf(err, "forward: sequence %d starts at negative position %d", i, s->start_pos);
        int64_t end = (int64_t)s->start_pos + s->n_tokens;
        if (m->mc.max_position_embeddings > 0 && end > m->mc.max_position_embeddings)
            return qs_errf(err, "forward: sequence %d reaches position %lld, beyond max_position_embeddings %d", i,
                           (long long)end, m->mc.max_position_embeddings);
        if (!s->block_table || (int64_t)s->n_blocks * QS_KV_BLOCK_SIZE < end)
            return qs_errf(err, "forward: sequence %d has %d KV blocks for %lld positions", i, s->n_blocks,
                           (long long)end);
        for (int b = 0; b < s->n_blocks; b++)
            if (s->block_table[b] < 0 || s->block_table[b] >= nb)
                return qs_errf(err, "forward: sequence %d block %d is %d, outside the cache's %d blocks", i, b,
                               s->block_table[b], nb);
        for (int t = 0; t < s->n_tokens; t++)
            if (s->tokens[t] < 0 || s->tokens[t] >= m->mc.vocab_size)
                return qs_errf(err, "forward: sequence %d token %d is id %d, outside the vocabulary of %d", i, t,
                               s->tokens[t], m->mc.vocab_size);
        *n_tokens += s->n_tokens;
        if (s->n_blocks > *max_blocks)
            *max_blocks = s->n_blocks;
        *n_out += s->want_logits;
    }
    return 0;
}

/* Fills and uploads the step's index arrays. */
static int upload_indices(qs_model *m, const qs_seq_step *seqs, int n_seqs, int64_t n_tokens, int max_blocks,
                          int n_out, qs_attn_batch *b, qs_err *err)
{
    qs_scratch *s = &m->s;
    int64_t t = 0;
    int o = 0;
    memset(s->h_tables, 0, sizeof(int32_t) * (size_t)n_seqs * (size_t)max_blocks);
    for (int i = 0; i < n_seqs; i++) {
        const qs_seq_step *q = &seqs[i];
        memcpy(s->h_tables + (int64_t)i * max_blocks, q->block_table, sizeof(int32_t) * (size_t)q->n_blocks);
        for (int j = 0; j < q->n_tokens; j++, t++) {
            int pos = q->start_pos + j;
            s->h_ids[t] = m->tp.size > 1 ? qs_tp_local_token(m, q->tokens[j]) : q->tokens[j];
            s->h_pos[t] = pos;
            s->h_seq[t] = i;
            s->h_slots[t] = q->block_table[pos / QS_KV_BLOCK_SIZE] * QS_KV_BLOCK_SIZE + pos % QS_KV_BLOCK_SIZE;
        }
        if (q->want_logits)
            s->h_out_rows[o++] = (int32_t)(t - 1);
    }
    const qs_ops *ops = m->ops;
    size_t tb = sizeof(int32_t) * (size_t)n_tokens;
    if (ops->copy_to_device(s->d_ids, s->h_ids, tb, err) || ops->copy_to_device(s->d_pos, s->h_pos, tb, err) ||
        ops->copy_to_device(s->d_seq, s->h_seq, tb, err) || ops->copy_to_device(s->d_slots, s->h_slots, tb, err) ||
        ops->copy_to_device(s->d_tables, s->h_tables, sizeof(int32_t) * (size_t)n_seqs * max_blocks, err) ||
        (n_out && ops->copy_to_device(s->d_out_rows, s->h_out_rows, sizeof(int32_t) * (size_t)n_out, err)))
        return -1;
    *b = (qs_attn_batch){.n_tokens = n_tokens, .n_seqs = n_seqs, .max_blocks = max_blocks, .tok_seq = s->d_seq,
                         .tok_pos = s->d_pos, .block_tables = s->d_tables, .slot_mapping = s->d_slots,
                         .sliding_window = m->mc.sliding_window};
    return 0;
}

/* A tensor-parallel step: rank 0 sends it to the other ranks first; every rank runs its shards
 * (no graphs, no device sampling) and the logits rows are gathered on rank 0. */
static int tp_step(qs_model *m, qs_kv_cache *kv, const qs_seq_step *seqs, int n_seqs, int64_t T, int max_blocks,
                   int n_out, float *logits, qs_err *err)
{
    qs_attn_batch b;
    if ((m->tp.rank == 0 && qs_tp_send_step(m, seqs, n_seqs, err)) ||
        qs_scratch_reserve(m, T, n_seqs, max_blocks, n_out, err) ||
        upload_indices(m, seqs, n_seqs, T, max_blocks, n_out, &b, err) ||
        qs_forward_run(m, kv, &b, m->s.d_ids, m->s.d_out_rows, n_out, err))
        return -1;
    return qs_tp_gather_logits(m, n_out, m->tp.rank == 0 ? logits : NULL, err); /* (n_out 0: waits for the step) */
}

/* sample: NULL for logits only (qs_model_forward), else the host parameters of the n_out rows. */
static int forward_step(qs_model *m, qs_kv_cache *kv, const qs_seq_step *seqs, int n_seqs, const qs_sample_row *sample,
                        int32_t *tokens, float *logits, qs_err *err)
{
    int64_t T = 0;
    int max_blocks = 0, n_out = 0;
    if (check_step(m, kv, seqs, n_seqs, &T, &max_blocks, &n_out, err) != 0)
        return -1;
    if (m->tp.size > 1)
        return tp_step(m, kv, seqs, n_seqs, T, max_blocks, n_out, logits, err);
    int graphed = qs_step_graphs_forward(m, kv, seqs, n_seqs, sample, tokens, logits, err);
    if (graphed != 0)
        return graphed < 0 ? -1 : 0;
    if (qs_scratch_reserve(m, T, n_seqs, max_blocks, n_out, err) != 0)
        return -1;
    qs_attn_batch b;
    if (upload_indices(m, seqs, n_seqs, T, max_blocks, n_out, &b, err) != 0 ||
        (sample && n_out &&
         m->ops->copy_to_device(m->s.d_sample, sample, sizeof(qs_sample_row) * (size_t)n_out, err) != 0) ||
        qs_forward_run_sample(m, kv, &b, m->s.d_ids, m->s.d_out_rows, n_out, sample ? m->s.d_sample : NULL, err) != 0)
        return -1;
    return qs_forward_outputs(m, sample, n_out, logits, tokens, err);
}

static int forward_on_stream(qs_model *m, qs_kv_cache *kv, const qs_seq_step *seqs, int n_seqs,
                             const qs_sample_row *sample, int32_t *tokens, float *logits, qs_err *err)
{
    if (!m->stream)
        return forward_step(m, kv, seqs, n_seqs, sample, tokens, logits, err);
    /* Graphs on: every op of this thread goes to the model's stream for the step. */
    void *prev = m->ops->graph->set_stream(m->stream);
    int rc = forward_step(m, kv, seqs, n_seqs, sample, tokens, logits, err);
    m->ops->graph->set_stream(prev);
    return rc;
}

int qs_model_forward(qs_model *m, qs_kv_cache *kv, const qs_seq_step *seqs, int n_seqs, float *logits, qs_err *err)
{
    return forward_on_stream(m, kv, seqs, n_seqs, NULL, NULL, logits, err);
}

bool qs_model_samples_on_device(const qs_model *m) { return m->sample_on_device; }

int qs_model_forward_sample(qs_model *m, qs_kv_cache *kv, const qs_seq_step *seqs, int n_seqs,
                            const qs_sample_row *sample, int32_t *tokens, float *logits, qs_err *err)
{
    if (!m->sample_on_device) { /* every row to the host */
        int n_out = 0;
        for (int i = 0; seqs && i < n_seqs; i++)
            n_out += seqs[i].want_logits;
        for (int r = 0; r < n_out; r++)
            tokens[r] = -1;
        return forward_on_stream(m, kv, seqs, n_seqs, NULL, NULL, logits, err);
    }
    return forward_on_stream(m, kv, seqs, n_seqs, sample, tokens, logits, err);
}
