/* test_l2_prefetch_cuda.c — GPU test (run by scripts/gpu-check.sh): the L2 prefetch
 * (cuda/l2_prefetch.cu) leaves fresh random buffers exactly as they were, at sizes below one bulk
 * run, with a tail that is not a multiple of 16 bytes and past the 60 MB L2, and a kernel queued
 * after it on the same stream reads them intact (the read probe's sum against the CPU's); a
 * misaligned buffer is refused and one under 16 bytes is a no-op. On devices before sm_90 the
 * prefetch queues nothing (the same checks still pass). Prints "N passed, N failed, N skipped". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_test_util.h"
#include "l2_prefetch.h"
#include "qs_cuda.h"
#include "qs_cuda_mem.h"
#include "read_probe.h"

static int g_passed, g_failed;
static uint64_t g_rng = 0x452821E638D01377ull;

static void check(const char *what, int ok, const char *detail)
{
    printf("%-44s %s%s%s\n", what, ok ? "ok" : "FAIL", detail ? "  " : "", detail ? detail : "");
    ok ? g_passed++ : g_failed++;
}

/* `bytes` random bytes (a multiple of 4 for the probe), prefetched, then summed by the probe on the
 * same stream and copied back: the sum and every byte as written. */
static void test_prefetch(size_t bytes)
{
    char what[64], detail[160] = "";
    snprintf(what, sizeof what, "prefetch of %zu bytes", bytes);
    qs_err err = {{0}};
    uint8_t *host = malloc(bytes), *back = malloc(bytes);
    uint32_t cpu = 0, gpu = 0, zero = 0;
    for (size_t i = 0; i < bytes; i += 8) {
        uint64_t r = qs_test_xorshift(&g_rng);
        memcpy(host + i, &r, bytes - i < 8 ? bytes - i : 8);
    }
    for (size_t i = 0; i < bytes; i += 4) {
        uint32_t w;
        memcpy(&w, host + i, 4);
        cpu += w;
    }
    void *buf = NULL, *sum = NULL;
    int rc = qs_cuda_malloc(&buf, bytes, &err) || qs_cuda_malloc(&sum, 4, &err) ||
             qs_cuda_memcpy_h2d(buf, host, bytes, &err) || qs_cuda_memcpy_h2d(sum, &zero, 4, &err) ||
             qs_cuda_l2_prefetch(buf, bytes, NULL, &err) || qs_cuda_read_sum(buf, bytes, sum, NULL, &err) ||
             qs_cuda_memcpy_d2h(&gpu, sum, 4, &err) || qs_cuda_memcpy_d2h(back, buf, bytes, &err);
    if (rc)
        snprintf(detail, sizeof detail, "error: %s", err.msg);
    else
        snprintf(detail, sizeof detail, "sum gpu %08x cpu %08x", gpu, cpu);
    check(what, !rc && gpu == cpu && !memcmp(host, back, bytes), detail);
    qs_cuda_free(buf);
    qs_cuda_free(sum);
    free(host);
    free(back);
}

static void test_edges(void)
{
    qs_err err = {{0}};
    void *buf = NULL;
    if (qs_cuda_malloc(&buf, 64, &err)) {
        check("prefetch edges", 0, err.msg);
        return;
    }
    int misaligned = qs_cuda_l2_prefetch((char *)buf + 4, 32, NULL, &err);
    check("prefetch refuses a misaligned buffer", misaligned != 0 && err.msg[0], err.msg);
    err.msg[0] = 0;
    int tiny = qs_cuda_l2_prefetch((char *)buf + 4, 12, NULL, &err);
    check("prefetch of 12 bytes does nothing", tiny == 0 && !err.msg[0], err.msg);
    qs_cuda_free(buf);
}

int main(void)
{
    if (qs_cuda_device_count() == 0) {
        printf("no CUDA device: %s\n0 passed, 0 failed, 1 skipped\n", qs_cuda_unavailable_reason());
        return 0;
    }
    /* one bulk run is 32 KB; the last size is past the 60 MB L2 */
    const size_t sizes[] = {16, 1000, 32768 + 20, (size_t)5 << 20 | 44, (size_t)70 << 20};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        test_prefetch(sizes[i]);
    test_edges();
    printf("%d passed, %d failed, 0 skipped\n", g_passed, g_failed);
    return g_failed != 0;
}
