/* test_split_cuda.c — GPU test (run by scripts/gpu-check.sh): the fused-projection ops of the
 * CUDA ops table (cuda/split_cuda.cu) against the CPU ops on fresh random data — split_qkv, the
 * column split of a fused q/k/v output, and swiglu_gate_up, SwiGLU read from a fused gate/up
 * output — at decode and prefill sizes, GQA and MHA widths. Inputs are rounded to BF16 for both
 * sides; GPU outputs are poisoned first. The split is a copy, so it must match exactly; SwiGLU
 * passes at ||gpu - cpu|| / ||cpu|| <= 1e-2 and must equal, bit for bit, the GPU's own swiglu on
 * separate gate and up buffers (a fused layer changes no activation). qkv_rope_cache (split,
 * RoPE on q and k, KV-cache write in one op) is checked against the CPU's (its four ops) within
 * 1e-2 and, bit for bit, against the GPU's own four ops (q and both whole caches, dummy rows
 * included). Over an FP8 E4M3 cache (--kv-cache-dtype fp8) the fused op's codes must equal the
 * GPU's own rope + kv_write byte for byte, V's codes the CPU's byte for byte (V is copied, so both
 * quantize the same bf16 numbers), K's dequantized values the CPU's within 2e-2 (the CPU ropes in
 * float32, the GPU in bf16, so a code may land one step away), and no byte outside the written
 * slots may change.
 * Prints "N passed, N failed, N skipped". */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_test_util.h"
#include "ops_pair.h"
#include "core/fp8.h"
#include "core/ops.h"
#include "core/tensor.h"
#include "model/kv_cache.h"
#include "device_query.h"
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
    /* written in the order marlin's stream kernel reads (core/act_order.h), where n fits it */
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

/* n int32 host values on a device. */
static void *ints_on(const qs_ops *ops, const int32_t *v, int64_t n)
{
    qs_err err;
    void *d = ops->alloc(sizeof(int32_t) * (n > 0 ? n : 1), &err);
    ops->copy_to_device(d, v, sizeof(int32_t) * n, &err);
    return d;
}

/* split_qkv, rope on q and k, kv_write: what qkv_rope_cache stands for (k and v: scratch rows). */
static int qkv_rope_cache_composed(const qs_ops *ops, void *q, void *kc, void *vc, const void *qkv,
                                   const qs_attn_batch *b, const void *inv_freq, int n_heads, int n_kv, int head_dim,
                                   qs_err *err)
{
    int64_t T = b->n_tokens, nq = (int64_t)n_heads * head_dim, nkv = (int64_t)n_kv * head_dim;
    void *k = ops->alloc(ops->act_size * T * nkv, err), *v = ops->alloc(ops->act_size * T * nkv, err);
    int rc = ops->split_qkv(q, k, v, qkv, T, nq, nkv, nkv, err) ||
             ops->rope(q, b->tok_pos, inv_freq, T, n_heads, head_dim, err) ||
             ops->rope(k, b->tok_pos, inv_freq, T, n_kv, head_dim, err) ||
             ops->kv_write(kc, vc, k, v, b, n_kv, head_dim, err);
    ops->free(k), ops->free(v);
    return rc;
}

/* T tokens at scattered positions, each written to a shuffled cache slot; every fifth token is a
 * dummy row (slot -1) whose k and v must not land anywhere. */
