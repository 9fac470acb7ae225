/* test_attention_cuda.c — GPU test of attention over the paged KV cache, above all the
 * tensor-core prefill kernel (cuda/attention_prefill.cu) and its dispatch in qs_cuda_attention.
 * Each case is one step of a batch: sequences with `ctx` positions already in the cache (written
 * by an earlier kv_write) and `n` new tokens (decode when n = 1, chunked prefill when ctx > 0),
 * over shuffled block tables, on fresh random BF16-rounded q / k / v, against the CPU op. Four
 * checks a case: the op as dispatched, the op with QSERVE_ATTN_PREFILL=0 (CUDA cores only: the
 * GQA-grouped decode kernel), the same with QSERVE_ATTN_GROUPED=0 (one CTA per query head), and
 * the prefill kernel alone (its rows against the CPU, every other row still the NaN poison). The
 * two switches are lab switches that only a dev build reads (cuda/lab_knob.h): the product build
 * of this test runs the first and last check, and the dev build (`make dev`) all four and the
 * timing tables that compare the kernels.
 * Passes when every output is finite and ||gpu - cpu|| / ||cpu|| <= 2e-2. The mixed batches and
 * the decode-only ones run again with the output rows in each marlin activation order (what o_proj
 * reads; core/act_order.h), against the CPU op in the same order. Then a timing table
 * (CUDA events), a figure rather than a check. Every case runs once more over an FP8 E4M3 cache
 * (--kv-cache-dtype fp8, per-layer scales): kv_write's codes must equal the CPU reference's byte
 * for byte, and attention over them (CUDA cores: the tensor-core kernel reads bf16 only) must
 * match the CPU op over the same FP8 cache. Prints "N passed, N failed, N skipped".
 * --self-check runs the host side with the CPU ops on both sides (no GPU needed). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/backend_cpu.h"
#include "attention_prefill.h"
#include "cuda_test_util.h"
#include "core/ops.h"
#include "core/tensor.h"
#include "model/kv_cache.h"
#include "device_query.h"
#include "qs_cuda_mem.h"
#include "qs_cuda_ops.h"

static const qs_ops *cpu, *gpu;
static int g_passed, g_failed, g_skipped, g_self_check;
static qs_act_order g_order; /* of the output rows, for every op call of a case */
static int g_chunk;          /* Llama 4's attention_chunk for every op call of a case (0: none) */
static uint64_t g_rng = 0x13198A2E03707344ull;
static qs_kv_dtype g_kv = QS_KV_ACT;    /* the cache's element type for every case */
static float g_k_scale = 1, g_v_scale = 1; /* its FP8 scales */

static size_t kv_elem(const qs_ops *ops) { return g_kv == QS_KV_FP8_E4M3 ? 1 : ops->act_size; }

#define MAX_SEQS 56
/* whether the library reads the QSERVE_ATTN_* lab switches (a dev build's -DQS_DEV_KNOBS) */
#ifdef QS_DEV_KNOBS
#define LAB_SWITCHES 1
#else
#define LAB_SWITCHES 0
#endif
#define TOL 2e-2

typedef struct {
    int ctx, n; /* positions already cached, new tokens this step */
} seq_spec;

typedef struct {
    int n_heads, n_kv, head_dim, window, n_seqs;
    seq_spec seqs[MAX_SEQS];
} attn_case;

/* One step's host data: the history (positions < ctx) and the new tokens. */
typedef struct {
    int n_seqs, max_blocks, total_blocks;
    int64_t n_hist, n_tok;
    int32_t *tables, *hist_seq, *hist_pos, *hist_slot, *tok_seq, *tok_pos, *tok_slot;
    float *hist_k, *hist_v, *q, *k, *v;
} step;

/* What one device holds for a step. */
typedef struct {
    const qs_ops *ops;
    void *kc, *vc, *q, *out, *d_tables, *d_tok_seq, *d_tok_pos, *d_tok_slot;
    qs_attn_batch b;
} dev_step;

static float frand(void) { return qs_test_frand(&g_rng); }

static void *ids_on(const qs_ops *ops, const int32_t *ids, int64_t n)
{
    qs_err err;
    void *p = ops->alloc(sizeof(int32_t) * (size_t)(n ? n : 1), &err);
    if (n)
        ops->copy_to_device(p, ids, sizeof(int32_t) * (size_t)n, &err);
    return p;
}

