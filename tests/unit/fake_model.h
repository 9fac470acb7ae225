/* fake_model.h — the deterministic fake model the engine tests drive (header-only: each suite is
 * one binary). It stores every token it is given in the KV blocks the block table names and
 * predicts the next token from a hash of the whole context read back through the block table, so
 * a wrong block table, a lost chunk, a bad recompute after preemption or a prefix-cache hit on the
 * wrong block changes the output. A block it hands out is wiped first (stale data must not leak
 * into a new owner), so only blocks the prefix cache kept can carry content over. */
#ifndef QS_TEST_FAKE_MODEL_H
#define QS_TEST_FAKE_MODEL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine/engine.h"
#include "model/kv_cache.h"

#define VOCAB 64
#define EOS 0
#define MAX_STEPS_LOG 4096

typedef struct {
    int num_blocks;
    int32_t *slots;     /* [num_blocks][QS_KV_BLOCK_SIZE] tokens, -1 = empty */
    bool *used;
    int n_used;
    int max_used;
    /* step log: tokens per step and how many sequences decoded a single token */
    int step_tokens[MAX_STEPS_LOG];
    int step_seqs[MAX_STEPS_LOG];
    int n_steps;
    bool fail_next;
} fake_model;

/* The next token after ctx[0..n): a hash of the whole context, never EOS unless it lands on it. */
static inline int32_t next_token(const int32_t *ctx, int n)
{
    uint32_t h = 2166136261u;
    for (int i = 0; i < n; i++)
        h = (h ^ (uint32_t)(ctx[i] + 7 * i)) * 16777619u;
    return (int32_t)(h % VOCAB);
}

static inline int fake_forward(void *c, const qs_seq_step *steps, int n, float *logits, qs_err *err)
{
    fake_model *m = c;
    if (m->fail_next) {
        m->fail_next = false;
        return qs_errf(err, "fake forward failure");
    }
    int total = 0, row = 0;
    for (int s = 0; s < n; s++) {
        const qs_seq_step *st = &steps[s];
        total += st->n_tokens;
        int end = st->start_pos + st->n_tokens;
        assert_true(st->n_blocks * QS_KV_BLOCK_SIZE >= end);
        for (int i = 0; i < st->n_tokens; i++) {
            int pos = st->start_pos + i;
            int32_t b = st->block_table[pos / QS_KV_BLOCK_SIZE];
            assert_true(b >= 0 && b < m->num_blocks && m->used[b]);
            m->slots[b * QS_KV_BLOCK_SIZE + pos % QS_KV_BLOCK_SIZE] = st->tokens[i];
        }
        if (!st->want_logits)
            continue;
        int32_t *ctx = malloc((size_t)end * sizeof *ctx);
        for (int pos = 0; pos < end; pos++) {
            int32_t b = st->block_table[pos / QS_KV_BLOCK_SIZE];
            ctx[pos] = m->slots[b * QS_KV_BLOCK_SIZE + pos % QS_KV_BLOCK_SIZE];
            assert_true(ctx[pos] >= 0); /* the cache must hold every earlier position */
        }
        float *out = logits + (size_t)row++ * VOCAB;
        for (int v = 0; v < VOCAB; v++)
            out[v] = 0.0f;
        out[next_token(ctx, end)] = 10.0f;
        free(ctx);
    }
    if (m->n_steps < MAX_STEPS_LOG) {
        m->step_tokens[m->n_steps] = total;
        m->step_seqs[m->n_steps] = n;
        m->n_steps++;
    }
    return 0;
}

static inline int32_t fake_alloc(void *c)
{
    fake_model *m = c;
    for (int b = 0; b < m->num_blocks; b++)
        if (!m->used[b]) {
            m->used[b] = true;
            for (int i = 0; i < QS_KV_BLOCK_SIZE; i++)
                m->slots[b * QS_KV_BLOCK_SIZE + i] = -1; /* stale data must not leak into a new owner */
            if (++m->n_used > m->max_used)
                m->max_used = m->n_used;
            return b;
        }
    return -1;
}

static inline void fake_release(void *c, int32_t b)
{
    fake_model *m = c;
    assert_true(m->used[b]);
    m->used[b] = false;
    m->n_used--;
}

