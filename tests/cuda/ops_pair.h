/* ops_pair.h — what the ops tests (test_ops_cuda, test_split_cuda) share: the two ops tables
 * under comparison and buffer pairs holding the same values on both (GPU outputs poisoned with
 * NaN first). Header-only: each test is one program and sets cpu / gpu in main. */
#ifndef QS_CUDA_OPS_PAIR_H
#define QS_CUDA_OPS_PAIR_H

#include <math.h>
#include <stdlib.h>

#include "ops/ops.h"

static const qs_ops *cpu, *gpu;

typedef struct {
    void *c, *g;
    int64_t n;
} pair;

/* The same host values on both devices. */
static pair pair_from(const float *host, int64_t n)
{
    qs_err err;
    pair p = {cpu->alloc(sizeof(float) * n, &err), gpu->alloc(gpu->act_size * n, &err), n};
    cpu->acts_from_host_f32(p.c, host, n, &err);
    gpu->acts_from_host_f32(p.g, host, n, &err);
    return p;
}

/* Output buffers; the GPU side holds NaN until a kernel writes it. */
static pair pair_out(int64_t n)
{
    qs_err err;
    pair p = {cpu->alloc(sizeof(float) * n, &err), gpu->alloc(gpu->act_size * n, &err), n};
    float *nan = malloc(sizeof(float) * n);
    for (int64_t i = 0; i < n; i++)
        nan[i] = NAN;
    gpu->acts_from_host_f32(p.g, nan, n, &err);
    free(nan);
    return p;
}

static void pair_free(pair *p)
{
    cpu->free(p->c);
    gpu->free(p->g);
}

#endif