static void *acts_on(const qs_ops *ops, const float *host, int64_t n)
{
    qs_err err;
    void *p = ops->alloc(ops->act_size * (size_t)(n ? n : 1), &err);
    if (n)
        ops->acts_from_host_f32(p, host, n, &err);
    return p;
}

static void poison(const qs_ops *ops, void *p, int64_t n)
{
    qs_err err;
    float *nan = malloc(sizeof(float) * (size_t)n);
    for (int64_t i = 0; i < n; i++)
        nan[i] = NAN;
    ops->acts_from_host_f32(p, nan, n, &err);
    free(nan);
}

static step step_build(const attn_case *c, float q_scale)
{
    step s = {.n_seqs = c->n_seqs};
    for (int i = 0; i < c->n_seqs; i++) {
        int nb = (c->seqs[i].ctx + c->seqs[i].n + QS_KV_BLOCK_SIZE - 1) / QS_KV_BLOCK_SIZE;
        s.max_blocks = nb > s.max_blocks ? nb : s.max_blocks;
        s.total_blocks += nb;
        s.n_hist += c->seqs[i].ctx;
        s.n_tok += c->seqs[i].n;
    }
    s.total_blocks += 5; /* spare blocks nobody owns */
    int32_t *perm = malloc(sizeof(int32_t) * (size_t)s.total_blocks);
    for (int i = 0; i < s.total_blocks; i++)
        perm[i] = i;
    for (int i = s.total_blocks - 1; i > 0; i--) {
        int j = (int)((uint32_t)(frand() * 1e6f + 2e6f) % (uint32_t)(i + 1));
        int32_t t = perm[i];
        perm[i] = perm[j], perm[j] = t;
    }
    s.tables = calloc((size_t)s.n_seqs * (size_t)s.max_blocks, sizeof(int32_t));
    size_t hb = sizeof(int32_t) * (size_t)(s.n_hist ? s.n_hist : 1), tb = sizeof(int32_t) * (size_t)s.n_tok;
    s.hist_seq = malloc(hb), s.hist_pos = malloc(hb), s.hist_slot = malloc(hb);
    s.tok_seq = malloc(tb), s.tok_pos = malloc(tb), s.tok_slot = malloc(tb);
    int used = 0;
    int64_t h = 0, t = 0;
    for (int i = 0; i < c->n_seqs; i++) {
        int32_t *table = s.tables + (int64_t)i * s.max_blocks;
        int nb = (c->seqs[i].ctx + c->seqs[i].n + QS_KV_BLOCK_SIZE - 1) / QS_KV_BLOCK_SIZE;
        for (int b = 0; b < nb; b++)
            table[b] = perm[used++];
        for (int p = 0; p < c->seqs[i].ctx + c->seqs[i].n; p++) {
            int32_t slot = table[p / QS_KV_BLOCK_SIZE] * QS_KV_BLOCK_SIZE + p % QS_KV_BLOCK_SIZE;
            if (p < c->seqs[i].ctx)
                s.hist_seq[h] = i, s.hist_pos[h] = p, s.hist_slot[h++] = slot;
            else
                s.tok_seq[t] = i, s.tok_pos[t] = p, s.tok_slot[t++] = slot;
        }
    }
    int64_t kvw = (int64_t)c->n_kv * c->head_dim;
    s.hist_k = qs_test_rand_bf16(&g_rng, s.n_hist * kvw, 1.f), s.hist_v = qs_test_rand_bf16(&g_rng, s.n_hist * kvw, 1.f);
    /* q scaled up so that the softmax is peaked rather than flat: errors in P then matter. */
    s.q = qs_test_rand_bf16(&g_rng, s.n_tok * c->n_heads * c->head_dim, q_scale);
    s.k = qs_test_rand_bf16(&g_rng, s.n_tok * kvw, 1.f), s.v = qs_test_rand_bf16(&g_rng, s.n_tok * kvw, 1.f);
    free(perm);
    return s;
}