static void test_qkv_rope_cache(int64_t T, int n_heads, int n_kv, int head_dim)
{
    qs_err err = {{0}};
    char name[96];
    const int64_t w = (int64_t)(n_heads + 2 * n_kv) * head_dim, nq = (int64_t)n_heads * head_dim;
    const int n_blocks = (int)((T + QS_KV_BLOCK_SIZE - 1) / QS_KV_BLOCK_SIZE) + 2;
    const int64_t n_slots = (int64_t)n_blocks * QS_KV_BLOCK_SIZE, cache = n_slots * n_kv * head_dim;
    int32_t *pos = malloc(sizeof(int32_t) * T), *slots = malloc(sizeof(int32_t) * T),
            *perm = malloc(sizeof(int32_t) * n_slots);
    for (int64_t i = 0; i < n_slots; i++)
        perm[i] = (int32_t)i;
    for (int64_t i = n_slots - 1; i > 0; i--) {
        int64_t j = (int64_t)((qs_test_frand(&g_rng) + 1.0f) * 0.5f * (float)(i + 1)) % (i + 1);
        int32_t t = perm[i];
        perm[i] = perm[j], perm[j] = t;
    }
    for (int64_t t = 0; t < T; t++) {
        pos[t] = (int32_t)((t * 977 + 13) % 6000);
        slots[t] = t % 5 == 4 ? -1 : perm[t];
    }
    float *inv = malloc(sizeof(float) * head_dim / 2);
    for (int i = 0; i < head_dim / 2; i++)
        inv[i] = powf(500000.f, -2.f * i / head_dim);
    float *x = qs_test_rand_bf16(&g_rng, T * w, 2.f);
    pair px = pair_from(x, T * w), pq = pair_out(T * nq), pkc = pair_out(cache), pvc = pair_out(cache);
    pair pq2 = pair_out(T * nq), pkc2 = pair_out(cache), pvc2 = pair_out(cache);
    const qs_ops *ops[2] = {cpu, gpu};
    int rc = 0;
    for (int i = 0; i < 2; i++) {
        void *d_pos = ints_on(ops[i], pos, T), *d_slots = ints_on(ops[i], slots, T);
        void *d_inv = ops[i]->alloc(sizeof(float) * head_dim / 2, &err);
        ops[i]->copy_to_device(d_inv, inv, sizeof(float) * head_dim / 2, &err);
        qs_attn_batch b = {.n_tokens = T, .n_seqs = 1, .tok_pos = d_pos, .slot_mapping = d_slots};
        /* the op on each side; then, on the GPU side, its four ops one after another */
        rc |= ops[i]->qkv_rope_cache(i ? pq.g : pq.c, i ? pkc.g : pkc.c, i ? pvc.g : pvc.c, i ? px.g : px.c, &b,
                                     d_inv, n_heads, n_kv, head_dim, &err);
        if (i == 1)
            rc |= qkv_rope_cache_composed(gpu, pq2.g, pkc2.g, pvc2.g, px.g, &b, d_inv, n_heads, n_kv, head_dim, &err);
        ops[i]->free(d_pos), ops[i]->free(d_slots), ops[i]->free(d_inv);
    }
    check_rc("qkv_rope_cache", rc, 0, &err);
    snprintf(name, sizeof name, "qkv_rope_cache q %lldx%d/%d x%d", (long long)T, n_heads, n_kv, head_dim);
    compare(name, &pq, false);
    /* the caches: the written slots against the CPU (unwritten ones hold NaN on the GPU side) */
    float *kc = to_host(cpu, pkc.c, cache), *vc = to_host(cpu, pvc.c, cache);
    float *kg = to_host(gpu, pkc.g, cache), *vg = to_host(gpu, pvc.g, cache);
    double num = 0, den = 0;
    int64_t bad = 0;
    for (int64_t t = 0; t < T; t++) {
        if (slots[t] < 0)
            continue;
        int64_t block = slots[t] / QS_KV_BLOCK_SIZE, in_block = slots[t] % QS_KV_BLOCK_SIZE;
        for (int h = 0; h < n_kv; h++)
            for (int d = 0; d < head_dim; d++) {
                int64_t o = ((block * n_kv + h) * QS_KV_BLOCK_SIZE + in_block) * head_dim + d;
                const float a[2] = {kc[o], vc[o]}, g[2] = {kg[o], vg[o]};
                for (int j = 0; j < 2; j++) {
                    bad += !isfinite(g[j]);
                    num += ((double)a[j] - g[j]) * ((double)a[j] - g[j]);
                    den += (double)a[j] * a[j];
                }
            }
    }
    double rel = den > 0 ? sqrt(num / den) : sqrt(num);
    int pass = bad == 0 && rel <= 1e-2;
    snprintf(name, sizeof name, "qkv_rope_cache k/v cache %lldx%d x%d", (long long)T, n_kv, head_dim);
    printf("%-48s rel %.2e  %s%s\n", name, rel, pass ? "ok" : "FAIL", bad ? " (non-finite outputs)" : "");
    pass ? g_passed++ : g_failed++;
    /* bit for bit the GPU's own four ops: q, and both caches whole (the dummy rows' slots too) */
    float *q1 = to_host(gpu, pq.g, T * nq), *q2 = to_host(gpu, pq2.g, T * nq);
    float *kg2 = to_host(gpu, pkc2.g, cache), *vg2 = to_host(gpu, pvc2.g, cache);
    int same = !memcmp(q1, q2, sizeof(float) * T * nq) && !memcmp(kg, kg2, sizeof(float) * cache) &&
               !memcmp(vg, vg2, sizeof(float) * cache);
    printf("%-48s %s\n", "qkv_rope_cache == split+rope+kv_write (bitwise)", same ? "ok" : "FAIL");
    same ? g_passed++ : g_failed++;
    pair_free(&px), pair_free(&pq), pair_free(&pkc), pair_free(&pvc), pair_free(&pq2), pair_free(&pkc2),
        pair_free(&pvc2);
    free(x), free(pos), free(slots), free(perm), free(inv), free(kc), free(vc), free(kg), free(vg), free(q1), free(q2),
        free(kg2), free(vg2);
}

