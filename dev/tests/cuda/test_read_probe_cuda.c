/* test_read_probe_cuda.c — GPU test (run by scripts/gpu-check.sh): the read probe behind
 * bench_kernels' read ceiling (dev/cuda/read_probe.cu) sums every 32-bit word of fresh random buffers
 * exactly as the CPU does (wrapping), at sizes with and without a tail of words past the last
 * 16 bytes, from one word to more than the L2 cache; the sum lands on a poisoned start value
 * (the probe adds), and misaligned or odd-sized buffers are refused. The ring probe
 * (dev/cuda/ring_probe.cu, compute capability 9.0 only: skipped elsewhere) likewise, through rings
 * of 2-16 stages of 16 B-64 KB on the stream kernel's CTA count, one CTA and more CTAs than
 * stages, alone on their SMs or not, with a short last stage, up to more than the L2 cache; and
 * bad stage sizes and depths
 * are refused (on any device). Prints "N passed, N failed, N skipped". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_test_util.h"
#include "device_query.h"
#include "qs_cuda_mem.h"
#include "read_probe.h"
#include "core/kernel.h"
#include "ring_probe.h"

static int g_passed, g_failed, g_skipped;
static uint64_t g_rng = 0x243F6A8885A308D3ull;

static uint32_t next_u32(void) { return (uint32_t)(qs_test_xorshift(&g_rng) >> 32); }

static void check(const char *what, int ok, const char *detail)
{
    printf("%-44s %s%s%s\n", what, ok ? "ok" : "FAIL", detail ? "  " : "", detail ? detail : "");
    ok ? g_passed++ : g_failed++;
}

/* How a probe reads: plain (depth 0), or through rings of `depth` stages of stage_bytes on `ctas`
 * CTAs (0: the stream kernel's rule). */
typedef struct {
    int depth, stage_bytes, ctas;
    bool alone;
} probe;

static int probe_sum(probe p, const void *buf, size_t bytes, void *sum, qs_err *err)
{
    return p.depth ? qs_cuda_ring_read_sum(buf, bytes, p.stage_bytes, p.depth, p.ctas, p.alone, sum, NULL, err)
                   : qs_cuda_read_sum(buf, bytes, sum, NULL, err);
}

/* The probe's sum of `words` random words against the CPU's, starting from a poison value. */
static void test_sum(size_t words, probe p)
{
    char what[96], detail[160];
    if (p.depth)
        snprintf(what, sizeof what, "ring sum of %zu words, %d x %d B, %d CTAs%s", words, p.depth, p.stage_bytes,
                 p.ctas, p.alone ? ", alone" : "");
    else
        snprintf(what, sizeof what, "read sum of %zu words", words);
    qs_err err = {{0}};
    uint32_t *host = malloc(4 * words), cpu = 0xDEADBEEFu;
    for (size_t i = 0; i < words; i++)
        cpu += host[i] = next_u32();
    void *buf = NULL, *sum = NULL;
    uint32_t start = 0xDEADBEEFu, gpu = 0;
    int rc = qs_cuda_malloc(&buf, 4 * words, &err) || qs_cuda_malloc(&sum, 4, &err) ||
             qs_cuda_memcpy_h2d(buf, host, 4 * words, &err) || qs_cuda_memcpy_h2d(sum, &start, 4, &err) ||
             probe_sum(p, buf, 4 * words, sum, &err) || qs_cuda_memcpy_d2h(&gpu, sum, 4, &err);
    if (rc)
        snprintf(detail, sizeof detail, "error: %s", err.msg);
    else
        snprintf(detail, sizeof detail, "gpu %08x cpu %08x", gpu, cpu);
    check(what, !rc && gpu == cpu, detail);
    qs_cuda_free(buf);
    qs_cuda_free(sum);
    free(host);
}

/* Each bad call is refused with a message naming its probe, before anything is launched (so on
 * any device: the ring probe checks its arguments before the device). */
static void test_refusals(void)
{
    qs_err err = {{0}};
    void *buf = NULL, *sum = NULL;
    if (qs_cuda_malloc(&buf, 1024, &err) || qs_cuda_malloc(&sum, 4, &err)) {
        check("probe refusals", 0, err.msg);
        return;
    }
    static const struct {
        const char *what;
        size_t offset, bytes;
        probe p;
    } bad[] = {
        {"read probe refuses 10 bytes", 0, 10, {0, 0, 0, false}},
        {"read probe refuses a misaligned buffer", 4, 16, {0, 0, 0, false}},
        {"ring probe refuses 24 bytes", 0, 24, {4, 1024, 0, false}},
        {"ring probe refuses 0 bytes", 0, 0, {4, 1024, 0, false}},
        {"ring probe refuses a misaligned buffer", 8, 512, {4, 1024, 0, false}},
        {"ring probe refuses one stage", 0, 1024, {1, 1024, 0, false}},
        {"ring probe refuses 17 stages", 0, 1024, {QS_RING_PROBE_MAX_DEPTH + 1, 1024, 0, false}},
        {"ring probe refuses 1000-byte stages", 0, 1024, {4, 1000, 0, false}},
        {"ring probe refuses a ring past its bytes", 0, 1024, {16, 16 * 1024, 0, false}},
        {"ring probe refuses -1 CTAs", 0, 1024, {4, 1024, -1, false}},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err.msg[0] = 0;
        int rc = probe_sum(bad[i].p, (char *)buf + bad[i].offset, bad[i].bytes, sum, &err);
        check(bad[i].what, rc != 0 && strstr(err.msg, bad[i].p.depth ? "ring probe" : "read probe") != NULL, err.msg);
    }
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
        test_sum(sizes[i], (probe){0, 0, 0, false});
    test_refusals();
    qs_device_caps caps;
    qs_err err = {{0}};
    if (qs_cuda_device_caps(0, &caps, &err) == 0 && caps.cc_major == 9 && caps.cc_minor == 0) {
        /* words (multiples of 4), then the ring: one short stage; a short last stage; as many
         * stages as CTAs and fewer; the Llama-3.1-8B o_proj's FP8 bytes; more than the L2 */
        const struct {
            size_t words;
            probe p;
        } rings[] = {
            {4, {2, 16 * 1024, 0, false}},
            {4096 * 5 + 12, {4, 16 * 1024, 0, true}},
            {4096 * 5 + 12, {3, 16 * 1024, 7, false}},
            {4096 * 300, {8, 16 * 1024, 1, true}},
            {1000, {16, 16, 0, false}},
            {4096 * 1024, {4, 16 * 1024, 0, true}},
            {4096 * 1024, {4, 16 * 1024, 0, false}},
            {4096 * 1024, {12, 16 * 1024, 0, true}},
            {4096 * 1024, {8, 16 * 1024, caps.sm_count, true}},
            {25165828, {3, 64 * 1024, 0, true}},
        };
        for (size_t i = 0; i < sizeof rings / sizeof rings[0]; i++)
            test_sum(rings[i].words, rings[i].p);
    } else {
        printf("%-44s skip  (compute capability %d.%d, not 9.0)\n", "ring probe", caps.cc_major, caps.cc_minor);
        g_skipped++;
    }
    printf("%d passed, %d failed, %d skipped\n", g_passed, g_failed, g_skipped);
    return g_failed != 0;
}
