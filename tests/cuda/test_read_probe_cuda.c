/* test_read_probe_cuda.c — GPU test (run by scripts/gpu-check.sh): the read probe behind
 * bench_kernels' read ceiling (cuda/read_probe.cu) sums every 32-bit word of fresh random buffers
 * exactly as the CPU does (wrapping), at sizes with and without a tail of words past the last
 * 16 bytes, from one word to more than the L2 cache; the sum lands on a poisoned start value
 * (the probe adds), and misaligned or odd-sized buffers are refused. Prints
 * "N passed, N failed, N skipped". */
#include <stdio.h>
#include <stdlib.h>

#include "cuda_test_util.h"
#include "qs_cuda.h"
#include "qs_cuda_mem.h"
#include "read_probe.h"

static int g_passed, g_failed;
static uint64_t g_rng = 0x243F6A8885A308D3ull;

static uint32_t next_u32(void) { return (uint32_t)(qs_test_xorshift(&g_rng) >> 32); }

static void check(const char *what, int ok, const char *detail)
{
    printf("%-44s %s%s%s\n", what, ok ? "ok" : "FAIL", detail ? "  " : "", detail ? detail : "");
    ok ? g_passed++ : g_failed++;
}

/* The probe's sum of `words` random words against the CPU's, starting from a poison value. */
static void test_sum(size_t words)
{
    char what[64], detail[160];
    snprintf(what, sizeof what, "read sum of %zu words", words);
    qs_err err = {{0}};
    uint32_t *host = malloc(4 * words), cpu = 0xDEADBEEFu;
    for (size_t i = 0; i < words; i++)
        cpu += host[i] = next_u32();
    void *buf = NULL, *sum = NULL;
    uint32_t start = 0xDEADBEEFu, gpu = 0;
    int rc = qs_cuda_malloc(&buf, 4 * words, &err) || qs_cuda_malloc(&sum, 4, &err) ||
             qs_cuda_memcpy_h2d(buf, host, 4 * words, &err) || qs_cuda_memcpy_h2d(sum, &start, 4, &err) ||
             qs_cuda_read_sum(buf, 4 * words, sum, NULL, &err) || qs_cuda_memcpy_d2h(&gpu, sum, 4, &err);
    if (rc)
        snprintf(detail, sizeof detail, "error: %s", err.msg);
    else
        snprintf(detail, sizeof detail, "gpu %08x cpu %08x", gpu, cpu);
    check(what, !rc && gpu == cpu, detail);
    qs_cuda_free(buf);
    qs_cuda_free(sum);
    free(host);
}

static void test_refusals(void)
{
    qs_err err = {{0}};
    void *buf = NULL, *sum = NULL;
    if (qs_cuda_malloc(&buf, 64, &err) || qs_cuda_malloc(&sum, 4, &err)) {
        check("read probe refusals", 0, err.msg);
        return;
    }
    int odd = qs_cuda_read_sum(buf, 10, sum, NULL, &err);
    check("read probe refuses 10 bytes", odd != 0 && err.msg[0], err.msg);
    err.msg[0] = 0;
    int misaligned = qs_cuda_read_sum((char *)buf + 4, 16, sum, NULL, &err);
    check("read probe refuses a misaligned buffer", misaligned != 0 && err.msg[0], err.msg);
    qs_cuda_free(buf);
    qs_cuda_free(sum);
}

int main(void)
{
    if (qs_cuda_device_count() == 0) {
        printf("no CUDA device: %s\n0 passed, 0 failed, 1 skipped\n", qs_cuda_unavailable_reason());
        return 0;
    }
    const size_t sizes[] = {1, 3, 4, 7, 1000, 4096 * 257 + 3, (size_t)1 << 22, 25165825}; /* last: > 60 MB L2 / 4 */
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        test_sum(sizes[i]);
    test_refusals();
    printf("%d passed, %d failed, 0 skipped\n", g_passed, g_failed);
    return g_failed != 0;
}