/* The same op over FP8 caches with per-layer scales (dummy rows every fifth token). */
static void test_qkv_rope_cache_fp8(int64_t T, int n_heads, int n_kv, int head_dim)
{
    qs_err err = {{0}};
    char name[96];
    const int64_t w = (int64_t)(n_heads + 2 * n_kv) * head_dim, nq = (int64_t)n_heads * head_dim;
    const int n_blocks = (int)((T + QS_KV_BLOCK_SIZE - 1) / QS_KV_BLOCK_SIZE) + 2;
    const int64_t n_slots = (int64_t)n_blocks * QS_KV_BLOCK_SIZE, cache = n_slots * n_kv * head_dim;
    int32_t *pos = malloc(sizeof(int32_t) * T), *slots = malloc(sizeof(int32_t) * T);
    for (int64_t t = 0; t < T; t++) {
        pos[t] = (int32_t)((t * 977 + 13) % 6000);
        slots[t] = t % 5 == 4 ? -1 : (int32_t)((t * 7 + 3) % n_slots);
    }
    for (int64_t t = 0; t < T; t++) /* distinct slots: (7t + 3) mod n_slots is a bijection while gcd(7, n) = 1 */
        for (int64_t u = 0; u < t; u++)
            if (slots[t] >= 0 && slots[u] == slots[t])
                slots[t] = -1;
    float *inv = malloc(sizeof(float) * head_dim / 2);
    for (int i = 0; i < head_dim / 2; i++)
        inv[i] = powf(500000.f, -2.f * i / head_dim);
    float *x = qs_test_rand_bf16(&g_rng, T * w, 2.f);
    unsigned char *fill = malloc((size_t)cache);
    memset(fill, 0xAA, (size_t)cache);
    const qs_ops *ops[2] = {cpu, gpu};
    unsigned char *kc[3], *vc[3]; /* host copies: CPU, GPU fused, GPU composed */
    int rc = 0;
    for (int i = 0; i < 3; i++) {
        const qs_ops *o = ops[i ? 1 : 0];
        void *d_pos = ints_on(o, pos, T), *d_slots = ints_on(o, slots, T);
        void *d_inv = o->alloc(sizeof(float) * head_dim / 2, &err), *d_x = o->alloc(o->act_size * T * w, &err);
        void *d_q = o->alloc(o->act_size * T * nq, &err);
        void *d_kc = o->alloc((size_t)cache, &err), *d_vc = o->alloc((size_t)cache, &err);
        rc |= o->copy_to_device(d_inv, inv, sizeof(float) * head_dim / 2, &err) ||
              o->acts_from_host_f32(d_x, x, T * w, &err) || o->copy_to_device(d_kc, fill, (size_t)cache, &err) ||
              o->copy_to_device(d_vc, fill, (size_t)cache, &err);
        qs_attn_batch b = {.n_tokens = T, .n_seqs = 1, .tok_pos = d_pos, .slot_mapping = d_slots,
                           .kv_dtype = QS_KV_FP8_E4M3, .k_scale = 1.0f / 100, .v_scale = 1.0f / 150};
        rc |= i < 2 ? o->qkv_rope_cache(d_q, d_kc, d_vc, d_x, &b, d_inv, n_heads, n_kv, head_dim, &err)
                    : qkv_rope_cache_composed(o, d_q, d_kc, d_vc, d_x, &b, d_inv, n_heads, n_kv, head_dim, &err);
        kc[i] = malloc((size_t)cache), vc[i] = malloc((size_t)cache);
        rc |= o->copy_to_host(kc[i], d_kc, (size_t)cache, &err) || o->copy_to_host(vc[i], d_vc, (size_t)cache, &err);
        o->free(d_pos), o->free(d_slots), o->free(d_inv), o->free(d_x), o->free(d_q), o->free(d_kc), o->free(d_vc);
    }
    check_rc("qkv_rope_cache fp8", rc, 0, &err);
    int same = !memcmp(kc[1], kc[2], (size_t)cache) && !memcmp(vc[1], vc[2], (size_t)cache);
    snprintf(name, sizeof name, "fp8 qkv_rope_cache %lldx%d x%d == rope+kv_write", (long long)T, n_kv, head_dim);
    printf("%-48s %s\n", name, same ? "ok" : "FAIL");
    same ? g_passed++ : g_failed++;
    int v_same = !memcmp(vc[0], vc[1], (size_t)cache);
    snprintf(name, sizeof name, "fp8 v cache %lldx%d x%d == cpu (bytes)", (long long)T, n_kv, head_dim);
    printf("%-48s %s\n", name, v_same ? "ok" : "FAIL");
    v_same ? g_passed++ : g_failed++;
    unsigned char *written = calloc((size_t)cache, 1);
    for (int64_t t = 0; t < T; t++)
        if (slots[t] >= 0) {
            int64_t block = slots[t] / QS_KV_BLOCK_SIZE, in_block = slots[t] % QS_KV_BLOCK_SIZE;
            for (int h = 0; h < n_kv; h++)
                memset(written + ((block * n_kv + h) * QS_KV_BLOCK_SIZE + in_block) * head_dim, 1, (size_t)head_dim);
        }
    /* The rotated k differs from the CPU's in the last float bits, which can round a value near
     * an E4M3 boundary to the neighbouring code: one step (6-12%) is allowed per element, more is
     * an error; the aggregate bound holds where there are enough elements for one step to average
     * out (a 32-element head rounds one step up to ~3% on its own). */
    double num = 0, den = 0;
    int64_t bad = 0, outside = 0, n_written = 0;
    for (int64_t i = 0; i < cache; i++) {
        float a = qs_e4m3_to_f32(kc[0][i]) / 100, g = qs_e4m3_to_f32(kc[1][i]) / 100;
        if (!written[i]) { /* a slot nobody wrote keeps its bytes */
            outside += kc[1][i] != 0xAA || vc[1][i] != 0xAA;
            continue;
        }
        int ma = kc[0][i] & 0x7f, mg = kc[1][i] & 0x7f; /* E4M3 magnitudes are ordered by their codes */
        int steps = ((kc[0][i] ^ kc[1][i]) & 0x80) ? ma + mg : abs(ma - mg);
        bad += !isfinite(g) || steps > 1;
        n_written++;
        num += ((double)a - g) * ((double)a - g);
        den += (double)a * a;
    }
    double rel = den > 0 ? sqrt(num / den) : sqrt(num);
    int pass = bad == 0 && outside == 0 && (n_written < 512 || rel <= 2e-2);
    snprintf(name, sizeof name, "fp8 k cache %lldx%d x%d", (long long)T, n_kv, head_dim);
    printf("%-48s rel %.2e  %s%s\n", name, rel, pass ? "ok" : "FAIL", outside ? " (bytes outside the slots)" : "");
    pass ? g_passed++ : g_failed++;
    for (int i = 0; i < 3; i++)
        free(kc[i]), free(vc[i]);
    free(x), free(pos), free(slots), free(inv), free(fill), free(written);
}

