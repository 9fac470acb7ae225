/* test_sample_cuda.c — GPU test (run by scripts/gpu-check.sh): the sampling op of the CUDA ops
 * table (cuda/sample_cuda.cu) against the CPU reference (src/cpu/sample_cpu.c) on fresh random
 * BF16 logits (so both sides read the same values) at vocabularies of 1000, 32000, 50257 (odd)
 * and 128256, 1 to 64 rows (and 200, the many-rows kernel), with random per-row parameters:
 * greedy, temperature, top-k, top-p, min-p, banned ids, skipped rows. GPU tokens are poisoned
 * first. Greedy rows must match exactly. Sampled rows must match exactly too, except where the
 * draw sits within float rounding of a boundary: the two devices' expf differ by a few ulps, so
 * a weight may differ by a few units in 2^40, and when u * mass (or top_p * mass) falls within
 * that of where one token's cumulative mass ends and the next one's begins, either token is
 * right. Such a row is accepted only when the CPU reference itself picks the GPU's token after
 * u and top_p move by one part in 10^6, it is printed as a near tie, and near ties must stay
 * under 2% of the sampled rows. Also prints the op's time per call at a few sizes (information,
 * not a check). With --self-check the CPU ops stand in for the GPU (no GPU needed).
 * Prints "N passed, N failed, N skipped". */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda_test_util.h"
#include "ops_pair.h"
#include "core/ops.h"

static int g_passed, g_failed;
static uint64_t g_rng = 0x243F6A8885A308D3ull;

static double urand(void) { return (qs_test_frand(&g_rng) + 1.0) * 0.5; } /* [0, 1) */

static qs_sample_row random_row(int V, int r)
{
    qs_sample_row p = {0};
    static const double temps[] = {0, 0.6, 1.0, 1.3};
    static const int top_ks[] = {0, 0, 1, 20, 50, 2000};
    static const double top_ps[] = {1, 1, 0.95, 0.8, 0.3, 1e-6};
    static const double min_ps[] = {0, 0, 0.05, 0.5};
    double t = temps[(int)(urand() * 4)];
    p.inv_temperature = t > 0 ? (float)(1.0 / t) : 0.0f;
    p.top_k = top_ks[(int)(urand() * 6)];
    p.top_p = top_ps[(int)(urand() * 6)];
    double mp = min_ps[(int)(urand() * 4)];
    p.log_min_p = mp > 0 ? (float)log(mp) : -INFINITY;
    p.u = urand();
    if (r % 5 == 3) {
        p.n_banned = 1 + (int)(urand() * 8);
        for (int j = 0; j < p.n_banned; j++)
            p.banned[j] = (int32_t)(urand() * V);
    }
    p.skip = r % 9 == 8;
    return p;
}

static int32_t cpu_one(const float *x, const qs_sample_row *row, int V)
{
    int32_t t = -99;
    qs_err err = {{0}};
    cpu->sample(&t, x, row, 1, V, &err);
    return t;
}

/* Whether the reference picks tok once u and top_p move by one part in 10^6. */
static bool near_tie(const float *x, const qs_sample_row *row, int V, int32_t tok)
{
    const double f[3] = {1 - 1e-6, 1, 1 + 1e-6};
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++) {
            qs_sample_row q = *row;
            q.u = fmin(row->u * f[a], 1 - 0x1.0p-53);
            if (q.top_p > 0 && q.top_p < 1)
                q.top_p = fmin(row->top_p * f[b], 1 - 0x1.0p-53);
            if (cpu_one(x, &q, V) == tok)
                return true;
        }
    return false;
}