static void step_free(step *s)
{
    free(s->tables), free(s->hist_seq), free(s->hist_pos), free(s->hist_slot);
    free(s->tok_seq), free(s->tok_pos), free(s->tok_slot);
    free(s->hist_k), free(s->hist_v), free(s->q), free(s->k), free(s->v);
}

/* Uploads the step, writes the history and the new tokens' K/V into a fresh cache. */
static int dev_setup(dev_step *d, const qs_ops *ops, const attn_case *c, const step *s, qs_err *err)
{
    memset(d, 0, sizeof *d);
    d->ops = ops;
    int64_t cache = (int64_t)s->total_blocks * c->n_kv * QS_KV_BLOCK_SIZE * c->head_dim;
    d->kc = ops->alloc(kv_elem(ops) * (size_t)cache, err);
    d->vc = ops->alloc(kv_elem(ops) * (size_t)cache, err);
    d->d_tables = ids_on(ops, s->tables, (int64_t)s->n_seqs * s->max_blocks);
    int64_t kvw = (int64_t)c->n_kv * c->head_dim;
    if (s->n_hist) {
        void *hs = ids_on(ops, s->hist_seq, s->n_hist), *hp = ids_on(ops, s->hist_pos, s->n_hist),
             *hl = ids_on(ops, s->hist_slot, s->n_hist), *hk = acts_on(ops, s->hist_k, s->n_hist * kvw),
             *hv = acts_on(ops, s->hist_v, s->n_hist * kvw);
        qs_attn_batch hb = {.n_tokens = s->n_hist, .n_seqs = s->n_seqs, .max_blocks = s->max_blocks, .tok_seq = hs,
                            .tok_pos = hp, .block_tables = d->d_tables, .slot_mapping = hl,
                            .sliding_window = c->window, .kv_dtype = g_kv, .k_scale = g_k_scale,
                            .v_scale = g_v_scale};
        int rc = ops->kv_write(d->kc, d->vc, hk, hv, &hb, c->n_kv, c->head_dim, err);
        ops->free(hs), ops->free(hp), ops->free(hl), ops->free(hk), ops->free(hv);
        if (rc)
            return -1;
    }
    d->d_tok_seq = ids_on(ops, s->tok_seq, s->n_tok);
    d->d_tok_pos = ids_on(ops, s->tok_pos, s->n_tok);
    d->d_tok_slot = ids_on(ops, s->tok_slot, s->n_tok);
    d->b = (qs_attn_batch){.n_tokens = s->n_tok, .n_seqs = s->n_seqs, .max_blocks = s->max_blocks,
                           .tok_seq = d->d_tok_seq, .tok_pos = d->d_tok_pos, .block_tables = d->d_tables,
                           .slot_mapping = d->d_tok_slot, .sliding_window = c->window, .kv_dtype = g_kv,
                           .k_scale = g_k_scale, .v_scale = g_v_scale, .attention_chunk = g_chunk};
    void *k = acts_on(ops, s->k, s->n_tok * kvw), *v = acts_on(ops, s->v, s->n_tok * kvw);
    int rc = ops->kv_write(d->kc, d->vc, k, v, &d->b, c->n_kv, c->head_dim, err);
    ops->free(k), ops->free(v);
    d->q = acts_on(ops, s->q, s->n_tok * c->n_heads * c->head_dim);
    d->out = ops->alloc(ops->act_size * (size_t)(s->n_tok * c->n_heads * c->head_dim), err);
    return rc;
}

static void dev_free(dev_step *d)
{
    const qs_ops *ops = d->ops;
    ops->free(d->kc), ops->free(d->vc), ops->free(d->q), ops->free(d->out), ops->free(d->d_tables);
    ops->free(d->d_tok_seq), ops->free(d->d_tok_pos), ops->free(d->d_tok_slot);
}

static int dev_attention(dev_step *d, const attn_case *c, qs_err *err)
{
    return d->ops->attention(d->out, d->q, d->kc, d->vc, &d->b, c->n_heads, c->n_kv, c->head_dim,
                             1.f / sqrtf((float)c->head_dim), g_order, err);
}

