/* test_comm_nccl.c — GPU test of the NCCL communicator (cuda/comm_nccl.cu), run by
 * scripts/gpu-check.sh. Runs on one GPU, and across two when the machine has them:
 *  - the library: QSERVE_NCCL_LIBRARY naming a missing file is an error naming it (in a child
 *    process, before anything loads NCCL here);
 *  - one rank (the one-rank host communicator bootstraps it; no MPI): all-reduce F32 and BF16,
 *    all-gather F32 and I32, broadcast, and sync after queued all-reduces, on fresh random data
 *    with the outputs poisoned (NaN / -1) first, against the values the host computes;
 *  - two ranks, one GPU each (the test starts itself under `mpirun -np 2`): the same collectives
 *    with each rank's own random data (both ranks derive both from one seed rank 0 broadcasts),
 *    checked against the host's sums; skipped, saying "skipped: needs 2 GPUs", on one GPU.
 * NCCL comes from QSERVE_NCCL_LIBRARY or the library path (pip's nvidia-nccl-cu12 puts it under
 * .../nvidia/nccl/lib; scripts/gpu-env.sh finds it). Prints "N passed, N failed, N skipped" last. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "comm_nccl.h"
#include "core/ops.h"
#include "cuda_test_util.h"
#include "device/backends.h"
#include "parallel/comm.h"
#include "parallel/launch.h"
#include "device_query.h"

enum { N = 40000 }; /* elements of the F32 buffers: not a multiple of anything NCCL chunks by */

static int g_passed, g_failed, g_skipped;
static const qs_ops *g_ops;

static void check(bool ok, const char *name, int rank, const char *why)
{
    if (ok)
        g_passed++;
    else
        g_failed++;
    if (rank == 0 || !ok)
        printf("%s %s (rank %d)%s%s\n", ok ? "ok" : "not ok", name, rank, ok || !why ? "" : ": ", ok || !why ? "" : why);
}

static void *upload(const void *host, size_t bytes, qs_err *err)
{
    void *d = g_ops->alloc(bytes, err);
    if (d && g_ops->copy_to_device(d, host, bytes, err)) {
        g_ops->free(d);
        return NULL;
    }
    return d;
}

static float *random_f32(uint64_t *seed, int64_t n)
{
    float *v = malloc(sizeof(float) * (size_t)n);
    for (int64_t i = 0; i < n; i++)
        v[i] = qs_test_frand(seed) * 8.0f;
    return v;
}

/* The whole buffer's first mismatch, or -1. */
static int64_t first_diff_f32(const float *got, const float *want, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (!(got[i] == want[i]))
            return i;
    return -1;
}

/* QSERVE_NCCL_LIBRARY=/nonexistent: qs_comm_nccl fails, naming the variable and the file. In a
 * child, so that this process loads the real library afterwards. */
static void missing_library_named(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        setenv("QSERVE_NCCL_LIBRARY", "/nonexistent/libnccl.so.2", 1);
        qs_err e = {{0}};
        qs_comm *c = qs_comm_nccl(qs_comm_single(), -1, NULL, &e);
        _exit(!c && strstr(e.msg, "QSERVE_NCCL_LIBRARY=/nonexistent/libnccl.so.2") ? 0 : 1);
    }
    int st = 1;
    waitpid(pid, &st, 0);
    check(pid > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "missing_library_named", 0,
          "the error does not name QSERVE_NCCL_LIBRARY's file");
}

