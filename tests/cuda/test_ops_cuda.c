/* test_ops_cuda.c — GPU test (run by scripts/gpu-check.sh): every op of the CUDA ops table
 * against the CPU ops on fresh random data — embedding, RMSNorm (plain and fused with the
 * residual add), bias, RoPE, KV writes + paged attention (GQA, several sequences, causal prefill
 * and long contexts over shuffled block tables), SwiGLU, MoE routing, row gathers. Inputs are
 * rounded to BF16 for both sides; GPU outputs are poisoned first. Passes when every output is
 * finite and ||gpu - cpu|| / ||cpu|| <= 1e-2. Prints "N passed, N failed, N skipped". */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_test_util.h"
#include "ops_pair.h"
#include "core/ops.h"
#include "core/tensor.h"
#include "model/kv_cache.h"
#include "device_query.h"
#include "qs_cuda_ops.h"

static int g_passed, g_failed;
static uint64_t g_rng = 0x243F6A8885A308D3ull;

static float frand(void) { return qs_test_frand(&g_rng); }

/* Weight-format upload of host floats on both sides. */
static pair pair_weight(const float *host, int64_t n)
{
    qs_err err;
    qs_tensor t = {.name = "w", .dtype = QS_DT_F32, .ndim = 1, .shape = {n}, .numel = n, .data = host,
                   .nbytes = (size_t)n * 4, .file = "test"};
    pair p = {cpu->upload_tensor(&t, &err), gpu->upload_tensor(&t, &err), n};
    return p;
}

static void compare(const char *what, pair *p, int64_t n)
{
    qs_err err;
    float *a = malloc(sizeof(float) * n), *b = malloc(sizeof(float) * n);
    cpu->acts_to_host_f32(a, p->c, n, &err);
    int ok = gpu->acts_to_host_f32(b, p->g, n, &err) == 0;
    double num = 0, den = 0;
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++) {
        if (!isfinite(b[i]))
            bad++;
        num += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
        den += (double)a[i] * a[i];
    }
    double rel = den > 0 ? sqrt(num / den) : sqrt(num);
    int pass = ok && bad == 0 && rel <= 1e-2;
    printf("%-44s rel %.2e  %s%s\n", what, rel, pass ? "ok" : "FAIL", bad ? " (non-finite outputs)" : "");
    pass ? g_passed++ : g_failed++;
    free(a);
    free(b);
}

static void check_rc(const char *what, int rc_cpu, int rc_gpu, const qs_err *err)
{
    if (rc_cpu || rc_gpu) {
        printf("%-44s error: %s\n", what, err->msg);
        g_failed++;
    }
}

