/* test_split_cuda.c — GPU test (run by scripts/gpu-check.sh): the fused-projection ops of the
 * CUDA ops table (cuda/split_cuda.cu) against the CPU ops on fresh random data — split_qkv, the
 * column split of a fused q/k/v output, and swiglu_gate_up, SwiGLU read from a fused gate/up
 * output — at decode and prefill sizes, GQA and MHA widths. Inputs are rounded to BF16 for both
 * sides; GPU outputs are poisoned first. The split is a copy, so it must match exactly; SwiGLU
 * passes at ||gpu - cpu|| / ||cpu|| <= 1e-2 and must equal, bit for bit, the GPU's own swiglu on
 * separate gate and up buffers (a fused layer changes no activation). Prints
 * "N passed, N failed, N skipped". */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_test_util.h"
#include "ops_pair.h"
#include "model/safetensors.h"
#include "ops/ops.h"
#include "qs_cuda.h"
#include "qs_cuda_ops.h"

static int g_passed, g_failed;
static uint64_t g_rng = 0x13198A2E03707344ull;

static float *to_host(const qs_ops *ops, const void *buf, int64_t n)
{
    qs_err err;
    float *h = malloc(sizeof(float) * n);
    ops->acts_to_host_f32(h, buf, n, &err);
    return h;
}

/* exact: every value equal (and finite); else relative L2 error within 1e-2. */
static void compare(const char *what, const pair *p, bool exact)
{
    float *a = to_host(cpu, p->c, p->n), *b = to_host(gpu, p->g, p->n);
    double num = 0, den = 0;
    int64_t bad = 0, differ = 0;
    for (int64_t i = 0; i < p->n; i++) {
        if (!isfinite(b[i]))
            bad++;
        differ += a[i] != b[i];
        num += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
        den += (double)a[i] * a[i];
    }
    double rel = den > 0 ? sqrt(num / den) : sqrt(num);
    int pass = bad == 0 && (exact ? differ == 0 : rel <= 1e-2);
    printf("%-48s rel %.2e  %lld differ  %s%s\n", what, rel, (long long)differ, pass ? "ok" : "FAIL",
           bad ? " (non-finite outputs)" : "");
    pass ? g_passed++ : g_failed++;
    free(a);
    free(b);
}

static void check_rc(const char *what, int rc_cpu, int rc_gpu, const qs_err *err)
{
    if (rc_cpu || rc_gpu) {
        printf("%-48s error: %s\n", what, err->msg);
        g_failed++;
    }
}

static void test_split_qkv(int64_t rows, int64_t nq, int64_t nkv)
{
    qs_err err = {{0}};
    char name[96];
    int64_t w = nq + 2 * nkv;
    float *x = qs_test_rand_bf16(&g_rng, rows * w, 3.f);
    pair px = pair_from(x, rows * w), pq = pair_out(rows * nq), pk = pair_out(rows * nkv), pv = pair_out(rows * nkv);
    check_rc("split_qkv", cpu->split_qkv(pq.c, pk.c, pv.c, px.c, rows, nq, nkv, nkv, &err),
             gpu->split_qkv(pq.g, pk.g, pv.g, px.g, rows, nq, nkv, nkv, &err), &err);
    snprintf(name, sizeof name, "split_qkv q %lldx%lld", (long long)rows, (long long)nq);
    compare(name, &pq, true);
    snprintf(name, sizeof name, "split_qkv k %lldx%lld", (long long)rows, (long long)nkv);
    compare(name, &pk, true);
    snprintf(name, sizeof name, "split_qkv v %lldx%lld", (long long)rows, (long long)nkv);
    compare(name, &pv, true);
    pair_free(&px), pair_free(&pq), pair_free(&pk), pair_free(&pv);
    free(x);
}

