/* constant_model.h — the simplest fake backend an engine test can run (header-only: each suite is
 * one binary): a vocabulary of 8 whose forward always predicts token 3 (never the EOS id 0), each
 * step taking constant_step_ns (0 unless a test sets it, e.g. to keep a threaded engine busy),
 * over 64 KV blocks. constant_backend() fills a qs_engine_backend with it. */
#ifndef QS_TEST_CONSTANT_MODEL_H
#define QS_TEST_CONSTANT_MODEL_H

#include <stdint.h>
#include <time.h>

#include "engine/engine.h"

#define VOCAB 8
#define CONSTANT_BLOCKS 64

static int32_t constant_used[CONSTANT_BLOCKS];
static long constant_step_ns;

static inline int constant_forward(void *c, const qs_seq_step *steps, int n, float *logits, qs_err *err)
{
    (void)c;
    (void)err;
    if (constant_step_ns > 0)
        nanosleep(&(struct timespec){.tv_nsec = constant_step_ns}, NULL);
    int row = 0;
    for (int s = 0; s < n; s++) {
        if (!steps[s].want_logits)
            continue;
        float *out = logits + (size_t)row++ * VOCAB;
        for (int v = 0; v < VOCAB; v++)
            out[v] = v == 3 ? 5.0f : 0.0f;
    }
    return 0;
}

static inline int32_t constant_alloc(void *c)
{
    (void)c;
    for (int b = 0; b < CONSTANT_BLOCKS; b++)
        if (!constant_used[b]) {
            constant_used[b] = 1;
            return b;
        }
    return -1;
}

static inline void constant_release(void *c, int32_t b)
{
    (void)c;
    constant_used[b] = 0;
}

static inline qs_engine_backend constant_backend(void)
{
    return (qs_engine_backend){.ctx = NULL, .vocab_size = VOCAB, .num_blocks = CONSTANT_BLOCKS,
                               .forward = constant_forward, .alloc_block = constant_alloc,
                               .release_block = constant_release};
}

#endif
