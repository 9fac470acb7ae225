/* test_llama4_cuda.c — GPU test (run by scripts/gpu-check.sh): Llama 4's ops of the CUDA ops table
 * (cuda/llama4_cuda.cu) against the CPU ops on fresh random BF16-rounded data, GPU outputs
 * poisoned first: interleaved-pair RoPE at positions up to 100k (Scout's llama3-scaled
 * frequencies), the NoPE attention temperature across floor_scale boundaries, top-1 routing whose
 * sigmoid scales the expert input (ids must match exactly, the scaled rows within 1e-2), and the
 * shared expert's add. The chunked attention mask is covered by test_attention_cuda's chunk cases.
 * Then the whole tiny Scout and Maverick (init-model, BF16) on the GPU against the CPU: the logits
 * of a 44-token prefill (three chunks of 16) and of decode steps after it, within 3e-2.
 * Prints "N passed, N failed, N skipped". */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_test_util.h"
#include "ops_pair.h"
#include "cli/init_model.h"
#include "config/config.h"
#include "core/ops.h"
#include "model/kv_cache.h"
#include "model/model.h"
#include <unistd.h>

static int g_passed, g_failed;
static uint64_t g_rng = 0x243F6A8885A308D3ull;

static float *to_host(const qs_ops *ops, const void *buf, int64_t n)
{
    qs_err err;
    float *h = malloc(sizeof(float) * n);
    ops->acts_to_host_f32(h, buf, n, &err);
    return h;
}

/* relative L2 error within 1e-2 and every GPU value finite */
static void compare(const char *what, const pair *p)
{
    float *a = to_host(cpu, p->c, p->n), *b = to_host(gpu, p->g, p->n);
    double num = 0, den = 0;
    int64_t bad = 0;
    for (int64_t i = 0; i < p->n; i++) {
        bad += !isfinite(b[i]);
        num += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
        den += (double)a[i] * a[i];
    }
    double rel = den > 0 ? sqrt(num / den) : sqrt(num);
    int pass = bad == 0 && rel <= 1e-2;
    printf("%-52s rel %.2e  %s%s\n", what, rel, pass ? "ok" : "FAIL", bad ? " (non-finite outputs)" : "");
    pass ? g_passed++ : g_failed++;
    free(a), free(b);
}

static void check_rc(const char *what, int rc_cpu, int rc_gpu, const qs_err *err)
{
    if (rc_cpu || rc_gpu) {
        printf("%-52s error: %s\n", what, err->msg);
        g_failed++;
    }
}

static void *ints_on(const qs_ops *ops, const int32_t *v, int64_t n)
{
    qs_err err;
    void *d = ops->alloc(sizeof(int32_t) * (n > 0 ? n : 1), &err);
    ops->copy_to_device(d, v, sizeof(int32_t) * n, &err);
    return d;
}

static void test_rope_and_temperature(int64_t T, int heads, int head_dim)
{
    qs_err err = {{0}};
    char name[96];
    int64_t n = (int64_t)heads * head_dim;
    int32_t *pos = malloc(sizeof(int32_t) * T);
    for (int64_t t = 0; t < T; t++)
        pos[t] = (int32_t)((t * 2731) % 100000);
    float *inv = malloc(sizeof(float) * head_dim / 2);
    for (int i = 0; i < head_dim / 2; i++) { /* Scout: llama3 scaling, factor 16, low = high = 1 */
        float f = 1.0f / powf(500000.0f, (float)(2 * i) / head_dim);
        inv[i] = 2 * M_PI / f > 8192 ? f / 16 : f;
    }
    void *pc = ints_on(cpu, pos, T), *pg = ints_on(gpu, pos, T);
    void *fc = cpu->alloc(sizeof(float) * head_dim / 2, &err), *fg = gpu->alloc(sizeof(float) * head_dim / 2, &err);
    cpu->copy_to_device(fc, inv, sizeof(float) * head_dim / 2, &err);
    gpu->copy_to_device(fg, inv, sizeof(float) * head_dim / 2, &err);
    float *x = qs_test_rand_bf16(&g_rng, T * n, 3.f);
    pair px = pair_from(x, T * n);
    check_rc("rope_interleaved", cpu->rope_interleaved(px.c, pc, fc, T, heads, head_dim, &err),
             gpu->rope_interleaved(px.g, pg, fg, T, heads, head_dim, &err), &err);
    snprintf(name, sizeof name, "rope_interleaved %lld x %d x %d", (long long)T, heads, head_dim);
    compare(name, &px);
    pair pt = pair_from(x, T * n);
    check_rc("attn_temperature", cpu->attn_temperature(pt.c, pc, T, n, 8192.0f, 0.1f, &err),
             gpu->attn_temperature(pt.g, pg, T, n, 8192.0f, 0.1f, &err), &err);
    snprintf(name, sizeof name, "attn_temperature %lld x %lld", (long long)T, (long long)n);
    compare(name, &pt);
    pair_free(&px), pair_free(&pt);
    cpu->free(pc), gpu->free(pg), cpu->free(fc), gpu->free(fg);
    free(pos), free(inv), free(x);
}

