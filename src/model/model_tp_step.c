/* model_tp_step.c — what a tensor-parallel step adds to the forward pass (see model_tp.h): rank 0
 * broadcasts each step (sequence slices, tokens, block tables) before running it, the other ranks
 * receive it in qs_model_tp_worker (model_tp_worker.c) and run the same step on their shards; partial sums are
 * all-reduced after the embedding and every o_proj and down_proj, and the lm_head's vocabulary
 * slices are gathered into whole logits rows on rank 0, where the sampler runs. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model/model_internal.h"
#include "model/model_tp.h"
#include "model/tp_step_wire.h"
#include "util/log.h"

static qs_comm_dtype act_dtype(const qs_model *m) { return m->ops->act_size == 2 ? QS_COMM_BF16 : QS_COMM_F32; }

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int qs_tp_all_reduce(qs_model *m, void *buf, int64_t count, qs_err *err)
{
    if (m->tp.size <= 1)
        return 0;
    double t0 = now_s();
    int rc = m->dev_comm->all_reduce_sum(m->dev_comm, buf, count, act_dtype(m), err);
    m->tp_stats.all_reduce_s += now_s() - t0;
    m->tp_stats.all_reduces++;
    return rc;
}

void qs_tp_log_stats(const qs_model *m)
{
    const qs_tp_stats *st = &m->tp_stats;
    if (m->tp.size <= 1 || st->steps == 0)
        return;
    qs_info("tensor parallel: %ld steps; all-reduce %.1f us a step (%ld calls, %.3f s), logits all-gather %.1f us a "
            "step, step broadcast %.1f us a step",
            st->steps, 1e6 * st->all_reduce_s / (double)st->steps, st->all_reduces, st->all_reduce_s,
            1e6 * st->gather_s / (double)st->steps, 1e6 * st->broadcast_s / (double)st->steps);
}

int qs_tp_send_step(qs_model *m, const qs_seq_step *seqs, int n_seqs, qs_err *err)
{
    int64_t tokens = 0, blocks = 0;
    for (int i = 0; i < n_seqs; i++) {
        tokens += seqs[i].n_tokens;
        blocks += seqs[i].n_blocks;
    }
    int32_t hdr[HDR_LEN] = {STEP_RUN, n_seqs, (int32_t)tokens, (int32_t)blocks};
    int64_t len = (int64_t)n_seqs * SEQ_LEN + tokens + blocks;
    int32_t *p = malloc(sizeof(int32_t) * (size_t)(len + 1));
    if (!p)
        return qs_errf(err, "out of memory broadcasting a step");
    int32_t *tok = p + (int64_t)n_seqs * SEQ_LEN, *blk = tok + tokens;
    for (int i = 0; i < n_seqs; i++) {
        const qs_seq_step *s = &seqs[i];
        int32_t *f = p + (int64_t)i * SEQ_LEN;
        f[SEQ_TOKENS] = s->n_tokens;
        f[SEQ_START] = s->start_pos;
        f[SEQ_BLOCKS] = s->n_blocks;
        f[SEQ_LOGITS] = s->want_logits;
        memcpy(tok, s->tokens, sizeof(int32_t) * (size_t)s->n_tokens);
        memcpy(blk, s->block_table, sizeof(int32_t) * (size_t)s->n_blocks);
        tok += s->n_tokens;
        blk += s->n_blocks;
    }
    qs_comm *c = m->comm;
    double t0 = now_s();
    int rc = c->broadcast(c, hdr, HDR_LEN, QS_COMM_I32, 0, QS_COMM_WAIT_STEP, err) ||
                     c->broadcast(c, p, len, QS_COMM_I32, 0, QS_COMM_WAIT_STEP, err)
                 ? -1
                 : 0;
    m->tp_stats.broadcast_s += now_s() - t0;
    m->tp_stats.steps++;
    free(p);
    return rc;
}

void qs_tp_send_stop(qs_model *m)
{
    if (m->tp.size <= 1 || m->tp.rank != 0 || !m->comm || !m->tp_loaded)
        return;
    int32_t hdr[HDR_LEN] = {STEP_STOP, 0, 0, 0};
    qs_err err;
    qs_tp_log_stats(m);
    if (m->comm->broadcast(m->comm, hdr, HDR_LEN, QS_COMM_I32, 0, QS_COMM_WAIT_STEP, &err))
        qs_warn("tensor parallel: telling the other ranks to stop: %s", err.msg);
}

/* The device buffer the ranks' slices are gathered into, grown to `bytes`. */
static void *gather_buffer(qs_model *m, size_t bytes, qs_err *err)
{
    if (bytes <= m->tp_gather_bytes)
        return m->tp_gather;
    if (m->tp_gather)
        m->ops->free(m->tp_gather);
    m->tp_gather_bytes = 0;
    if (!(m->tp_gather = m->ops->alloc(bytes, err)))
        return NULL;
    m->tp_gather_bytes = bytes;
    return m->tp_gather;
}

int qs_tp_gather_logits(qs_model *m, int n_out, float *logits, qs_err *err)
{
    qs_comm *c = m->dev_comm;
    if (n_out == 0) /* no logits this step: still wait for its all-reduces, against the deadline */
        return c->sync ? c->sync(c, err) : 0;
    /* Every rank sends vocab_part values a row (rows of its lm_head's real vocab rows, then what
     * follows them in the buffer: the padding, never read back), gathered on the device. */
    int64_t P = m->tp.vocab_part, V = m->mc.vocab_size, N = m->tp.size;
    size_t part = (size_t)n_out * (size_t)P;
    double t0 = now_s();
    void *all_dev = gather_buffer(m, part * (size_t)N * m->ops->act_size, err);
    float *all = logits ? malloc(sizeof(float) * part * (size_t)N) : NULL;
    int rc = !all_dev || (logits && !all) ? -1 : 0;
    if (rc == 0 && (c->all_gather(c, m->s.logits, all_dev, (int64_t)part, act_dtype(m), err) ||
                    (logits && m->ops->acts_to_host_f32(all, all_dev, (int64_t)(part * (size_t)N), err))))
        rc = -1;
    m->tp_stats.gather_s += now_s() - t0;
    /* rank r's slice: [n_out][rows_r] from vocabulary row r * P; the pad ids beyond V are dropped
     * here, so the sampler never sees them */
    for (int64_t r = 0; rc == 0 && logits && r < N; r++) {
        int64_t first = r * P, rows = first + P <= V ? P : V - first;
        for (int row = 0; row < n_out; row++)
            memcpy(logits + (size_t)row * (size_t)V + (size_t)first, all + (size_t)r * part + (size_t)row * (size_t)rows,
                   sizeof(float) * (size_t)rows);
    }
    if (rc && logits && !all)
        qs_errf(err, "out of memory gathering logits");
    free(all);
    return rc;
}