/* 1 for the tokens in a run of >= QS_ATTN_PREFILL_MIN_RUN batch tokens of one sequence. */
static int *long_run_tokens(const step *s)
{
    int *flag = calloc((size_t)s->n_tok, sizeof(int));
    for (int64_t a = 0; a < s->n_tok;) {
        int64_t e = a;
        while (e < s->n_tok && s->tok_seq[e] == s->tok_seq[a])
            e++;
        for (int64_t t = a; t < e; t++)
            flag[t] = e - a >= QS_ATTN_PREFILL_MIN_RUN;
        a = e;
    }
    return flag;
}

static void case_name(char *buf, size_t n, const attn_case *c)
{
    static const char *const orders[] = {"", "fp8-order ", "fp4-order "};
    int off = snprintf(buf, n, "%s%sd%d h%d/kv%d %s%d [", g_kv == QS_KV_FP8_E4M3 ? "kv-fp8 " : "", orders[g_order],
                       c->head_dim, c->n_heads, c->n_kv, g_chunk ? "chunk" : "w", g_chunk ? g_chunk : c->window);
    for (int i = 0; i < c->n_seqs && off < (int)n; i++)
        off += snprintf(buf + off, n - (size_t)off, "%s%d+%d", i ? " " : "", c->seqs[i].ctx, c->seqs[i].n);
    if (off < (int)n)
        snprintf(buf + off, n - (size_t)off, "]");
}

/* Relative error of got against ref over the rows (tokens) where use[t] is set (all when NULL);
 * rows where use[t] is 0 must be NaN in got when want_nan. */
static void report(const char *what, const char *name, const float *ref, const float *got, int64_t n_tok,
                   int64_t row, const int *use, int want_nan)
{
    double num = 0, den = 0;
    int64_t bad = 0, touched = 0;
    for (int64_t t = 0; t < n_tok; t++) {
        for (int64_t i = t * row; i < (t + 1) * row; i++) {
            if (use && !use[t]) {
                touched += want_nan && !isnan(got[i]);
                continue;
            }
            if (!isfinite(got[i]))
                bad++;
            num += ((double)ref[i] - got[i]) * ((double)ref[i] - got[i]);
            den += (double)ref[i] * ref[i];
        }
    }
    double rel = den > 0 ? sqrt(num / den) : sqrt(num);
    int pass = bad == 0 && touched == 0 && rel <= TOL;
    printf("%-10s %-58s rel %.2e  %s", what, name, rel, pass ? "ok" : "FAIL");
    if (bad)
        printf(" (%lld non-finite)", (long long)bad);
    if (touched)
        printf(" (%lld values written outside its rows)", (long long)touched);
    printf("\n");
    pass ? g_passed++ : g_failed++;
}