/* Every collective of rank `r` of `size` over c, the data of rank k drawn from seed + k. */
static void collectives(qs_comm *c, uint64_t seed)
{
    qs_err e = {{0}};
    int r = c->rank, size = c->size;
    char why[QS_ERR_MSG_MAX + 64];
    /* all-reduce F32: the sum of every rank's random vector (two floats add with one rounding,
     * the same on the host as in NCCL) */
    float *want = calloc(N, sizeof(float)), *mine = NULL, *back = malloc(sizeof(float) * N);
    for (int k = 0; k < size; k++) {
        uint64_t s = seed + (uint64_t)k;
        float *v = random_f32(&s, N);
        for (int i = 0; i < N; i++)
            want[i] += v[i];
        if (k == r)
            mine = v;
        else
            free(v);
    }
    void *d = upload(mine, sizeof(float) * N, &e);
    bool ok = d && c->all_reduce_sum(c, d, N, QS_COMM_F32, &e) == 0 && (!c->sync || c->sync(c, &e) == 0) &&
              g_ops->copy_to_host(back, d, sizeof(float) * N, &e) == 0;
    int64_t at = ok ? first_diff_f32(back, want, N) : -1;
    snprintf(why, sizeof why, "%s%s element %lld", e.msg, e.msg[0] ? ";" : "", (long long)at);
    check(ok && at < 0, "all_reduce_f32", r, why);

    /* all-reduce BF16: rank k gives bf16(v_k); the sum of two is rounded to BF16 once */
    enum { B = 4096 };
    uint16_t *bmine = malloc(sizeof(uint16_t) * B), *bback = malloc(sizeof(uint16_t) * B);
    float *bsum = calloc(B, sizeof(float));
    for (int k = 0; k < size; k++) {
        uint64_t s = seed + 100 + (uint64_t)k;
        float *v = qs_test_rand_bf16(&s, B, 4.0f);
        for (int i = 0; i < B; i++) {
            bsum[i] += v[i];
            if (k == r)
                bmine[i] = qs_f32_to_bf16(v[i]);
        }
        free(v);
    }
    void *db = upload(bmine, sizeof(uint16_t) * B, &e);
    ok = db && c->all_reduce_sum(c, db, B, QS_COMM_BF16, &e) == 0 && (!c->sync || c->sync(c, &e) == 0) &&
         g_ops->copy_to_host(bback, db, sizeof(uint16_t) * B, &e) == 0;
    int bad = 0;
    for (int i = 0; ok && i < B; i++) /* within one BF16 step of the exact sum */
        bad += fabsf(qs_bf16_to_f32(bback[i]) - bsum[i]) > fabsf(bsum[i]) * (1.0f / 128) + 1e-30f;
    snprintf(why, sizeof why, "%s%s %d of %d off", e.msg, e.msg[0] ? ";" : "", bad, B);
    check(ok && bad == 0, "all_reduce_bf16", r, why);

    /* all-gather F32 into a NaN-poisoned buffer: every rank's vector in rank order */
    float *all = malloc(sizeof(float) * N * (size_t)size);
    for (int64_t i = 0; i < (int64_t)N * size; i++)
        all[i] = NAN;
    void *dall = upload(all, sizeof(float) * N * (size_t)size, &e);
    void *dmine = upload(mine, sizeof(float) * N, &e);
    ok = dall && dmine && c->all_gather(c, dmine, dall, N, QS_COMM_F32, &e) == 0 &&
         g_ops->copy_to_host(all, dall, sizeof(float) * N * (size_t)size, &e) == 0;
    at = -1;
    for (int k = 0; ok && k < size && at < 0; k++) {
        uint64_t s = seed + (uint64_t)k;
        float *v = random_f32(&s, N);
        at = first_diff_f32(all + (size_t)k * N, v, N);
        if (at >= 0)
            at += (int64_t)k * N;
        free(v);
    }
    snprintf(why, sizeof why, "%s%s element %lld", e.msg, e.msg[0] ? ";" : "", (long long)at);
    check(ok && at < 0, "all_gather_f32", r, why);

    /* all-gather I32 into -1s */
    enum { G = 333 };
    int32_t gmine[G], gall[G * 8];
    for (int i = 0; i < G; i++)
        gmine[i] = 1000 * r + i;
    for (int i = 0; i < G * size; i++)
        gall[i] = -1;
    void *dgs = upload(gmine, sizeof gmine, &e), *dgr = upload(gall, sizeof(int32_t) * G * (size_t)size, &e);
    ok = dgs && dgr && c->all_gather(c, dgs, dgr, G, QS_COMM_I32, &e) == 0 &&
         g_ops->copy_to_host(gall, dgr, sizeof(int32_t) * G * (size_t)size, &e) == 0;
    for (int i = 0; ok && i < G * size; i++)
        ok = gall[i] == 1000 * (i / G) + i % G;
    check(ok, "all_gather_i32", r, e.msg);

    /* broadcast from the last rank: its values everywhere, over -1s elsewhere */
    int root = size - 1;
    int32_t v[G];
    for (int i = 0; i < G; i++)
        v[i] = r == root ? 7 * i + 3 : -1;
    void *dv = upload(v, sizeof v, &e);
    ok = dv && c->broadcast(c, dv, G, QS_COMM_I32, root, QS_COMM_WAIT_STEP, &e) == 0 &&
         g_ops->copy_to_host(v, dv, sizeof v, &e) == 0;
    for (int i = 0; ok && i < G; i++)
        ok = v[i] == 7 * i + 3;
    check(ok, "broadcast_i32", r, e.msg);

    void *bufs[] = {d, db, dall, dmine, dgs, dgr, dv};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++)
        if (bufs[i])
            g_ops->free(bufs[i]);
    free(want);
    free(mine);
    free(back);
    free(bmine);
    free(bback);
    free(bsum);
    free(all);
}