static void test_route_and_add(int64_t T, int E, int64_t d)
{
    qs_err err = {{0}};
    char name[96];
    float *logits = qs_test_rand_bf16(&g_rng, T * E, 4.f), *x = qs_test_rand_bf16(&g_rng, T * d, 2.f);
    pair pl = pair_from(logits, T * E), px = pair_from(x, T * d), ps = pair_out(T * d);
    int32_t *ic = cpu->alloc(sizeof(int32_t) * T, &err), *ig = gpu->alloc(sizeof(int32_t) * T, &err);
    float *wc = cpu->alloc(sizeof(float) * T, &err), *wg = gpu->alloc(sizeof(float) * T, &err);
    check_rc("moe_route_scale_input", cpu->moe_route_scale_input(pl.c, px.c, ps.c, ic, wc, T, E, d, &err),
             gpu->moe_route_scale_input(pl.g, px.g, ps.g, ig, wg, T, E, d, &err), &err);
    int32_t *hc = malloc(sizeof(int32_t) * T), *hg = malloc(sizeof(int32_t) * T);
    float *whc = malloc(sizeof(float) * T), *whg = malloc(sizeof(float) * T);
    cpu->copy_to_host(hc, ic, sizeof(int32_t) * T, &err);
    gpu->copy_to_host(hg, ig, sizeof(int32_t) * T, &err);
    cpu->copy_to_host(whc, wc, sizeof(float) * T, &err);
    gpu->copy_to_host(whg, wg, sizeof(float) * T, &err);
    int same = !memcmp(hc, hg, sizeof(int32_t) * T) && !memcmp(whc, whg, sizeof(float) * T);
    snprintf(name, sizeof name, "moe_route_scale_input ids %lld x %d", (long long)T, E);
    printf("%-52s %s\n", name, same ? "ok" : "FAIL");
    same ? g_passed++ : g_failed++;
    snprintf(name, sizeof name, "moe_route_scale_input rows %lld x %lld", (long long)T, (long long)d);
    compare(name, &ps);
    check_rc("add", cpu->add(ps.c, px.c, T * d, &err), gpu->add(ps.g, px.g, T * d, &err), &err);
    snprintf(name, sizeof name, "add %lld", (long long)(T * d));
    compare(name, &ps);
    pair_free(&pl), pair_free(&px), pair_free(&ps);
    cpu->free(ic), gpu->free(ig), cpu->free(wc), gpu->free(wg);
    free(logits), free(x), free(hc), free(hg), free(whc), free(whg);
}

/* the files init-model wrote, then the folder */
static void remove_dir(const char *dir)
{
    const char *names[] = {"config.json", "tokenizer.json", "tokenizer_config.json", "generation_config.json",
                           "model.safetensors"};
    char p[256];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        unlink(p);
    }
    rmdir(dir);
}

static qs_model *load_on(const char *dir, qs_device_choice dev)
{
    qs_config cfg;
    qs_config_defaults(&cfg);
    snprintf(cfg.model_dir, sizeof cfg.model_dir, "%s", dir);
    cfg.device = dev;
    qs_model *m = NULL;
    qs_err err;
    if (qs_model_load(&cfg, &m, &err)) {
        printf("%-52s error: %s\n", dir, err.msg);
        g_failed++;
        return NULL;
    }
    return m;
}