static void run_case(const attn_case *c)
{
    qs_err err = {{0}};
    char name[160];
    case_name(name, sizeof name, c);
    step s = step_build(c, 3.f);
    int64_t row = (int64_t)c->n_heads * c->head_dim, n_out = s.n_tok * row;
    float *ref = malloc(sizeof(float) * (size_t)n_out), *got = malloc(sizeof(float) * (size_t)n_out);
    dev_step dc, dg;
    if (dev_setup(&dc, cpu, c, &s, &err) || dev_attention(&dc, c, &err) ||
        cpu->acts_to_host_f32(ref, dc.out, n_out, &err)) {
        printf("%-10s %-58s error (cpu): %s\n", "setup", name, err.msg);
        g_failed++;
        goto done_cpu;
    }
    if (dev_setup(&dg, gpu, c, &s, &err)) {
        printf("%-10s %-58s error: %s\n", "setup", name, err.msg);
        g_failed++;
        goto done;
    }
    if (g_kv == QS_KV_FP8_E4M3) { /* the quantizing write: the same codes as the CPU's */
        int64_t bytes = (int64_t)s.total_blocks * c->n_kv * QS_KV_BLOCK_SIZE * c->head_dim;
        unsigned char *gk = malloc((size_t)bytes), *gv = malloc((size_t)bytes);
        int rc = gpu->copy_to_host(gk, dg.kc, (size_t)bytes, &err) || gpu->copy_to_host(gv, dg.vc, (size_t)bytes, &err);
        int64_t diff = 0;
        for (int64_t i = 0; !rc && i < bytes; i++)
            diff += gk[i] != ((unsigned char *)dc.kc)[i] || gv[i] != ((unsigned char *)dc.vc)[i];
        printf("%-10s %-58s %lld of %lld codes differ  %s\n", "fp8-write", name, (long long)diff, (long long)bytes,
               !rc && diff == 0 ? "ok" : "FAIL");
        !rc && diff == 0 ? g_passed++ : g_failed++;
        free(gk), free(gv);
    }
    /* 1. as dispatched (tensor cores for the long runs); 2. CUDA cores only (the grouped kernel
     * where the head grouping has one); 3. CUDA cores, one CTA per query head. */
    for (int pass = 0; pass < (LAB_SWITCHES ? 3 : 1); pass++) {
        static const char *const whats[] = {"dispatch", "cuda-core", "per-head"};
        const char *what = whats[pass];
        if (pass)
            setenv("QSERVE_ATTN_PREFILL", "0", 1);
        if (pass == 2)
            setenv("QSERVE_ATTN_GROUPED", "0", 1);
        poison(gpu, dg.out, n_out);
        int rc = dev_attention(&dg, c, &err) || gpu->acts_to_host_f32(got, dg.out, n_out, &err);
        unsetenv("QSERVE_ATTN_PREFILL");
        unsetenv("QSERVE_ATTN_GROUPED");
        if (rc) {
            printf("%-10s %-58s error: %s\n", what, name, err.msg);
            g_failed++;
            continue;
        }
        report(what, name, ref, got, s.n_tok, row, NULL, 0);
    }
    /* 3. the tensor-core kernel on its own: exactly the long-run rows. */
    int *flag = long_run_tokens(&s);
    int any = 0;
    for (int64_t t = 0; t < s.n_tok; t++)
        any |= flag[t];
    if (any && (c->head_dim == 64 || c->head_dim == 128) && g_kv != QS_KV_FP8_E4M3) {
        if (g_self_check) {
            g_skipped++;
        } else {
            qs_attn_prefill_plan plan;
            poison(gpu, dg.out, n_out);
            int rc = qs_cuda_attn_prefill_plan(&dg.b, &plan, &err) ||
                     qs_cuda_attn_prefill_run(dg.out, dg.q, dg.kc, dg.vc, &dg.b, &plan, c->n_heads, c->n_kv,
                                              c->head_dim, 1.f / sqrtf((float)c->head_dim), g_order, &err) ||
                     gpu->acts_to_host_f32(got, dg.out, n_out, &err);
            if (rc) {
                printf("%-10s %-58s error: %s\n", "tc-only", name, err.msg);
                g_failed++;
            } else {
                report("tc-only", name, ref, got, s.n_tok, row, flag, 1);
            }
        }
    }
    free(flag);
    dev_free(&dg);
done:
    dev_free(&dc);
done_cpu:
    free(ref), free(got);
    step_free(&s);
}

/* Mean time of `iters` calls of the op, after warm-up, with CUDA events. */
static double time_us(dev_step *d, const attn_case *c, int iters, qs_err *err)
{
    for (int i = 0; i < 3; i++)
        if (dev_attention(d, c, err))
            return -1;
    qs_cuda_timer *tm = qs_cuda_timer_new();
    qs_cuda_timer_start(tm);
    for (int i = 0; i < iters; i++)
        if (dev_attention(d, c, err)) {
            qs_cuda_timer_free(tm);
            return -1;
        }
    double ms = qs_cuda_timer_stop_ms(tm);
    qs_cuda_timer_free(tm);
    return qs_cuda_synchronize(err) ? -1 : ms * 1e3 / iters;
}

/* The step of c on the GPU for a timing row, or false after printing the row's error. */
static bool timing_setup(const char *label, const attn_case *c, step *s, dev_step *d)
{
    qs_err err = {{0}};
    *s = step_build(c, 1.f);
    if (dev_setup(d, gpu, c, s, &err)) {
        printf("%-44s error: %s\n", label, err.msg);
        step_free(s);
        return false;
    }
    return true;
}

/* Microseconds a call with the switch `var` set to 0 (then unset again); -1 on error. */
static double time_switched_off(dev_step *d, const attn_case *c, int iters, const char *var, qs_err *err)
{
    setenv(var, "0", 1);
    double us = time_us(d, c, iters, err);
    unsetenv(var);
    return us;
}