int main(int argc, char **argv)
{
    if (!ops_pair_setup(argc, argv))
        return 0;
    if (!gpu->split_qkv || !gpu->swiglu_gate_up || !gpu->qkv_rope_cache || !cpu->qkv_rope_cache) {
        printf("the %s ops table has no split_qkv / swiglu_gate_up / qkv_rope_cache\n0 passed, 1 failed, 0 skipped\n",
               gpu->name);
        return 1;
    }
    test_split_qkv(1, 64, 32);        /* a tiny GQA model, decode */
    test_split_qkv(1, 4096, 1024);    /* Llama-3-8B, decode */
    test_split_qkv(37, 4096, 1024);   /* a prefill chunk */
    test_split_qkv(5, 2048, 2048);    /* MHA */
    test_swiglu_gate_up(1, 172);      /* stories260K */
    test_swiglu_gate_up(1, 14336);    /* Llama-3-8B, decode */
    test_swiglu_gate_up(33, 14336);
    test_swiglu_gate_up(3, 171);      /* odd width: the one-column-per-thread kernel */
    test_qkv_rope_cache(1, 8, 4, 8);     /* stories260K, decode */
    test_qkv_rope_cache(48, 32, 8, 128); /* Llama-3.1-8B, a decode batch */
    test_qkv_rope_cache(37, 16, 16, 64); /* MHA, a prefill chunk */
    test_qkv_rope_cache(5, 4, 1, 256);
    test_qkv_rope_cache_fp8(1, 8, 4, 8);
    test_qkv_rope_cache_fp8(48, 32, 8, 128);
    test_qkv_rope_cache_fp8(37, 16, 16, 64);
    printf("%d passed, %d failed, 0 skipped\n", g_passed, g_failed);
    return g_failed ? 1 : 0;
}