static fake_model *fake_new(int num_blocks, qs_engine_backend *be)
{
    fake_model *m = calloc(1, sizeof *m);
    m->num_blocks = num_blocks;
    m->slots = calloc((size_t)num_blocks * QS_KV_BLOCK_SIZE, sizeof *m->slots);
    m->used = calloc((size_t)num_blocks, sizeof *m->used);
    *be = (qs_engine_backend){.ctx = m,
                              .vocab_size = VOCAB,
                              .num_blocks = num_blocks,
                              .forward = fake_forward,
                              .alloc_block = fake_alloc,
                              .release_block = fake_release,
                              .destroy = NULL};
    return m;
}

static inline void fake_free(fake_model *m)
{
    free(m->slots);
    free(m->used);
    free(m);
}

static qs_engine *engine_new_pc(fake_model **fm, int num_blocks, int max_seqs, int max_batched, int max_queued,
                                int max_model_len, bool prefix_caching)
{
    qs_engine_backend be;
    *fm = fake_new(num_blocks, &be);
    static const int32_t eos[] = {EOS};
    qs_engine_options opt = {.max_num_seqs = max_seqs,
                             .max_num_batched_tokens = max_batched,
                             .max_num_queued_reqs = max_queued,
                             .max_model_len = max_model_len,
                             .seed = 1,
                             .eos_ids = eos,
                             .n_eos = 1,
                             .tokenizer = NULL,
                             .start_thread = false,
                             .enable_prefix_caching = prefix_caching};
    qs_engine *e = NULL;
    qs_err err;
    assert_int_equal(qs_engine_create(&opt, &be, &e, &err), 0);
    return e;
}

static inline qs_engine *engine_new(fake_model **fm, int num_blocks, int max_seqs, int max_batched, int max_queued,
                             int max_model_len)
{
    return engine_new_pc(fm, num_blocks, max_seqs, max_batched, max_queued, max_model_len, false);
}

/* The reference output of a greedy run: the hash chain, ending at EOS or max_tokens. */
static inline int reference(const int32_t *prompt, int n_prompt, int max_tokens, bool ignore_eos, int32_t *out)
{
    int32_t ctx[4096];
    memcpy(ctx, prompt, (size_t)n_prompt * sizeof *ctx);
    int n = n_prompt, produced = 0;
    while (produced < max_tokens) {
        int32_t t = next_token(ctx, n);
        ctx[n++] = t;
        out[produced++] = t;
        if (t == EOS && !ignore_eos)
            break;
    }
    return produced;
}

static inline qs_seq_request greedy_request(const int32_t *prompt, int n_prompt, int max_tokens, int choice)
{
    qs_seq_request r;
    memset(&r, 0, sizeof r);
    r.prompt = prompt;
    r.n_prompt = n_prompt;
    qs_sampling_params_defaults(&r.sampling);
    r.sampling.temperature = 0.0;
    r.max_tokens = max_tokens;
    r.choice = choice;
    return r;
}

typedef struct {
    int32_t tokens[1024];
    int n;
    qs_finish_reason finish;
    int prompt_tokens, completion_tokens, cached_tokens;
} collected;

/* Moves every event of sink into per-choice outputs; returns how many sequences finished. */
static inline int collect(qs_event_sink *sink, collected *c)
{
    int finished = 0;
    qs_engine_event *list = qs_event_sink_take(sink, 0);
    for (qs_engine_event *ev = list; ev; ev = ev->next) {
        collected *o = &c[ev->choice];
        if (ev->token >= 0)
            o->tokens[o->n++] = ev->token;
        if (ev->finish != QS_FINISH_NONE) {
            o->finish = ev->finish;
            o->prompt_tokens = ev->prompt_tokens;
            o->completion_tokens = ev->completion_tokens;
            o->cached_tokens = ev->cached_tokens;
            finished++;
        }
    }
    qs_engine_event_free_list(list);
    return finished;
}

static inline void make_prompt(int32_t *p, int n, int salt)
{
    for (int i = 0; i < n; i++)
        p[i] = 1 + (i * 13 + salt * 31) % (VOCAB - 1);
}

static inline void run_until_idle(qs_engine *e, int max_steps)
{
    for (int i = 0; i < max_steps; i++)
        if (qs_engine_step(e) == 0)
            return;
    fail_msg("engine still busy after %d steps", max_steps);
}

#endif