static void timing_row(const char *label, const attn_case *c)
{
    qs_err err = {{0}};
    step s;
    dev_step d;
    if (!timing_setup(label, c, &s, &d))
        return;
    /* Multiply-adds of QK^T and PV over the keys each query sees: 2 matmuls x 2 FLOP. */
    double flop = 0;
    for (int64_t t = 0; t < s.n_tok; t++) {
        int p = s.tok_pos[t], first = c->window > 0 && p + 1 > c->window ? p + 1 - c->window : 0;
        flop += 4.0 * c->head_dim * c->n_heads * (p + 1 - first);
    }
    double tc = time_us(&d, c, 20, &err);
    double cc = tc < 0 ? -1 : time_switched_off(&d, c, 5, "QSERVE_ATTN_PREFILL", &err);
    if (tc < 0 || cc < 0)
        printf("%-44s error: %s\n", label, err.msg);
    else
        printf("%-44s %10.1f %8.1f %10.1f %8.1f %7.1fx\n", label, tc, flop / tc * 1e-6, cc, flop / cc * 1e-6, cc / tc);
    dev_free(&d);
    step_free(&s);
}

/* Decode of c's sequences (one new token each) on the CUDA cores: the grouped kernel against one
 * CTA per query head, mean of 50 calls each. */