static void test_case(int V, int n_rows, float scale)
{
    qs_err err = {{0}};
    int64_t n = (int64_t)V * n_rows;
    float *x = qs_test_rand_bf16(&g_rng, n, scale);
    for (int r = 0; r < n_rows; r++)
        if (r % 7 == 2) /* a planted peak, sometimes banned */
            x[(int64_t)r * V + (int)(urand() * V)] = scale * 2;
    qs_sample_row *rows = malloc(sizeof *rows * n_rows);
    for (int r = 0; r < n_rows; r++)
        rows[r] = random_row(V, r);
    pair px = pair_from(x, n); /* the same values on both sides */
    void *gx = px.g;
    qs_sample_row *grows = gpu->alloc(sizeof *rows * n_rows, &err);
    int32_t *gtok = gpu->alloc(sizeof(int32_t) * n_rows, &err);
    int32_t *tok_gpu = malloc(sizeof(int32_t) * n_rows), *tok_cpu = malloc(sizeof(int32_t) * n_rows);
    for (int r = 0; r < n_rows; r++)
        tok_gpu[r] = -12345; /* poison */
    int rc = !gx || !grows || !gtok ||
             gpu->copy_to_device(grows, rows, sizeof *rows * n_rows, &err) ||
             gpu->copy_to_device(gtok, tok_gpu, sizeof(int32_t) * n_rows, &err) ||
             gpu->sample(gtok, gx, grows, n_rows, V, &err) ||
             gpu->copy_to_host(tok_gpu, gtok, sizeof(int32_t) * n_rows, &err) ||
             cpu->sample(tok_cpu, px.c, rows, n_rows, V, &err);
    char name[96];
    snprintf(name, sizeof name, "sample vocab %d x %d rows (logits +-%g)", V, n_rows, scale);
    if (rc) {
        printf("%-48s error: %s\n", name, err.msg);
        g_failed++;
    } else {
        int bad = 0, ties = 0, sampled = 0;
        for (int r = 0; r < n_rows; r++) {
            const qs_sample_row *p = &rows[r];
            bool greedy = !(p->inv_temperature > 0);
            sampled += !greedy && !p->skip;
            if (tok_gpu[r] == tok_cpu[r])
                continue;
            const float *xr = x + (int64_t)r * V;
            if (!greedy && !p->skip && tok_gpu[r] >= 0 && tok_gpu[r] < V && near_tie(xr, p, V, tok_gpu[r])) {
                printf("  near tie: row %d u %.9f top_p %g: gpu %d, cpu %d\n", r, p->u, p->top_p, tok_gpu[r],
                       tok_cpu[r]);
                ties++;
                continue;
            }
            if (bad++ < 5)
                printf("  row %d (%s, 1/T %g, top_k %d, top_p %g, log min_p %g, u %.9f, %d banned, skip %d): gpu %d, "
                       "cpu %d\n",
                       r, greedy ? "greedy" : "sampled", p->inv_temperature, p->top_k, p->top_p, p->log_min_p, p->u,
                       p->n_banned, p->skip, tok_gpu[r], tok_cpu[r]);
        }
        bool pass = bad == 0 && ties * 50 <= (sampled > 50 ? sampled : 50);
        printf("%-48s %d differ, %d near ties  %s\n", name, bad, ties, pass ? "ok" : "FAIL");
        pass ? g_passed++ : g_failed++;
    }
    pair_free(&px);
    gpu->free(grows);
    gpu->free(gtok);
    free(x), free(rows), free(tok_gpu), free(tok_cpu);
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

/* Information only: microseconds per call, every row greedy or every row top-k 50 + top-p 0.9. */
static void time_case(int V, int n_rows, bool greedy)
{
    qs_err err = {{0}};
    int64_t n = (int64_t)V * n_rows;
    float *x = qs_test_rand_bf16(&g_rng, n, 8.f);
    qs_sample_row *rows = calloc(n_rows, sizeof *rows);
    for (int r = 0; r < n_rows; r++) {
        rows[r].inv_temperature = greedy ? 0.0f : 1.0f / 0.7f;
        rows[r].top_k = greedy ? 0 : 50;
        rows[r].top_p = greedy ? 1 : 0.9;
        rows[r].log_min_p = -INFINITY;
        rows[r].u = urand();
    }
    void *gx = gpu->alloc(gpu->act_size * n, &err);
    qs_sample_row *grows = gpu->alloc(sizeof *rows * n_rows, &err);
    int32_t *gtok = gpu->alloc(sizeof(int32_t) * n_rows, &err), t0;
    double us = -1;
    if (gx && grows && gtok && !gpu->acts_from_host_f32(gx, x, n, &err) &&
        !gpu->copy_to_device(grows, rows, sizeof *rows * n_rows, &err)) {
        int iters = 20;
        gpu->sample(gtok, gx, grows, n_rows, V, &err);
        gpu->copy_to_host(&t0, gtok, sizeof t0, &err);
        double t = now_us();
        for (int i = 0; i < iters; i++)
            gpu->sample(gtok, gx, grows, n_rows, V, &err);
        gpu->copy_to_host(&t0, gtok, sizeof t0, &err);
        us = (now_us() - t) / iters;
    }
    printf("info: sample vocab %d x %d rows, %-26s %8.1f us a call\n", V, n_rows,
           greedy ? "greedy:" : "top-k 50, top-p 0.9, T 0.7:", us);
    gpu->free(gx);
    gpu->free(grows);
    gpu->free(gtok);
    free(x), free(rows);
}

int main(int argc, char **argv)
{
    (void)pair_out;
    if (!ops_pair_setup(argc, argv))
        return 0;
    if (!gpu->sample || !cpu->sample) {
        printf("the %s ops table has no sample op\n0 passed, 1 failed, 0 skipped\n", gpu->name);
        return 1;
    }
    const int vocabs[] = {1000, 32000, 50257, 128256};
    const int rows[] = {1, 3, 17, 64};
    for (size_t v = 0; v < sizeof vocabs / sizeof *vocabs; v++)
        for (size_t r = 0; r < sizeof rows / sizeof *rows; r++)
            test_case(vocabs[v], rows[r], r % 2 ? 4.f : 16.f);
    test_case(32000, 200, 8.f);  /* more rows than the wide-block kernel takes */
    test_case(128256, 64, 1.f);  /* flat: top-p sets of thousands */
    bool self = gpu == cpu;
    if (!self) {
        time_case(128256, 1, true), time_case(128256, 1, false);
        time_case(128256, 64, true), time_case(128256, 64, false);
        time_case(128256, 256, true), time_case(128256, 256, false);
    }
    printf("%d passed, %d failed, 0 skipped\n", g_passed, g_failed);
    return g_failed ? 1 : 0;
}