/* logits of the last token after a prefill of n_prefill tokens and decode steps up to 44 */
static int model_logits(qs_model *m, int n_prefill, float *logits)
{
    enum { P = 44 };
    const qs_model_config *mc = qs_model_get_config(m);
    int32_t toks[P], table[4];
    for (int i = 0; i < P; i++)
        toks[i] = (int32_t)((i * 37 + 11) % 500);
    qs_kv_cache *kv;
    qs_err err;
    if (qs_kv_cache_create(mc, qs_model_device(m)->platform, 4, &kv, &err))
        return -1;
    for (int i = 0; i < 3; i++)
        table[i] = qs_kv_cache_alloc(kv);
    qs_seq_step s = {.tokens = toks, .n_tokens = n_prefill, .block_table = table, .n_blocks = 3, .want_logits = true};
    int rc = qs_model_forward(m, kv, &s, 1, logits, &err);
    for (int p = n_prefill; rc == 0 && p < P; p++) {
        qs_seq_step d = {.tokens = &toks[p], .n_tokens = 1, .start_pos = p, .block_table = table, .n_blocks = 3,
                         .want_logits = true};
        rc = qs_model_forward(m, kv, &d, 1, logits, &err);
    }
    if (rc)
        printf("forward: %s\n", err.msg);
    qs_kv_cache_free(kv);
    return rc;
}

static void test_model(const char *shape)
{
    char dir[64];
    snprintf(dir, sizeof dir, "/tmp/qs_l4cuda_XXXXXX");
    if (!mkdtemp(dir))
        return;
    const qs_init_shape *s = qs_init_shape_find(shape);
    qs_err err;
    if (qs_init_write_config(dir, s, QS_DT_BF16, &err) || qs_init_write_tokenizer(dir, s, &err) ||
        qs_init_write_weights(dir, s, 5, QS_DT_BF16, 0, &err)) {
        printf("%-52s error: %s\n", shape, err.msg);
        g_failed++;
        return;
    }
    qs_model *mc = load_on(dir, QS_DEVICE_CPU), *mg = gpu == cpu ? load_on(dir, QS_DEVICE_CPU) : load_on(dir, QS_DEVICE_CUDA);
    int V = 512;
    float *a = malloc(sizeof(float) * V), *b = malloc(sizeof(float) * V);
    for (int n_prefill = 44; mc && mg && n_prefill >= 20; n_prefill -= 24) {
        char name[96];
        snprintf(name, sizeof name, "%s prefill %d + decode", shape, n_prefill);
        if (model_logits(mc, n_prefill, a) || model_logits(mg, n_prefill, b)) {
            printf("%-52s error\n", name);
            g_failed++;
            continue;
        }
        double num = 0, den = 0;
        for (int i = 0; i < V; i++)
            num += ((double)a[i] - b[i]) * ((double)a[i] - b[i]), den += (double)a[i] * a[i];
        double rel = sqrt(num / den);
        int pass = isfinite(rel) && rel <= 3e-2;
        printf("%-52s rel %.2e  %s\n", name, rel, pass ? "ok" : "FAIL");
        pass ? g_passed++ : g_failed++;
    }
    qs_model_free(mc);
    qs_model_free(mg);
    free(a), free(b);
    remove_dir(dir);
}

int main(int argc, char **argv)
{
    if (!ops_pair_setup(argc, argv))
        return 0;
    if (!gpu->rope_interleaved || !gpu->attn_temperature || !gpu->moe_route_scale_input || !gpu->add) {
        printf("the %s ops table lacks Llama 4's ops\n0 passed, 1 failed, 0 skipped\n", gpu->name);
        return 1;
    }
    test_rope_and_temperature(1, 40, 128);   /* Scout, decode */
    test_rope_and_temperature(77, 8, 128);   /* Scout's kv heads, a prefill chunk */
    test_rope_and_temperature(5, 4, 16);     /* the tiny shapes */
    test_route_and_add(1, 16, 5120);         /* Scout, decode */
    test_route_and_add(64, 128, 5120);       /* Maverick, a batch */
    test_route_and_add(7, 4, 64);            /* the tiny shapes */
    test_model("tiny-llama4-scout");
    test_model("tiny-llama4-maverick");
    printf("%d passed, %d failed, 0 skipped\n", g_passed, g_failed);
    return g_failed ? 1 : 0;
}