static void test_norms(int64_t rows, int64_t d)
{
    qs_err err = {{0}};
    char name[96];
    float *x = qs_test_rand_bf16(&g_rng, rows * d, 2.f), *r = qs_test_rand_bf16(&g_rng, rows * d, 1.f), *w = qs_test_rand_bf16(&g_rng, d, 1.f);
    pair px = pair_from(x, rows * d), pr = pair_from(r, rows * d), pw = pair_weight(w, d), po = pair_out(rows * d);
    check_rc("rmsnorm", cpu->rmsnorm(po.c, px.c, pw.c, rows, d, 1e-5f, &err),
             gpu->rmsnorm(po.g, px.g, pw.g, rows, d, 1e-5f, &err), &err);
    snprintf(name, sizeof name, "rmsnorm %lldx%lld", (long long)rows, (long long)d);
    compare(name, &po, rows * d);
    check_rc("add_rmsnorm", cpu->add_rmsnorm(pr.c, px.c, po.c, pw.c, rows, d, 1e-6f, QS_ACT_NATURAL, &err),
             gpu->add_rmsnorm(pr.g, px.g, po.g, pw.g, rows, d, 1e-6f, QS_ACT_NATURAL, &err), &err);
    snprintf(name, sizeof name, "add_rmsnorm out %lldx%lld", (long long)rows, (long long)d);
    compare(name, &po, rows * d);
    snprintf(name, sizeof name, "add_rmsnorm residual %lldx%lld", (long long)rows, (long long)d);
    compare(name, &pr, rows * d);
    /* out in the order marlin's stream kernel reads (core/act_order.h), where d fits it */
    for (int o = QS_ACT_MARLIN_FP8; o <= QS_ACT_MARLIN_FP4 && qs_act_order_fits((qs_act_order)o, d); o++) {
        check_rc("add_rmsnorm ordered", cpu->add_rmsnorm(pr.c, px.c, po.c, pw.c, rows, d, 1e-6f, (qs_act_order)o, &err),
                 gpu->add_rmsnorm(pr.g, px.g, po.g, pw.g, rows, d, 1e-6f, (qs_act_order)o, &err), &err);
        snprintf(name, sizeof name, "add_rmsnorm out %lldx%lld order %d", (long long)rows, (long long)d, o);
        compare(name, &po, rows * d);
        snprintf(name, sizeof name, "add_rmsnorm residual %lldx%lld order %d", (long long)rows, (long long)d, o);
        compare(name, &pr, rows * d);
    }
    check_rc("add_bias", cpu->add_bias(px.c, pw.c, rows, d, &err), gpu->add_bias(px.g, pw.g, rows, d, &err), &err);
    snprintf(name, sizeof name, "add_bias %lldx%lld", (long long)rows, (long long)d);
    compare(name, &px, rows * d);
    pair pu = pair_from(r, rows * d);
    check_rc("swiglu", cpu->swiglu(po.c, px.c, pu.c, rows, d, &err), gpu->swiglu(po.g, px.g, pu.g, rows, d, &err), &err);
    snprintf(name, sizeof name, "swiglu %lldx%lld", (long long)rows, (long long)d);
    compare(name, &po, rows * d);
    pair_free(&px), pair_free(&pr), pair_free(&pw), pair_free(&po), pair_free(&pu);
    free(x), free(r), free(w);
}

static void *ids_on(const qs_ops *ops, const int32_t *ids, int64_t n)
{
    qs_err err;
    void *p = ops->alloc(sizeof(int32_t) * (size_t)(n ? n : 1), &err);
    ops->copy_to_device(p, ids, sizeof(int32_t) * (size_t)n, &err);
    return p;
}

static void test_embedding_gather(int64_t vocab, int64_t d, int64_t n)
{
    qs_err err = {{0}};
    float *table = qs_test_rand_bf16(&g_rng, vocab * d, 1.f);
    qs_tensor t = {.name = "embed", .dtype = QS_DT_F32, .ndim = 2, .shape = {vocab, d}, .numel = vocab * d,
                   .data = table, .nbytes = (size_t)(vocab * d) * 4, .file = "test"};
    pair pt = {cpu->upload_tensor(&t, &err), gpu->upload_tensor(&t, &err), vocab * d};
    int32_t *ids = malloc(sizeof(int32_t) * n);
    for (int64_t i = 0; i < n; i++)
        ids[i] = (int32_t)((uint32_t)(frand() * 1e6f + 2e6f) % vocab);
    void *ic = ids_on(cpu, ids, n), *ig = ids_on(gpu, ids, n);
    pair po = pair_out(n * d);
    check_rc("embedding", cpu->embedding(po.c, pt.c, ic, n, d, &err), gpu->embedding(po.g, pt.g, ig, n, d, &err), &err);
    compare("embedding", &po, n * d);
    int64_t k = n / 2 + 1;
    pair pg = pair_out(k * d);
    /* gather rows 0..k-1 reversed */
    int32_t *rows = malloc(sizeof(int32_t) * k);
    for (int64_t i = 0; i < k; i++)
        rows[i] = (int32_t)(n - 1 - i);
    void *rc = ids_on(cpu, rows, k), *rg = ids_on(gpu, rows, k);
    check_rc("gather_rows", cpu->gather_rows(pg.c, po.c, rc, k, d, &err), gpu->gather_rows(pg.g, po.g, rg, k, d, &err),
             &err);
    compare("gather_rows", &pg, k * d);
    cpu->free(ic), gpu->free(ig), cpu->free(rc), gpu->free(rg);
    pair_free(&pt), pair_free(&po), pair_free(&pg);
    free(table), free(ids), free(rows);
}

