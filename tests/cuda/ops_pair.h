/* ops_pair.h — what the ops tests (test_ops_cuda, test_split_cuda) share: the two ops tables
 * under comparison and buffer pairs holding the same values on both (GPU outputs poisoned with
 * NaN first). Header-only: each test is one program; main calls ops_pair_setup. */
#ifndef QS_CUDA_OPS_PAIR_H
#define QS_CUDA_OPS_PAIR_H

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/backend_cpu.h"
#include "core/ops.h"
#include "device_query.h"
#include "qs_cuda_ops.h"

static const qs_ops *cpu, *gpu;

/* Sets cpu and gpu for main: the CPU ops against the CUDA ops, or with --self-check the CPU ops on
 * both sides (every host path runs without a GPU). Without a GPU prints the skip line and returns
 * false. */
static bool ops_pair_setup(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    cpu = qs_ops_cpu();
    if (argc > 1 && !strcmp(argv[1], "--self-check")) {
        gpu = cpu;
        return true;
    }
    if (qs_cuda_device_count() == 0) {
        printf("skip: no CUDA device (%s)\n0 passed, 0 failed, 1 skipped\n", qs_cuda_unavailable_reason());
        return false;
    }
    gpu = qs_ops_cuda();
    return true;
}

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