static void test_swiglu_gate_up(int64_t rows, int64_t n)
{
    qs_err err = {{0}};
    char name[96];
    float *gu = qs_test_rand_bf16(&g_rng, rows * 2 * n, 4.f);
    pair pgu = pair_from(gu, rows * 2 * n), po = pair_out(rows * n);
    check_rc("swiglu_gate_up", cpu->swiglu_gate_up(po.c, pgu.c, rows, n, QS_ACT_NATURAL, &err),
             gpu->swiglu_gate_up(po.g, pgu.g, rows, n, QS_ACT_NATURAL, &err), &err);
    snprintf(name, sizeof name, "swiglu_gate_up %lldx%lld", (long long)rows, (long long)n);
    compare(name, &po, false);
    /* written in the order marlin's stream kernel reads (ops/act_order.h), where n fits it */
    for (int o = QS_ACT_MARLIN_FP8; o <= QS_ACT_MARLIN_FP4 && qs_act_order_fits((qs_act_order)o, n); o++) {
        pair pord = pair_out(rows * n);
        check_rc("swiglu_gate_up ordered", cpu->swiglu_gate_up(pord.c, pgu.c, rows, n, (qs_act_order)o, &err),
                 gpu->swiglu_gate_up(pord.g, pgu.g, rows, n, (qs_act_order)o, &err), &err);
        snprintf(name, sizeof name, "swiglu_gate_up %lldx%lld order %d", (long long)rows, (long long)n, o);
        compare(name, &pord, false);
        pair_free(&pord);
    }

    /* the same values as gate and up in buffers of their own, through the plain swiglu */
    float *g = malloc(sizeof(float) * rows * n), *u = malloc(sizeof(float) * rows * n);
    for (int64_t r = 0; r < rows; r++) {
        memcpy(g + r * n, gu + r * 2 * n, sizeof(float) * n);
        memcpy(u + r * n, gu + r * 2 * n + n, sizeof(float) * n);
    }
    pair pg = pair_from(g, rows * n), pu = pair_from(u, rows * n), ps = pair_out(rows * n);
    check_rc("swiglu", cpu->swiglu(ps.c, pg.c, pu.c, rows, n, &err), gpu->swiglu(ps.g, pg.g, pu.g, rows, n, &err),
             &err);
    float *fused = to_host(gpu, po.g, rows * n), *separate = to_host(gpu, ps.g, rows * n);
    float *fused_cpu = to_host(cpu, po.c, rows * n), *separate_cpu = to_host(cpu, ps.c, rows * n);
    int same = !memcmp(fused, separate, sizeof(float) * rows * n);
    int same_cpu = !memcmp(fused_cpu, separate_cpu, sizeof(float) * rows * n);
    printf("%-48s %s\n", "swiglu_gate_up == swiglu (gpu, bitwise)", same ? "ok" : "FAIL");
    same ? g_passed++ : g_failed++;
    printf("%-48s %s\n", "swiglu_gate_up == swiglu (cpu, bitwise)", same_cpu ? "ok" : "FAIL");
    same_cpu ? g_passed++ : g_failed++;
    pair_free(&pgu), pair_free(&po), pair_free(&pg), pair_free(&pu), pair_free(&ps);
    free(gu), free(g), free(u), free(fused), free(separate), free(fused_cpu), free(separate_cpu);
}

int main(int argc, char **argv)
{
    if (!ops_pair_setup(argc, argv))
        return 0;
    if (!gpu->split_qkv || !gpu->swiglu_gate_up) {
        printf("the %s ops table has no split_qkv / swiglu_gate_up\n0 passed, 1 failed, 0 skipped\n", gpu->name);
        return 1;
    }
    test_split_qkv(1, 64, 32);        /* a tiny GQA model, decode */
    test_split_qkv(1, 4096, 1024);    /* Llama-3-8B, decode */
    test_split_qkv(37, 4096, 1024);   /* a prefill chunk */
    test_split_qkv(5, 2048, 2048);    /* MHA */
    test_swiglu_gate_up(1, 172);      /* stories260K */
    test_swiglu_gate_up(1, 14336);    /* Llama-3-8B, decode */
    test_swiglu_gate_up(33, 14336);
    printf("%d passed, %d failed, 0 skipped\n", g_passed, g_failed);
    return g_failed ? 1 : 0;
}