static void test_rope(int64_t n_tokens, int n_heads, int head_dim)
{
    qs_err err = {{0}};
    float *x = qs_test_rand_bf16(&g_rng, n_tokens * n_heads * head_dim, 1.f);
    pair px = pair_from(x, n_tokens * n_heads * head_dim);
    int32_t *pos = malloc(sizeof(int32_t) * n_tokens);
    for (int64_t i = 0; i < n_tokens; i++)
        pos[i] = (int32_t)(i * 37 % 5000);
    float *inv = malloc(sizeof(float) * head_dim / 2);
    for (int i = 0; i < head_dim / 2; i++)
        inv[i] = powf(500000.f, -2.f * i / head_dim);
    void *fc = cpu->alloc(sizeof(float) * head_dim / 2, &err), *fg = gpu->alloc(sizeof(float) * head_dim / 2, &err);
    cpu->copy_to_device(fc, inv, sizeof(float) * head_dim / 2, &err);
    gpu->copy_to_device(fg, inv, sizeof(float) * head_dim / 2, &err);
    void *pc = ids_on(cpu, pos, n_tokens), *pg = ids_on(gpu, pos, n_tokens);
    check_rc("rope", cpu->rope(px.c, pc, fc, n_tokens, n_heads, head_dim, &err),
             gpu->rope(px.g, pg, fg, n_tokens, n_heads, head_dim, &err), &err);
    char name[96];
    snprintf(name, sizeof name, "rope %lld tok x %d heads x %d", (long long)n_tokens, n_heads, head_dim);
    compare(name, &px, n_tokens * n_heads * head_dim);
    cpu->free(fc), gpu->free(fg), cpu->free(pc), gpu->free(pg);
    pair_free(&px);
    free(x), free(pos), free(inv);
}