static int two_ranks(void)
{
    qs_err e = {{0}};
    qs_comm *host = qs_comm_mpi(2, &e);
    qs_comm *c = host ? qs_comm_nccl(host, host->rank, NULL, &e) : NULL;
    if (!c || !(g_ops = qs_ops_for_platform(QS_PLATFORM_CUDA, &e))) {
        printf("not ok two_ranks_start: %s\n", e.msg);
        return 1;
    }
    int32_t seed32[2] = {0, 0};
    if (host->rank == 0) {
        uint64_t t = (uint64_t)time(NULL) ^ (uint64_t)getpid() << 16;
        seed32[0] = (int32_t)(t & 0x7fffffff);
        seed32[1] = 1;
    }
    if (host->broadcast(host, seed32, 2, QS_COMM_I32, 0, QS_COMM_WAIT_STEP, &e)) {
        printf("not ok two_ranks_seed: %s\n", e.msg);
        return 1;
    }
    if (host->rank == 0)
        printf("two ranks on GPUs 0 and 1, seed %d\n", seed32[0]);
    collectives(c, (uint64_t)seed32[0] * 2654435761u + 1);
    if (host->rank == 0)
        printf("%d passed, %d failed, 0 skipped\n", g_passed, g_failed);
    c->destroy(c);
    host->destroy(host);
    return g_failed ? 1 : 0;
}

int main(int argc, char **argv)
{
    int world = 0;
    if (qs_launch_is_mpi_rank(&world))
        return two_ranks();
    qs_err e = {{0}};
    int gpus = qs_cuda_device_count();
    if (gpus < 1) {
        printf("skip test_comm_nccl: no GPU\n0 passed, 0 failed, 1 skipped\n");
        return 0;
    }
    missing_library_named();
    uint64_t seed = (uint64_t)time(NULL) ^ (uint64_t)getpid() << 16;
    printf("one rank on GPU 0, seed %llu\n", (unsigned long long)seed);
    qs_comm *c = qs_comm_nccl(qs_comm_single(), 0, NULL, &e);
    g_ops = c ? qs_ops_for_platform(QS_PLATFORM_CUDA, &e) : NULL;
    check(c && g_ops, "one_rank_start", 0, e.msg);
    if (c && g_ops) {
        collectives(c, seed);
        c->destroy(c);
    }
    if (gpus < 2) {
        printf("two_ranks: skipped: needs 2 GPUs (found %d)\n", gpus);
        g_skipped++;
    } else {
        int st = qs_launch_run_under_mpirun(2, argc, argv, &e);
        if (st < 0)
            printf("mpirun: %s\n", e.msg);
        check(st == 0, "two_ranks", 0, "the two-rank run failed (its lines above)");
    }
    printf("%d passed, %d failed, %d skipped\n", g_passed, g_failed, g_skipped);
    return g_failed ? 1 : 0;
}
