/* bench_tp_comm.c — what one collective of a tensor-parallel step costs on this host:
 * `bench_tp_comm [RANKS] [REPS]` starts RANKS (default 2) MPI ranks of itself under mpirun and
 * times REPS (default 2000) all-reduce sums of F32 rows of the sizes a step all-reduces (one
 * decode token of hidden 64 / 256 / 4096, and 16 and 256 tokens of hidden 4096), after a barrier
 * so every rank starts together. Rank 0 prints one line per size: microseconds a call (median of
 * five blocks) and the bandwidth that implies. The baseline is the same loop over the one-rank
 * communicator in the same run (the identity: the loop's own cost). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "parallel/comm.h"
#include "parallel/launch.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median over five blocks of reps/5 calls, in microseconds a call. */
static double time_all_reduce(qs_comm *c, float *buf, int64_t n, int reps)
{
    double blocks[5];
    qs_err e;
    for (int b = 0; b < 5; b++) {
        if (c->barrier(c, &e))
            return -1;
        double t0 = now_s();
        for (int i = 0; i < reps / 5; i++)
            if (c->all_reduce_sum(c, buf, n, QS_COMM_F32, &e))
                return -1;
        blocks[b] = 1e6 * (now_s() - t0) / (double)(reps / 5);
    }
    qsort(blocks, 5, sizeof *blocks, cmp);
    return blocks[2];
}

int main(int argc, char **argv)
{
    int ranks = argc > 1 ? atoi(argv[1]) : 2, reps = argc > 2 ? atoi(argv[2]) : 2000, world = 0;
    qs_err e;
    if (ranks < 2 || reps < 5) {
        fprintf(stderr, "usage: bench_tp_comm [RANKS >= 2] [REPS >= 5]\n");
        return 2;
    }
    if (!qs_launch_is_mpi_rank(&world)) {
        int st = qs_launch_run_under_mpirun(ranks, argc, argv, &e);
        if (st < 0)
            fprintf(stderr, "bench_tp_comm: %s\n", e.msg);
        return st < 0 ? 1 : st;
    }
    qs_comm *c = qs_comm_mpi(world, &e);
    if (!c) {
        fprintf(stderr, "bench_tp_comm: %s\n", e.msg);
        return 1;
    }
    static const int64_t sizes[][2] = {{1, 64}, {1, 256}, {1, 4096}, {16, 4096}, {256, 4096}};
    float *buf = calloc(256 * 4096, sizeof(float));
    if (!buf)
        return 1;
    if (c->rank == 0)
        printf("all-reduce sum of F32 rows over %d MPI ranks on one host (%d calls a size):\n"
               "%-18s %12s %12s %14s\n",
               c->size, reps, "tokens x hidden", "one rank us", "mpi us", "mpi MB/s");
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        int64_t n = sizes[i][0] * sizes[i][1];
        int r = n > 65536 ? reps / 10 : reps;
        double base = time_all_reduce(qs_comm_single(), buf, n, r);
        double us = time_all_reduce(c, buf, n, r);
        if (c->rank == 0)
            printf("%4lld x %-11lld %12.2f %12.2f %14.1f\n", (long long)sizes[i][0], (long long)sizes[i][1], base, us,
                   us > 0 ? (double)n * 4.0 / us : 0.0);
    }
    free(buf);
    c->destroy(c);
    return 0;
}