/* Every token of every sequence in one step (a full causal prefill): lengths as given. */
static void test_attention(const int *lens, int n_seqs, int n_heads, int n_kv, int head_dim, int window)
{
    qs_err err = {{0}};
    int64_t T = 0;
    int max_blocks = 0;
    for (int s = 0; s < n_seqs; s++) {
        T += lens[s];
        int nb = (lens[s] + QS_KV_BLOCK_SIZE - 1) / QS_KV_BLOCK_SIZE;
        max_blocks = nb > max_blocks ? nb : max_blocks;
    }
    int total_blocks = max_blocks * n_seqs + 3;
    int32_t *perm = malloc(sizeof(int32_t) * total_blocks);
    for (int i = 0; i < total_blocks; i++)
        perm[i] = i;
    for (int i = total_blocks - 1; i > 0; i--) {
        int j = (int)((uint32_t)(frand() * 1e6f + 2e6f) % (uint32_t)(i + 1));
        int32_t t = perm[i];
        perm[i] = perm[j], perm[j] = t;
    }
    int32_t *tables = calloc((size_t)n_seqs * max_blocks, sizeof(int32_t));
    int32_t *tok_seq = malloc(sizeof(int32_t) * T), *tok_pos = malloc(sizeof(int32_t) * T), *slots = malloc(sizeof(int32_t) * T);
    int used = 0;
    int64_t t = 0;
    for (int s = 0; s < n_seqs; s++) {
        int nb = (lens[s] + QS_KV_BLOCK_SIZE - 1) / QS_KV_BLOCK_SIZE;
        for (int b = 0; b < nb; b++)
            tables[s * max_blocks + b] = perm[used++];
        for (int p = 0; p < lens[s]; p++, t++) {
            tok_seq[t] = s;
            tok_pos[t] = p;
            slots[t] = tables[s * max_blocks + p / QS_KV_BLOCK_SIZE] * QS_KV_BLOCK_SIZE + p % QS_KV_BLOCK_SIZE;
        }
    }
    int64_t cache_elems = (int64_t)total_blocks * n_kv * QS_KV_BLOCK_SIZE * head_dim;
    void *kc[2] = {cpu->alloc(sizeof(float) * cache_elems, &err), gpu->alloc(gpu->act_size * cache_elems, &err)};
    void *vc[2] = {cpu->alloc(sizeof(float) * cache_elems, &err), gpu->alloc(gpu->act_size * cache_elems, &err)};
    float *q = qs_test_rand_bf16(&g_rng, T * n_heads * head_dim, 1.f), *k = qs_test_rand_bf16(&g_rng, T * n_kv * head_dim, 1.f),
          *v = qs_test_rand_bf16(&g_rng, T * n_kv * head_dim, 1.f);
    pair pq = pair_from(q, T * n_heads * head_dim), pk = pair_from(k, T * n_kv * head_dim),
         pv = pair_from(v, T * n_kv * head_dim), po = pair_out(T * n_heads * head_dim);
    const qs_ops *ops[2] = {cpu, gpu};
    int rc[2] = {0, 0};
    for (int i = 0; i < 2; i++) {
        void *d_seq = ids_on(ops[i], tok_seq, T), *d_pos = ids_on(ops[i], tok_pos, T), *d_slots = ids_on(ops[i], slots, T),
             *d_tab = ids_on(ops[i], tables, (int64_t)n_seqs * max_blocks);
        qs_attn_batch b = {T, n_seqs, max_blocks, d_seq, d_pos, d_tab, d_slots, window, QS_KV_ACT, 1.f, 1.f, 0};
        rc[i] = ops[i]->kv_write(kc[i], vc[i], i ? pk.g : pk.c, i ? pv.g : pv.c, &b, n_kv, head_dim, &err) ||
                ops[i]->attention(i ? po.g : po.c, i ? pq.g : pq.c, kc[i], vc[i], &b, n_heads, n_kv, head_dim,
                                  1.f / sqrtf((float)head_dim), QS_ACT_NATURAL, &err);
        ops[i]->free(d_seq), ops[i]->free(d_pos), ops[i]->free(d_slots), ops[i]->free(d_tab);
    }
    check_rc("attention", rc[0], rc[1], &err);
    /* Decode: only the last token of each sequence asks, over the cache written above (the
     * few-queries case that splits the positions across CTAs on the GPU). */
    {
        int32_t *dseq = malloc(sizeof(int32_t) * n_seqs), *dpos = malloc(sizeof(int32_t) * n_seqs);
        float *dq = malloc(sizeof(float) * n_seqs * n_heads * head_dim);
        int64_t row = 0;
        for (int s2 = 0; s2 < n_seqs; s2++) {
            row += lens[s2];
            dseq[s2] = s2;
            dpos[s2] = lens[s2] - 1;
            memcpy(dq + (int64_t)s2 * n_heads * head_dim, q + (row - 1) * n_heads * head_dim,
                   sizeof(float) * n_heads * head_dim);
        }
        pair dpq = pair_from(dq, (int64_t)n_seqs * n_heads * head_dim), dpo = pair_out((int64_t)n_seqs * n_heads * head_dim);
        int drc[2] = {0, 0};
        for (int i = 0; i < 2; i++) {
            void *d_seq = ids_on(ops[i], dseq, n_seqs), *d_pos = ids_on(ops[i], dpos, n_seqs),
                 *d_tab = ids_on(ops[i], tables, (int64_t)n_seqs * max_blocks);
            qs_attn_batch b = {n_seqs, n_seqs, max_blocks, d_seq, d_pos, d_tab, NULL, window, QS_KV_ACT, 1.f, 1.f, 0};
            drc[i] = ops[i]->attention(i ? dpo.g : dpo.c, i ? dpq.g : dpq.c, kc[i], vc[i], &b, n_heads, n_kv, head_dim,
                                       1.f / sqrtf((float)head_dim), QS_ACT_NATURAL, &err);
            ops[i]->free(d_seq), ops[i]->free(d_pos), ops[i]->free(d_tab);
        }
        check_rc("attention decode", drc[0], drc[1], &err);
        char dname[96];
        snprintf(dname, sizeof dname, "attention decode %d seqs (max %d) w%d", n_seqs, lens[n_seqs - 1], window);
        compare(dname, &dpo, (int64_t)n_seqs * n_heads * head_dim);
        pair_free(&dpq), pair_free(&dpo);
        free(dseq), free(dpos), free(dq);
    }
    char name[96];
    snprintf(name, sizeof name, "attention %d seqs (max %d) h%d/kv%d d%d w%d", n_seqs, lens[n_seqs - 1], n_heads, n_kv,
             head_dim, window);
    compare(name, &po, T * n_heads * head_dim);
    for (int i = 0; i < 2; i++)
        ops[i]->free(kc[i]), ops[i]->free(vc[i]);
    pair_free(&pq), pair_free(&pk), pair_free(&pv), pair_free(&po);
    free(perm), free(tables), free(tok_seq), free(tok_pos), free(slots), free(q), free(k), free(v);
}