static void decode_timing_row(const char *label, const attn_case *c)
{
    qs_err err = {{0}};
    step s;
    dev_step d;
    if (!timing_setup(label, c, &s, &d))
        return;
    double grouped = time_us(&d, c, 50, &err);
    double per_head = grouped < 0 ? -1 : time_switched_off(&d, c, 50, "QSERVE_ATTN_GROUPED", &err);
    if (grouped < 0 || per_head < 0)
        printf("%-44s error: %s\n", label, err.msg);
    else
        printf("%-44s %10.1f %10.1f %7.2fx\n", label, grouped, per_head, per_head / grouped);
    dev_free(&d);
    step_free(&s);
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--self-check")) {
        cpu = gpu = qs_ops_cpu();
        g_self_check = 1;
    } else {
        if (qs_cuda_device_count() == 0) {
            printf("skip: no CUDA device (%s)\n0 passed, 0 failed, 1 skipped\n", qs_cuda_unavailable_reason());
            return 0;
        }
        cpu = qs_ops_cpu();
        gpu = qs_ops_cuda();
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    static const attn_case cases[] = {
        /* one sequence, fresh prefill at the lengths around the 16-token threshold and beyond */
        {4, 4, 64, 0, 1, {{0, 1}}},
        {8, 2, 128, 0, 1, {{0, 15}}},
        {8, 2, 128, 0, 1, {{0, 16}}},
        {8, 2, 128, 0, 1, {{0, 17}}},
        {8, 1, 64, 0, 1, {{0, 100}}},
        {16, 2, 128, 0, 1, {{0, 257}}},
        {8, 2, 128, 0, 1, {{0, 1000}}},
        {4, 4, 64, 128, 1, {{0, 1000}}},
        {8, 1, 128, 256, 1, {{0, 1000}}},
        /* chunked prefill of one sequence: the chunk starts mid-block, the cache holds the rest */
        {4, 4, 128, 0, 1, {{1000, 257}}},
        {16, 2, 64, 0, 1, {{13, 40}}},
        {8, 2, 128, 100, 1, {{300, 64}}},
        /* mixed batches: decode tokens, short chunks (CUDA cores) and long chunks (tensor cores) */
        {8, 2, 128, 0, 8, {{300, 1}, {37, 100}, {5, 1}, {0, 17}, {500, 257}, {1000, 1}, {20, 15}, {0, 16}}},
        {8, 2, 128, 200, 8, {{300, 1}, {37, 100}, {5, 1}, {0, 17}, {500, 257}, {1000, 1}, {20, 15}, {0, 16}}},
        {16, 2, 64, 0, 5, {{13, 40}, {64, 64}, {0, 1}, {999, 16}, {3, 1}}},
        {4, 4, 64, 48, 3, {{100, 70}, {1, 1}, {250, 33}}},
        {32, 4, 128, 0, 6, {{0, 16}, {16, 16}, {7, 16}, {0, 63}, {1, 1}, {100, 65}}},
        /* decode only, and head dims the tensor-core kernel does not take (CUDA cores) */
        {8, 1, 128, 0, 3, {{100, 1}, {200, 1}, {5, 1}}},
        {4, 2, 32, 0, 2, {{10, 40}, {0, 1}}},
        {4, 1, 256, 0, 2, {{0, 40}, {60, 1}}},
    };
    const size_t n_cases = sizeof cases / sizeof cases[0];
    for (size_t i = 0; i < n_cases; i++)
        run_case(&cases[i]);
    /* the mixed batches and the decode-only ones (split-KV merge) in both activation orders */
    for (g_order = QS_ACT_MARLIN_FP8; g_order <= QS_ACT_MARLIN_FP4; g_order++)
        for (size_t i = 12; i < n_cases; i++)
            run_case(&cases[i]);
    g_order = QS_ACT_NATURAL;
    /* every case again over an FP8 cache (scales such that |k|, |v| <= 1 use E4M3's range) */
    g_kv = QS_KV_FP8_E4M3;
    g_k_scale = 1.0f / 256, g_v_scale = 1.0f / 300;
    for (size_t i = 0; i < n_cases; i++)
        run_case(&cases[i]);
    g_kv = QS_KV_ACT;
    g_k_scale = g_v_scale = 1;
    /* Llama 4's chunked attention (the window-free cases): chunks shorter than, about as long as
     * and longer than the runs, so prefill tiles and decode splits start mid-context */
    static const int chunks[] = {16, 48, 256};
    for (size_t k = 0; k < sizeof chunks / sizeof chunks[0]; k++)
        for (size_t i = 0; i < n_cases; i++)
            if (cases[i].window == 0) {
                g_chunk = chunks[k];
                run_case(&cases[i]);
            }
    g_chunk = 0;
    if (!g_self_check && LAB_SWITCHES) {
        printf("\ntiming (mean of 20 / 5 calls, CUDA events)     tc us  TFLOP/s    cores us  TFLOP/s  speedup\n");
        static const attn_case t1 = {32, 8, 128, 0, 1, {{0, 2048}}};
        timing_row("prefill 1x2048 h32/kv8 d128", &t1);
        /* four 512-token chunks beside eight decode tokens at 2048 context: the CUDA-core kernel
         * also runs (over the decode tokens, and one key for every chunk token) */
        static const attn_case t2 = {32, 8, 128, 0, 12,
                                     {{0, 512}, {2048, 1}, {512, 512}, {2048, 1}, {1024, 512}, {2048, 1}, {1536, 512},
                                      {2048, 1}, {2048, 1}, {2048, 1}, {2048, 1}, {2048, 1}}};
        timing_row("mixed 4x512 chunks + 8 decode h32/kv8 d128", &t2);
        printf("\ndecode timing (mean of 50 calls)       grouped us  per-head us  speedup\n");
        /* Llama-3.1-8B's heads at batch 48 and 56: the per-head grid stops fitting one wave at 56 */
        static attn_case dec = {32, 8, 128, 0, 1, {{0}}};
        for (int i = 0; i < MAX_SEQS; i++)
            dec.seqs[i] = (seq_spec){35 + i % 32, 1};
        /* batch 1 and 16 at short contexts: the splits' merge is most of the work there */
        decode_timing_row("decode 1 seq ctx 35 h32/kv8 d128", &dec);
        dec.n_seqs = 16;
        decode_timing_row("decode 16 seqs ctx 35-50 h32/kv8 d128", &dec);
        dec.n_seqs = 48;
        decode_timing_row("decode 48 seqs ctx 35-66 h32/kv8 d128", &dec);
        dec.n_seqs = 56;
        decode_timing_row("decode 56 seqs ctx 35-66 h32/kv8 d128", &dec);
        static const attn_case d1 = {32, 8, 128, 0, 1, {{2000, 1}}};
        decode_timing_row("decode 1 seq ctx 2000 h32/kv8 d128", &d1);
    } else {
        g_skipped++;
    }
    printf("%d passed, %d failed, %d skipped\n", g_passed, g_failed, g_skipped);
    return g_failed ? 1 : 0;
}
