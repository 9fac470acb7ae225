/* test_expert_slice_cuda.c — GPU test of the expert-parallel routing op on CUDA (ops.h
 * moe_expert_slice, cuda/ops_cuda.cu), one GPU: random routing slots over 16 experts, the rank
 * holding experts 4..8; slots of its experts become local ids with their weights kept, every
 * other slot id -1 with weight 0 (which the MoE kernels skip: test_moe_cuda's "ep" routing); a
 * bad range is an error. Prints "N passed, N failed, N skipped". */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda_test_util.h"
#include "device/backends.h"
#include "core/ops.h"
#include "device_query.h"

static int g_passed, g_failed;

static void check(bool ok, const char *name, const char *why)
{
    ok ? g_passed++ : g_failed++;
    printf("%s %s%s%s\n", ok ? "ok" : "not ok", name, ok ? "" : ": ", ok ? "" : why);
}

int main(void)
{
    if (qs_cuda_device_count() < 1) {
        printf("skip test_expert_slice_cuda: no GPU\n0 passed, 0 failed, 1 skipped\n");
        return 0;
    }
    qs_err e = {{0}};
    const qs_ops *ops = qs_ops_for_platform(QS_PLATFORM_CUDA, &e);
    if (!ops || !ops->moe_expert_slice) {
        printf("not ok cuda_ops: %s\n0 passed, 1 failed, 0 skipped\n", ops ? "no moe_expert_slice" : e.msg);
        return 1;
    }
    enum { N = 10007, E = 16, FIRST = 4, COUNT = 4 };
    uint64_t seed = (uint64_t)time(NULL) | 1;
    printf("seed %llu\n", (unsigned long long)seed);
    int32_t *ids = malloc(sizeof(int32_t) * N), *got_ids = malloc(sizeof(int32_t) * N);
    float *w = malloc(sizeof(float) * N), *got_w = malloc(sizeof(float) * N);
    for (int i = 0; i < N; i++) {
        ids[i] = (int32_t)(qs_test_xorshift(&seed) >> 40) % E;
        w[i] = qs_test_frand(&seed) * 0.5f + 0.5f;
    }
    void *d_ids = ops->alloc(sizeof(int32_t) * N, &e), *d_w = ops->alloc(sizeof(float) * N, &e);
    bool ok = d_ids && d_w && !ops->copy_to_device(d_ids, ids, sizeof(int32_t) * N, &e) &&
              !ops->copy_to_device(d_w, w, sizeof(float) * N, &e) &&
              !ops->moe_expert_slice(d_ids, d_w, N, FIRST, COUNT, &e) &&
              !ops->copy_to_host(got_ids, d_ids, sizeof(int32_t) * N, &e) &&
              !ops->copy_to_host(got_w, d_w, sizeof(float) * N, &e);
    int bad = -1, mine = 0;
    for (int i = 0; ok && i < N && bad < 0; i++) {
        bool here = ids[i] >= FIRST && ids[i] < FIRST + COUNT;
        mine += here;
        if (here ? got_ids[i] != ids[i] - FIRST || got_w[i] != w[i] : got_ids[i] != -1 || got_w[i] != 0.0f)
            bad = i;
    }
    char why[QS_ERR_MSG_MAX + 96];
    snprintf(why, sizeof why, "%s slot %d: id %d weight %g -> %d %g", e.msg, bad, bad >= 0 ? ids[bad] : 0,
             bad >= 0 ? (double)w[bad] : 0.0, bad >= 0 ? got_ids[bad] : 0, bad >= 0 ? (double)got_w[bad] : 0.0);
    check(ok && bad < 0 && mine > 0 && mine < N, "slice_experts_4_to_8", why);
    check(ops->moe_expert_slice(d_ids, d_w, N, 0, 0, &e) == -1 && strstr(e.msg, "experts 0..0"), "empty_range_refused",
          e.msg);
    if (d_ids)
        ops->free(d_ids);
    if (d_w)
        ops->free(d_w);
    free(ids);
    free(got_ids);
    free(w);
    free(got_w);
    printf("%d passed, %d failed, 0 skipped\n", g_passed, g_failed);
    return g_failed ? 1 : 0;
}