static void test_moe_route(int64_t n_tokens, int n_experts, int top_k, bool norm)
{
    qs_err err = {{0}};
    float *logits = qs_test_rand_bf16(&g_rng, n_tokens * n_experts, 3.f);
    pair pl = pair_from(logits, n_tokens * n_experts);
    int64_t n = n_tokens * top_k;
    int32_t *ic = cpu->alloc(sizeof(int32_t) * n, &err), *ig = gpu->alloc(sizeof(int32_t) * n, &err);
    float *wc = cpu->alloc(sizeof(float) * n, &err), *wg = gpu->alloc(sizeof(float) * n, &err);
    check_rc("moe_route", cpu->moe_route(pl.c, ic, wc, n_tokens, n_experts, top_k, norm, &err),
             gpu->moe_route(pl.g, ig, wg, n_tokens, n_experts, top_k, norm, &err), &err);
    int32_t *hi = malloc(sizeof(int32_t) * n);
    float *hw = malloc(sizeof(float) * n), *cw = malloc(sizeof(float) * n);
    int32_t *ci = malloc(sizeof(int32_t) * n);
    gpu->copy_to_host(hi, ig, sizeof(int32_t) * n, &err);
    gpu->copy_to_host(hw, wg, sizeof(float) * n, &err);
    cpu->copy_to_host(ci, ic, sizeof(int32_t) * n, &err);
    cpu->copy_to_host(cw, wc, sizeof(float) * n, &err);
    int64_t id_mismatch = 0;
    double werr = 0;
    for (int64_t i = 0; i < n; i++) {
        id_mismatch += hi[i] != ci[i];
        werr = fmax(werr, fabs((double)hw[i] - cw[i]));
    }
    int pass = id_mismatch == 0 && werr < 1e-4;
    printf("%-44s %lld id mismatches, max weight diff %.1e  %s\n", "moe_route", (long long)id_mismatch, werr,
           pass ? "ok" : "FAIL");
    pass ? g_passed++ : g_failed++;
    cpu->free(ic), gpu->free(ig), cpu->free(wc), gpu->free(wg);
    pair_free(&pl);
    free(logits), free(hi), free(hw), free(cw), free(ci);
}

int main(int argc, char **argv)
{
    if (!ops_pair_setup(argc, argv))
        return 0;
    test_norms(1, 64);
    test_norms(7, 4096);
    test_norms(33, 5120);
    test_norms(64, 128);  /* the per-head q/k norm's rows */
    test_norms(3, 8192);  /* four pairs a thread */
    test_norms(2, 130);   /* a partial second pair */
    test_norms(2, 129);   /* odd: the element-per-thread kernel */
    test_embedding_gather(512, 64, 9);
    test_embedding_gather(32000, 4096, 33);
    test_rope(5, 8, 8);
    test_rope(37, 32, 128);
    int lens1[] = {1, 5, 17};
    test_attention(lens1, 3, 8, 4, 8, 0);
    int lens2[] = {3, 40, 300};
    test_attention(lens2, 3, 32, 8, 128, 0);
    test_attention(lens2, 3, 32, 8, 128, 64);
    int lens3[] = {1200};
    test_attention(lens3, 1, 16, 2, 64, 0);
    int lens4[] = {2, 130};
    test_attention(lens4, 2, 4, 4, 256, 0);
    test_moe_route(17, 8, 2, true);
    test_moe_route(33, 128, 8, true);
    test_moe_route(5, 64, 4, false);
    test_moe_route(40, 512, 16, true); /* sixteen experts a lane */
    test_moe_route(300, 160, 8, false); /* a partial last lane row, several blocks */
    printf("%d passed, %d failed, 0 skipped\n", g_passed, g_failed);
    return g_failed ? 1 : 0;
}
