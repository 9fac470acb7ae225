/* test_comm_nccl.c — GPU test for a machine with two or more GPUs (run by scripts/gpu-check.sh;
 * skipped with fewer): the NCCL communicator (cuda/comm_nccl.cu) across two ranks, one GPU each,
 * started under `mpirun -np 2` by the test itself. Device buffers are all-reduced (F32, and
 * BF16 values whose sums are exact), all-gathered (I32, into a buffer of -1s) and broadcast;
 * every rank checks the result it copies back. Needs libnccl.so.2 (a clear failure names it otherwise).
 * Prints "N passed, N failed, N skipped" on rank 0. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm_nccl.h"
#include "core/ops.h"
#include "device/backends.h"
#include "parallel/comm.h"
#include "parallel/launch.h"
#include "device_query.h"

static int g_passed, g_failed;

static void check(bool ok, const char *name, int rank)
{
    if (ok)
        g_passed++;
    else
        g_failed++;
    if (rank == 0 || !ok)
        printf("%s %s (rank %d)\n", ok ? "ok" : "not ok", name, rank);
}

static void *device_copy(const qs_ops *ops, const void *host, size_t bytes, qs_err *err)
{
    void *d = ops->alloc(bytes, err);
    if (d && ops->copy_to_device(d, host, bytes, err))
        return NULL;
    return d;
}

int main(int argc, char **argv)
{
    qs_err e;
    int world = 0;
    if (qs_cuda_device_count() < 2) {
        printf("skip test_comm_nccl: needs 2 GPUs, found %d\n0 passed, 0 failed, 1 skipped\n", qs_cuda_device_count());
        return 0;
    }
    if (!qs_launch_is_mpi_rank(&world)) {
        int st = qs_launch_run_under_mpirun(2, argc, argv, &e);
        if (st < 0)
            fprintf(stderr, "test_comm_nccl: %s\n", e.msg);
        return st < 0 ? 1 : st;
    }
    qs_comm *host = qs_comm_mpi(2, &e);
    qs_comm *c = host ? qs_comm_nccl(host, host->rank, NULL, &e) : NULL;
    const qs_ops *ops = c ? qs_ops_for_platform(QS_PLATFORM_CUDA, &e) : NULL;
    if (!ops) {
        printf("not ok nccl_start: %s\n0 passed, 1 failed, 0 skipped\n", e.msg);
        return 1;
    }
    int r = c->rank;
    enum { N = 4096 };
    float *x = malloc(sizeof(float) * N), *back = malloc(sizeof(float) * N);
    for (int i = 0; i < N; i++)
        x[i] = (float)(i % 97) * (r + 1) * 0.25f;
    void *d = device_copy(ops, x, sizeof(float) * N, &e);
    bool ok = d && c->all_reduce_sum(c, d, N, QS_COMM_F32, &e) == 0 &&
              ops->copy_to_host(back, d, sizeof(float) * N, &e) == 0;
    for (int i = 0; ok && i < N; i++) /* rank 0 gives v, rank 1 gives 2v */
        ok = fabsf(back[i] - 3.0f * (float)(i % 97) * 0.25f) < 1e-4f;
    check(ok, "all_reduce_f32", r);

    uint16_t b[8] = {0x3f80, 0x4000, 0xbf80, 0x0000, 0x3f80, 0x4000, 0xbf80, 0x0000}, bb[8]; /* 1, 2, -1, 0 */
    void *db = device_copy(ops, b, sizeof b, &e);
    ok = db && c->all_reduce_sum(c, db, 8, QS_COMM_BF16, &e) == 0 && ops->copy_to_host(bb, db, sizeof bb, &e) == 0 &&
         bb[0] == 0x4000 && bb[1] == 0x4080 && bb[2] == 0xc000 && bb[3] == 0;
    check(ok, "all_reduce_bf16", r);

    int32_t mine[3] = {10 * r, 10 * r + 1, 10 * r + 2}, all[6] = {-1, -1, -1, -1, -1, -1};
    void *ds = device_copy(ops, mine, sizeof mine, &e), *dr = device_copy(ops, all, sizeof all, &e);
    ok = ds && dr && c->all_gather(c, ds, dr, 3, QS_COMM_I32, &e) == 0 &&
         ops->copy_to_host(all, dr, sizeof all, &e) == 0 && all[0] == 0 && all[2] == 2 && all[3] == 10 && all[5] == 12;
    check(ok, "all_gather_i32", r);

    int32_t v[4] = {r ? -1 : 5, r ? -1 : 6, r ? -1 : 7, r ? -1 : 8};
    void *dv = device_copy(ops, v, sizeof v, &e);
    ok = dv && c->broadcast(c, dv, 4, QS_COMM_I32, 0, QS_COMM_WAIT_STEP, &e) == 0 &&
         ops->copy_to_host(v, dv, sizeof v, &e) == 0 && v[0] == 5 && v[3] == 8;
    check(ok, "broadcast_i32", r);

    if (r == 0)
        printf("%d passed, %d failed, 0 skipped\n", g_passed, g_failed);
    c->destroy(c);
    host->destroy(host);
    free(x);
    free(back);
    return g_failed ? 1 : 0;
}
