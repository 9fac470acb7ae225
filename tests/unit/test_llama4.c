/* test_llama4.c — Llama 4's text architecture on the CPU, each feature against a plain loop
 * written here:
 *  - config: text_config of Llama4ForConditionalGeneration, the defaults (every fourth layer NoPE,
 *    MoE layers from interleave_moe_layer_step), and the values qserve refuses, by name;
 *  - the ops: chunked attention equals full attention while the context is shorter than a chunk
 *    and differs beyond it exactly as the chunk mask says; the NoPE temperature; top-1 routing
 *    whose sigmoid scales the expert input; interleaved-pair RoPE;
 *  - whole models: tiny Scout (every layer MoE, Llama-4 RoPE scaling) and Maverick (dense and MoE
 *    layers alternating) written by init-model, whose prefill logits over a prompt three chunks
 *    long must match a plain-loop forward pass written from the checkpoint tensors, and whose
 *    decode steps and a chunked prefill batched with another sequence must match the prefill; the
 *    per-expert layout loads to the same logits as the
 *    fused 3-D one; online FP8 and `qserve quantize`'s per-expert forms (ModelOpt FP8 static and
 *    NVFP4, compressed-tensors FP8 dynamic and NVFP4 weight-only) stay within their precision of
 *    BF16, and the quantized checkpoints hold per-expert tensors with their scales. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli/backends_model.h"
#include "cli/init_model.h"
#include "config/config.h"
#include "core/ops.h"
#include "cpu/backend_cpu.h"
#include "model/kv_cache.h"
#include "io/safetensors.h"
#include "io/safetensors_writer.h"
#include "model/model.h"
#include "model/model_config.h"
#include "model/model_config_load.h"
#include "quantize/quantize_checkpoint.h"
#include "test_helpers.h"
#include "tokenizer/chat_template.h"

/* ---- config ---------------------------------------------------------------------------------- */

static const char *CG_HEAD = "{\"architectures\": [\"Llama4ForConditionalGeneration\"], \"model_type\": \"llama4\", "
                             "\"text_config\": {\"vocab_size\": 100, \"hidden_size\": 32, \"num_hidden_layers\": 8, "
                             "\"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"head_dim\": 8";

static int parse(const char *extra, qs_model_config *mc, qs_err *err)
{
    char json[2048];
    snprintf(json, sizeof json, "%s%s}}", CG_HEAD, extra);
    return qs_model_config_parse(json, "config.json", mc, err);
}

static void config_defaults(void **state)
{
    qs_model_config mc;
    qs_err err;
    if (parse("", &mc, &err))
        fail_msg("%s", err.msg);
    assert_true(mc.llama4);
    assert_int_equal(mc.arch, QS_ARCH_LLAMA4);
    assert_string_equal(mc.tensor_prefix, "language_model.");
    assert_int_equal(mc.attention_chunk_size, 8192);
    assert_int_equal(mc.num_experts, 16);
    assert_int_equal(mc.num_experts_per_tok, 1);
    assert_int_equal(mc.moe_intermediate_size, 8192);
    assert_int_equal(mc.intermediate_size, 16384);
    assert_true(mc.l2_qk_norm);
    assert_true(mc.attn_temperature_tuning);
    assert_true(mc.floor_scale == 8192 && mc.attn_scale == 0.1);
    for (int i = 0; i < 8; i++) {
        assert_int_equal(mc.layer_rope[i], (i + 1) % 4 != 0); /* layers 3 and 7 NoPE */
        assert_true(qs_model_layer_is_moe(&mc, i));
    }
    qs_model_config_free(&mc);
    /* Maverick's interleaving, explicit no_rope_layers, chunk null, the early numeric tuning flag */
    if (parse(", \"interleave_moe_layer_step\": 2, \"no_rope_layers\": [1,0,1,0,1,0,1,0], "
              "\"attention_chunk_size\": null, \"attn_temperature_tuning\": 4, \"intermediate_size_mlp\": 64",
              &mc, &err))
        fail_msg("%s", err.msg);
    for (int i = 0; i < 8; i++) {
        assert_int_equal(qs_model_layer_is_moe(&mc, i), i % 2 == 1);
        assert_int_equal(mc.layer_rope[i], i % 2 == 0);
    }
    assert_int_equal(mc.attention_chunk_size, 0);
    assert_true(mc.attn_temperature_tuning);
    assert_int_equal(mc.intermediate_size, 64);
    qs_model_config_free(&mc);
    /* layer_types agreeing with no_rope_layers is accepted */
    if (parse(", \"no_rope_layers\": [1,1,1,0,1,1,1,0], \"layer_types\": [\"chunked_attention\", "
              "\"chunked_attention\", \"chunked_attention\", \"full_attention\", \"chunked_attention\", "
              "\"chunked_attention\", \"chunked_attention\", \"full_attention\"]", &mc, &err))
        fail_msg("%s", err.msg);
    assert_int_equal(mc.layer_rope[3], 0);
    qs_model_config_free(&mc);
    /* Llama4ForCausalLM: the text config at the top level, no prefix */
    const char *causal = "{\"architectures\": [\"Llama4ForCausalLM\"], \"vocab_size\": 100, \"hidden_size\": 32, "
                         "\"num_hidden_layers\": 2, \"num_attention_heads\": 8, \"moe_layers\": [1]}";
    if (qs_model_config_parse(causal, "config.json", &mc, &err))
        fail_msg("%s", err.msg);
    assert_string_equal(mc.tensor_prefix, "");
    assert_false(qs_model_layer_is_moe(&mc, 0));
    assert_true(qs_model_layer_is_moe(&mc, 1));
    qs_model_config_free(&mc);
}

static void config_refusals(void **state)
{
    struct {
        const char *extra, *want;
    } cases[] = {
        {", \"num_experts_per_tok\": 2", "num_experts_per_tok"},
        {", \"attention_bias\": true", "attention_bias"},
        {", \"hidden_act\": \"gelu\"", "hidden_act"},
        {", \"no_rope_layers\": [1, 1]", "no_rope_layers"},
        {", \"no_rope_layers\": [1,1,1,2,1,1,1,1]", "no_rope_layers[3]"},
        {", \"moe_layers\": [9]", "moe_layers[0]"},
        {", \"floor_scale\": 0", "floor_scale"},
        {", \"no_rope_layers\": [1,1,1,0,1,1,1,0], \"layer_types\": [\"chunked_attention\", \"chunked_attention\", "
         "\"chunked_attention\", \"chunked_attention\", \"chunked_attention\", \"chunked_attention\", "
         "\"chunked_attention\", \"full_attention\"]", "layer_types[3]"},
        {", \"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 2}", "yarn"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        qs_model_config mc;
        qs_err err;
        assert_int_not_equal(parse(cases[i].extra, &mc, &err), 0);
        if (!strstr(err.msg, cases[i].want))
            fail_msg("'%s': expected the error to name '%s', got: %s", cases[i].extra, cases[i].want, err.msg);
    }
    qs_model_config mc;
    qs_err err;
    assert_int_not_equal(qs_model_config_parse("{\"architectures\": [\"Llama4ForConditionalGeneration\"]}",
                                               "config.json", &mc, &err), 0);
    assert_non_null(strstr(err.msg, "text_config"));
}

/* ---- ops against plain loops ----------------------------------------------------------------- */

static float frand(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((*s >> 40) & 0xFFFFFF) / (float)0x1000000 * 2.0f - 1.0f;
}

#define NH 4
#define NKV 2
#define HD 8
#define CTX 40
#define CHUNK 16

/* softmax(q . k / sqrt(hd)) v over positions [lo, pos] of one (token, head), all in double */
static void plain_attend(const float *q, const float *K, const float *V, int lo, int pos, int kvh, double *out)
{
    double s[CTX], max = -INFINITY, sum = 0;
    for (int p = lo; p <= pos; p++) {
        double d = 0;
        for (int i = 0; i < HD; i++)
            d += (double)q[i] * K[((int64_t)p * NKV + kvh) * HD + i];
        s[p] = d / sqrt((double)HD);
        if (s[p] > max)
            max = s[p];
    }
    for (int p = lo; p <= pos; p++)
        sum += s[p] = exp(s[p] - max);
    for (int i = 0; i < HD; i++) {
        out[i] = 0;
        for (int p = lo; p <= pos; p++)
            out[i] += s[p] / sum * V[((int64_t)p * NKV + kvh) * HD + i];
    }
}

static void chunked_attention(void **state)
{
    const qs_ops *ops = qs_ops_cpu();
    uint64_t seed = 1;
    static float q[CTX * NH * HD], K[CTX * NKV * HD], V[CTX * NKV * HD];
    for (size_t i = 0; i < sizeof q / sizeof q[0]; i++)
        q[i] = frand(&seed);
    for (size_t i = 0; i < sizeof K / sizeof K[0]; i++)
        K[i] = frand(&seed), V[i] = frand(&seed);
    int n_blocks = (CTX + QS_KV_BLOCK_SIZE - 1) / QS_KV_BLOCK_SIZE;
    /* a shuffled block table, so the chunk start must be found through it */
    int32_t table[8] = {2, 0, 1}, pos[CTX], seq[CTX], slots[CTX];
    for (int t = 0; t < CTX; t++)
        pos[t] = t, seq[t] = 0, slots[t] = table[t / QS_KV_BLOCK_SIZE] * QS_KV_BLOCK_SIZE + t % QS_KV_BLOCK_SIZE;
    size_t cache = (size_t)n_blocks * NKV * QS_KV_BLOCK_SIZE * HD;
    float *kc = calloc(cache, sizeof(float)), *vc = calloc(cache, sizeof(float));
    static float full[CTX * NH * HD], chunked[CTX * NH * HD];
    qs_attn_batch b = {.n_tokens = CTX, .n_seqs = 1, .max_blocks = n_blocks, .tok_seq = seq, .tok_pos = pos,
                       .block_tables = table, .slot_mapping = slots};
    qs_err err;
    assert_int_equal(ops->kv_write(kc, vc, K, V, &b, NKV, HD, &err), 0);
    float scale = (float)(1.0 / sqrt((double)HD));
    assert_int_equal(ops->attention(full, q, kc, vc, &b, NH, NKV, HD, scale, QS_ACT_NATURAL, &err), 0);
    b.attention_chunk = CHUNK;
    assert_int_equal(ops->attention(chunked, q, kc, vc, &b, NH, NKV, HD, scale, QS_ACT_NATURAL, &err), 0);
    for (int t = 0; t < CTX; t++)
        for (int h = 0; h < NH; h++) {
            const float *c = chunked + ((int64_t)t * NH + h) * HD, *f = full + ((int64_t)t * NH + h) * HD;
            double want_chunk[HD], want_full[HD];
            plain_attend(q + ((int64_t)t * NH + h) * HD, K, V, t / CHUNK * CHUNK, t, h / (NH / NKV), want_chunk);
            plain_attend(q + ((int64_t)t * NH + h) * HD, K, V, 0, t, h / (NH / NKV), want_full);
            double diff_cf = 0;
            for (int i = 0; i < HD; i++) {
                assert_true(fabs(c[i] - want_chunk[i]) < 1e-5);
                assert_true(fabs(f[i] - want_full[i]) < 1e-5);
                diff_cf += fabs(c[i] - f[i]);
            }
            if (t < CHUNK)
                assert_memory_equal(c, f, sizeof(float) * HD); /* shorter than a chunk: full attention */
            else if (t % CHUNK != t)
                assert_true(diff_cf > 1e-4); /* beyond: the earlier chunks are masked out */
        }
    free(kc);
    free(vc);
}

static void temperature_and_rope(void **state)
{
    const qs_ops *ops = qs_ops_cpu();
    uint64_t seed = 7;
    enum { T = 40, N = NH * HD };
    static float x[T * N], y[T * N];
    int32_t pos[T];
    for (int t = 0; t < T; t++)
        pos[t] = t * 300; /* up to 11700: floor((pos + 1) / 8192) reaches 1 */
    for (int i = 0; i < T * N; i++)
        x[i] = y[i] = frand(&seed);
    qs_err err;
    assert_int_equal(ops->attn_temperature(y, pos, T, N, 8192.0f, 0.1f, &err), 0);
    int changed = 0;
    for (int t = 0; t < T; t++) {
        double s = log(floor((pos[t] + 1.0) / 8192.0) + 1.0) * 0.1 + 1.0;
        changed += s != 1.0;
        for (int i = 0; i < N; i++)
            assert_true(fabs(y[t * N + i] - x[t * N + i] * s) < 1e-6);
    }
    assert_true(changed > 0 && changed < T);
    /* interleaved pairs: (x[2i] + i x[2i+1]) * e^{i pos f_i} */
    float inv[HD / 2];
    for (int i = 0; i < HD / 2; i++)
        inv[i] = 1.0f / powf(500000.0f, (float)(2 * i) / HD);
    for (int i = 0; i < T * N; i++)
        y[i] = x[i];
    assert_int_equal(ops->rope_interleaved(y, pos, inv, T, NH, HD, &err), 0);
    for (int t = 0; t < T; t++)
        for (int h = 0; h < NH; h++)
            for (int i = 0; i < HD / 2; i++) {
                const float *a = x + (t * NH + h) * HD + 2 * i;
                const float *r = y + (t * NH + h) * HD + 2 * i;
                double ang = (double)(float)((float)pos[t] * inv[i]);
                assert_true(fabs(r[0] - (a[0] * cos(ang) - a[1] * sin(ang))) < 1e-5);
                assert_true(fabs(r[1] - (a[0] * sin(ang) + a[1] * cos(ang))) < 1e-5);
            }
}

static void routing_scales_input(void **state)
{
    const qs_ops *ops = qs_ops_cpu();
    enum { T = 6, E = 5, D = 8 };
    float logits[T * E], x[T * D], xs[T * D], w[T];
    int32_t ids[T];
    uint64_t seed = 3;
    for (int i = 0; i < T * E; i++)
        logits[i] = 3 * frand(&seed);
    logits[2 * E + 1] = logits[2 * E + 3] = 9; /* a tie: the lower id */
    for (int i = 0; i < T * D; i++)
        x[i] = frand(&seed);
    qs_err err;
    assert_int_equal(ops->moe_route_scale_input(logits, x, xs, ids, w, T, E, D, &err), 0);
    for (int t = 0; t < T; t++) {
        int best = 0;
        for (int e = 1; e < E; e++)
            if (logits[t * E + e] > logits[t * E + best])
                best = e;
        assert_int_equal(ids[t], best);
        assert_true(w[t] == 1.0f); /* the output is not weighted again */
        double s = 1.0 / (1.0 + exp(-(double)logits[t * E + best]));
        for (int i = 0; i < D; i++)
            assert_true(fabs(xs[t * D + i] - x[t * D + i] * s) < 1e-6);
    }
    assert_int_equal(ids[2], 1);
}

/* ---- whole models against a plain-loop forward pass --------------------------------------------- */

static char g_dir[64];

static float *tensor_f32(const qs_checkpoint *ck, const char *name)
{
    const qs_tensor *t = qs_checkpoint_find(ck, name);
    if (!t)
        fail_msg("tensor %s missing", name);
    float *out = malloc(sizeof(float) * (size_t)t->numel);
    for (int64_t i = 0; i < t->numel; i++)
        out[i] = t->dtype == QS_DT_BF16 ? qs_bf16_to_f32(((const uint16_t *)t->data)[i]) : ((const float *)t->data)[i];
    return out;
}

/* y[n] = W[n, k] x[k] */
static void matvec(const float *W, const double *x, double *y, int n, int k)
{
    for (int r = 0; r < n; r++) {
        double s = 0;
        for (int c = 0; c < k; c++)
            s += (double)W[(int64_t)r * k + c] * x[c];
        y[r] = s;
    }
}

static void rms(const double *x, const float *w, double *y, int n, double eps)
{
    double ss = 0;
    for (int i = 0; i < n; i++)
        ss += x[i] * x[i];
    double r = 1.0 / sqrt(ss / n + eps);
    for (int i = 0; i < n; i++)
        y[i] = x[i] * r * (w ? w[i] : 1.0);
}

static double silu(double v) { return v / (1 + exp(-v)); }

/* Logits of the last of toks[0..n) through the model in dir, every op a loop over the tensors as
 * transformers' modeling_llama4.py writes it (fused 3-D experts read in place). */
static void plain_forward(const char *dir, const int32_t *toks, int n, double *logits)
{
    qs_model_config c;
    qs_checkpoint *ck;
    qs_err err;
    if (qs_model_config_load(dir, &c, &err) || qs_checkpoint_open(dir, false, &ck, &err))
        fail_msg("%s", err.msg);
    int H = c.hidden_size, nh = c.num_heads, nkv = c.num_kv_heads, hd = c.head_dim, V = c.vocab_size;
    int E = c.num_experts, I = c.moe_intermediate_size, IM = c.intermediate_size;
    char nm[256];
    const char *P = "language_model.model";
    /* Llama-4 RoPE frequencies: llama3 scaling; with low = high no blend */
    double inv[256];
    for (int i = 0; i < hd / 2; i++) {
        double f = 1.0 / pow(c.rope_theta, (double)(2 * i) / hd);
        if (c.rope_type == QS_ROPE_LLAMA3) {
            double wl = 2 * M_PI / f, lo = c.rope_original_max_position / c.rope_low_freq_factor,
                   hi = c.rope_original_max_position / c.rope_high_freq_factor;
            if (wl > lo)
                f /= c.rope_factor;
            else if (wl >= hi && hi != lo) {
                double sm = (c.rope_original_max_position / wl - c.rope_low_freq_factor) /
                            (c.rope_high_freq_factor - c.rope_low_freq_factor);
                f = (1 - sm) * f / c.rope_factor + sm * f;
            }
        }
        inv[i] = f;
    }
    double *x = calloc((size_t)n * H, sizeof(double)), *h = calloc((size_t)n * H, sizeof(double));
    double *q = calloc((size_t)n * nh * hd, sizeof(double)), *k = calloc((size_t)n * nkv * hd, sizeof(double));
    double *v = calloc((size_t)n * nkv * hd, sizeof(double)), *att = calloc((size_t)nh * hd, sizeof(double));
    double *tmp = calloc((size_t)(H + 4 * (IM > I ? IM : I) + E + 16), sizeof(double));
    snprintf(nm, sizeof nm, "%s.embed_tokens.weight", P);
    float *emb = tensor_f32(ck, nm);
    for (int t = 0; t < n; t++)
        for (int i = 0; i < H; i++)
            x[(int64_t)t * H + i] = emb[(int64_t)toks[t] * H + i];
    free(emb);
    for (int l = 0; l < c.num_layers; l++) {
        float *w_in, *w_post, *wq, *wk, *wv, *wo;
#define LOAD(var, fmt) (snprintf(nm, sizeof nm, "%s.layers.%d." fmt, P, l), var = tensor_f32(ck, nm))
        LOAD(w_in, "input_layernorm.weight");
        LOAD(w_post, "post_attention_layernorm.weight");
        LOAD(wq, "self_attn.q_proj.weight");
        LOAD(wk, "self_attn.k_proj.weight");
        LOAD(wv, "self_attn.v_proj.weight");
        LOAD(wo, "self_attn.o_proj.weight");
        bool rope = c.layer_rope[l];
        for (int t = 0; t < n; t++) {
            rms(x + (int64_t)t * H, w_in, h, H, c.rms_norm_eps);
            matvec(wq, h, q + (int64_t)t * nh * hd, nh * hd, H);
            matvec(wk, h, k + (int64_t)t * nkv * hd, nkv * hd, H);
            matvec(wv, h, v + (int64_t)t * nkv * hd, nkv * hd, H);
            for (int head = 0; head < nh + nkv; head++) {
                double *r = head < nh ? q + ((int64_t)t * nh + head) * hd : k + ((int64_t)t * nkv + head - nh) * hd;
                if (rope) {
                    for (int i = 0; i < hd / 2; i++) {
                        double a = t * inv[i], re = r[2 * i], im = r[2 * i + 1];
                        r[2 * i] = re * cos(a) - im * sin(a);
                        r[2 * i + 1] = re * sin(a) + im * cos(a);
                    }
                    if (c.l2_qk_norm)
                        rms(r, NULL, r, hd, c.rms_norm_eps); /* the L2 norm */
                } else if (head < nh) {
                    double s = log1p(floor((t + 1.0) / c.floor_scale)) * c.attn_scale + 1.0;
                    for (int i = 0; i < hd; i++)
                        r[i] *= s;
                }
            }
        }
        /* attention of the last token only matters for the logits, but every token feeds the next layer */
        double *nx = calloc((size_t)n * H, sizeof(double));
        for (int t = 0; t < n; t++) {
            int lo = rope && c.attention_chunk_size ? t / c.attention_chunk_size * c.attention_chunk_size : 0;
            for (int head = 0; head < nh; head++) {
                int kvh = head / (nh / nkv);
                double sc[4096], max = -INFINITY, sum = 0;
                for (int p = lo; p <= t; p++) {
                    double d = 0;
                    for (int i = 0; i < hd; i++)
                        d += q[((int64_t)t * nh + head) * hd + i] * k[((int64_t)p * nkv + kvh) * hd + i];
                    sc[p] = d / sqrt((double)hd);
                    max = sc[p] > max ? sc[p] : max;
                }
                for (int p = lo; p <= t; p++)
                    sum += sc[p] = exp(sc[p] - max);
                for (int i = 0; i < hd; i++) {
                    double a = 0;
                    for (int p = lo; p <= t; p++)
                        a += sc[p] / sum * v[((int64_t)p * nkv + kvh) * hd + i];
                    att[head * hd + i] = a;
                }
            }
            matvec(wo, att, nx + (int64_t)t * H, H, nh * hd);
        }
        for (int64_t i = 0; i < (int64_t)n * H; i++)
            x[i] += nx[i];
        free(nx);
        bool moe = qs_model_layer_is_moe(&c, l);
        float *wr = NULL, *gu = NULL, *dn = NULL, *sg, *su, *sd;
        if (moe) {
            LOAD(wr, "feed_forward.router.weight");
            LOAD(gu, "feed_forward.experts.gate_up_proj");
            LOAD(dn, "feed_forward.experts.down_proj");
            LOAD(sg, "feed_forward.shared_expert.gate_proj.weight");
            LOAD(su, "feed_forward.shared_expert.up_proj.weight");
            LOAD(sd, "feed_forward.shared_expert.down_proj.weight");
        } else {
            LOAD(sg, "feed_forward.gate_proj.weight");
            LOAD(su, "feed_forward.up_proj.weight");
            LOAD(sd, "feed_forward.down_proj.weight");
        }
        int width = moe ? I : IM;
        double *g = tmp, *u = g + width, *a = u + width, *o = a + width, *rl = o + H;
        for (int t = 0; t < n; t++) {
            rms(x + (int64_t)t * H, w_post, h, H, c.rms_norm_eps);
            /* the shared expert (or the dense MLP) on h */
            matvec(sg, h, g, width, H);
            matvec(su, h, u, width, H);
            for (int i = 0; i < width; i++)
                a[i] = silu(g[i]) * u[i];
            matvec(sd, a, o, H, width);
            for (int i = 0; i < H; i++)
                x[(int64_t)t * H + i] += o[i];
            if (!moe)
                continue;
            matvec(wr, h, rl, E, H);
            int e = 0;
            for (int j = 1; j < E; j++)
                if (rl[j] > rl[e])
                    e = j;
            double s = 1.0 / (1.0 + exp(-rl[e]));
            /* expert e on h * sigmoid(score): gate_up[e] is [H, 2I], down[e] is [I, H] */
            for (int i = 0; i < I; i++) {
                double gs = 0, us = 0;
                for (int c2 = 0; c2 < H; c2++) {
                    double in = h[c2] * s;
                    gs += gu[((int64_t)e * H + c2) * 2 * I + i] * in;
                    us += gu[((int64_t)e * H + c2) * 2 * I + I + i] * in;
                }
                a[i] = silu(gs) * us;
            }
            for (int i = 0; i < H; i++) {
                double d = 0;
                for (int j = 0; j < I; j++)
                    d += dn[((int64_t)e * I + j) * H + i] * a[j];
                x[(int64_t)t * H + i] += d;
            }
        }
#undef LOAD
        free(w_in), free(w_post), free(wq), free(wk), free(wv), free(wo), free(wr), free(gu), free(dn), free(sg),
            free(su), free(sd);
    }
    snprintf(nm, sizeof nm, "%s.norm.weight", P);
    float *fn = tensor_f32(ck, nm), *lm = tensor_f32(ck, "language_model.lm_head.weight");
    rms(x + (int64_t)(n - 1) * H, fn, h, H, c.rms_norm_eps);
    matvec(lm, h, logits, V, H);
    free(fn), free(lm), free(x), free(h), free(q), free(k), free(v), free(att), free(tmp);
    qs_checkpoint_close(ck);
    qs_model_config_free(&c);
}

static qs_model *load(const char *dir, const char *quantization)
{
    qs_config cfg;
    qs_config_defaults(&cfg);
    snprintf(cfg.model_dir, sizeof cfg.model_dir, "%s", dir);
    snprintf(cfg.quantization, sizeof cfg.quantization, "%s", quantization);
    cfg.device = QS_DEVICE_CPU;
    qs_model *m;
    qs_err err;
    if (qs_model_load(&cfg, &m, &err) != 0)
        fail_msg("%s: load: %s", dir, err.msg);
    return m;
}

#define PROMPT 44 /* almost three chunks of 16 */

static void prompt(int32_t *toks)
{
    for (int i = 0; i < PROMPT; i++)
        toks[i] = (int32_t)((i * 37 + 11) % 500);
}

/* logits [V] of the last prompt token: one prefill (n_prefill = PROMPT), or a prefill of n_prefill
 * tokens then one decode step per remaining token. */
static void model_logits(qs_model *m, int n_prefill, float *logits)
{
    const qs_model_config *mc = qs_model_get_config(m);
    int32_t toks[PROMPT];
    prompt(toks);
    int n_blocks = (PROMPT + QS_KV_BLOCK_SIZE - 1) / QS_KV_BLOCK_SIZE;
    qs_kv_cache *kv;
    qs_err err;
    assert_int_equal(qs_kv_cache_create(mc, QS_PLATFORM_CPU, n_blocks + 1, &kv, &err), 0);
    int32_t table[8];
    qs_kv_cache_alloc(kv); /* so the table is not the identity */
    for (int i = 0; i < n_blocks; i++)
        table[i] = qs_kv_cache_alloc(kv);
    qs_seq_step s = {.tokens = toks, .n_tokens = n_prefill, .block_table = table, .n_blocks = n_blocks,
                     .want_logits = true};
    if (qs_model_forward(m, kv, &s, 1, logits, &err))
        fail_msg("prefill: %s", err.msg);
    for (int p = n_prefill; p < PROMPT; p++) {
        qs_seq_step d = {.tokens = &toks[p], .n_tokens = 1, .start_pos = p, .block_table = table,
                         .n_blocks = n_blocks, .want_logits = true};
        if (qs_model_forward(m, kv, &d, 1, logits, &err))
            fail_msg("decode %d: %s", p, err.msg);
    }
    qs_kv_cache_free(kv);
}

/* The prompt in two prefill chunks (20 + 24 tokens: the second starts mid-chunk and crosses a chunk
 * boundary) batched in one step with a second sequence's first chunk; logits of the last token. */
static void chunked_prefill_logits(qs_model *m, float *logits)
{
    const qs_model_config *mc = qs_model_get_config(m);
    int32_t toks[PROMPT], other[24];
    prompt(toks);
    for (int i = 0; i < 24; i++)
        other[i] = (int32_t)((i * 11 + 3) % 500);
    qs_kv_cache *kv;
    qs_err err;
    assert_int_equal(qs_kv_cache_create(mc, QS_PLATFORM_CPU, 8, &kv, &err), 0);
    int32_t ta[3], tb[2];
    for (int i = 0; i < 3; i++)
        ta[i] = qs_kv_cache_alloc(kv);
    for (int i = 0; i < 2; i++)
        tb[i] = qs_kv_cache_alloc(kv);
    qs_seq_step first = {.tokens = toks, .n_tokens = 20, .block_table = ta, .n_blocks = 3, .want_logits = false};
    if (qs_model_forward(m, kv, &first, 1, logits, &err))
        fail_msg("chunk 1: %s", err.msg);
    qs_seq_step both[2] = {
        {.tokens = other, .n_tokens = 24, .block_table = tb, .n_blocks = 2, .want_logits = false},
        {.tokens = toks + 20, .n_tokens = PROMPT - 20, .start_pos = 20, .block_table = ta, .n_blocks = 3,
         .want_logits = true},
    };
    if (qs_model_forward(m, kv, both, 2, logits, &err))
        fail_msg("chunk 2: %s", err.msg);
    qs_kv_cache_free(kv);
}

static double max_abs(const float *a, int n)
{
    double m = 0;
    for (int i = 0; i < n; i++)
        m = fabs(a[i]) > m ? fabs(a[i]) : m;
    return m;
}

static void write_shape(const char *shape)
{
    const qs_init_shape *s = qs_init_shape_find(shape);
    assert_non_null(s);
    qs_err err;
    qs_test_remove_init_model(g_dir);
    if (qs_init_write_config(g_dir, s, QS_DT_BF16, &err) || qs_init_write_tokenizer(g_dir, s, &err) ||
        qs_init_write_weights(g_dir, s, 5, QS_DT_BF16, 0, &err))
        fail_msg("%s: %s", shape, err.msg);
}

/* The fused 3-D experts of g_dir rewritten per expert ([out, in] Linear weights) into dir2. */
static void write_per_expert(const char *dir2)
{
    qs_checkpoint *ck;
    qs_err err;
    assert_int_equal(qs_checkpoint_open(g_dir, false, &ck, &err), 0);
    qs_st_writer *w = qs_st_writer_new();
    for (size_t i = 0; i < qs_checkpoint_count(ck); i++) {
        const qs_tensor *t = qs_checkpoint_tensor(ck, i);
        const char *gu = strstr(t->name, "experts.gate_up_proj"), *dn = strstr(t->name, "experts.down_proj");
        if (!gu && !dn) {
            assert_int_equal(qs_st_writer_add_copy(w, t->name, t->dtype, t->ndim, t->shape, t->data, t->nbytes, &err), 0);
            continue;
        }
        int64_t E = t->shape[0], A = t->shape[1], B = t->shape[2];
        const uint16_t *src = t->data;
        char base[200];
        snprintf(base, sizeof base, "%.*s", (int)((gu ? gu : dn) - t->name), t->name);
        for (int64_t e = 0; e < E; e++)
            for (int part = 0; part < (gu ? 2 : 1); part++) {
                int64_t rows = gu ? B / 2 : B, cols = A; /* W[r][c] = src[e][c][r (+ rows)] */
                uint16_t *buf = malloc(sizeof(uint16_t) * (size_t)(rows * cols));
                for (int64_t r = 0; r < rows; r++)
                    for (int64_t c = 0; c < cols; c++)
                        buf[r * cols + c] = src[(e * A + c) * B + part * rows + r];
                char nm[256];
                snprintf(nm, sizeof nm, "%sexperts.%lld.%s.weight", base, (long long)e,
                         gu ? (part ? "up_proj" : "gate_proj") : "down_proj");
                int64_t shape[2] = {rows, cols};
                assert_int_equal(qs_st_writer_add_copy(w, nm, QS_DT_BF16, 2, shape, buf, sizeof(uint16_t) * (size_t)(rows * cols), &err), 0);
                free(buf);
            }
    }
    char path[256];
    snprintf(path, sizeof path, "%s/model.safetensors", dir2);
    if (qs_st_writer_write(w, path, &err))
        fail_msg("%s", err.msg);
    qs_st_writer_free(w);
    qs_checkpoint_close(ck);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "cp %s/config.json %s/tokenizer.json %s/tokenizer_config.json %s/", g_dir, g_dir, g_dir,
             dir2);
    assert_int_equal(system(cmd), 0);
}

static void whole_model(const char *shape)
{
    write_shape(shape);
    int32_t toks[PROMPT];
    prompt(toks);
    qs_model *m = load(g_dir, "");
    int V = qs_model_get_config(m)->vocab_size;
    float *got = malloc(sizeof(float) * V), *dec = malloc(sizeof(float) * V), *per = malloc(sizeof(float) * V),
          *fp8 = malloc(sizeof(float) * V);
    double *want = malloc(sizeof(double) * V);
    plain_forward(g_dir, toks, PROMPT, want);
    model_logits(m, PROMPT, got);
    model_logits(m, 10, dec);
    double scale = 0, err_prefill = 0, err_decode = 0;
    for (int i = 0; i < V; i++)
        scale = fabs(want[i]) > scale ? fabs(want[i]) : scale;
    for (int i = 0; i < V; i++) {
        err_prefill = fmax(err_prefill, fabs(got[i] - want[i]));
        err_decode = fmax(err_decode, fabs(dec[i] - got[i]));
    }
    printf("%s: |logits| <= %.3g; prefill vs plain loops %.3g, decode vs prefill %.3g\n", shape, scale, err_prefill,
           err_decode);
    assert_true(scale > 1e-3);
    assert_true(err_prefill < 1e-4 * scale + 1e-6);
    assert_true(err_decode < 1e-4 * scale + 1e-6);
    assert_int_equal(qs_test_argmax(got, V), qs_test_argmax(dec, V));
    /* chunked prefill across a chunk boundary, batched with another sequence */
    chunked_prefill_logits(m, per);
    double err_chunked = 0;
    for (int i = 0; i < V; i++)
        err_chunked = fmax(err_chunked, fabs(per[i] - got[i]));
    printf("%s: chunked prefill (20 + 24, batched) vs one prefill %.3g\n", shape, err_chunked);
    assert_true(err_chunked < 1e-5 * scale + 1e-7);
    qs_model_free(m);

    /* the per-expert layout loads to the same weights: the same logits, bit for bit */
    char dir2[64];
    snprintf(dir2, sizeof dir2, "/tmp/qs_llama4_pe_XXXXXX");
    assert_non_null(mkdtemp(dir2));
    write_per_expert(dir2);
    m = load(dir2, "");
    model_logits(m, PROMPT, per);
    assert_memory_equal(per, got, sizeof(float) * V);
    qs_model_free(m);
    qs_test_remove_init_model(dir2);
    rmdir(dir2);

    /* online FP8 (experts, shared expert, attention and dense layers): within FP8's precision */
    m = load(g_dir, "fp8");
    model_logits(m, PROMPT, fp8);
    double e8 = 0;
    for (int i = 0; i < V; i++)
        e8 = fmax(e8, fabs(fp8[i] - got[i]));
    printf("%s: --quantization fp8 vs bf16 %.3g (|logits| %.3g)\n", shape, e8, max_abs(got, V));
    assert_true(e8 > 0 && e8 < 0.1 * scale);
    qs_model_free(m);

    /* qserve quantize: per-expert quantized layouts with their scales, within precision of BF16 */
    struct {
        qs_quant_target t;
        qs_quant_format f;
        const char *scale_tensor; /* of expert 0 of layer 0 (Scout, Maverick: layer 1) */
        double tol;
    } forms[] = {
        {QS_QTARGET_FP8_STATIC, QS_QFORMAT_MODELOPT, "gate_proj.input_scale", 0.1},
        {QS_QTARGET_NVFP4, QS_QFORMAT_MODELOPT, "gate_proj.weight_scale_2", 0.35},
        {QS_QTARGET_FP8_DYNAMIC, QS_QFORMAT_COMPRESSED_TENSORS, "down_proj.weight_scale", 0.1},
        {QS_QTARGET_NVFP4_W4A16, QS_QFORMAT_COMPRESSED_TENSORS, "up_proj.weight_global_scale", 0.35},
    };
    int moe_layer = qs_init_shape_llama4(qs_init_shape_find(shape))->moe_step - 1;
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        char qdir[64];
        snprintf(qdir, sizeof qdir, "/tmp/qs_llama4_q_XXXXXX");
        assert_non_null(mkdtemp(qdir));
        qs_quantize_options opt = {.target = forms[i].t, .format = forms[i].f, .calib_tokens = 32};
        qs_err err;
        if (qs_quantize_checkpoint(g_dir, qdir, &opt, &err))
            fail_msg("quantize %s %s: %s", qs_quant_target_name(forms[i].t), qs_quant_format_name(forms[i].f), err.msg);
        qs_checkpoint *ck;
        assert_int_equal(qs_checkpoint_open(qdir, false, &ck, &err), 0);
        char nm[200];
        snprintf(nm, sizeof nm, "language_model.model.layers.%d.feed_forward.experts.0.%s", moe_layer,
                 forms[i].scale_tensor);
        if (!qs_checkpoint_find(ck, nm))
            fail_msg("%s: no %s", qs_quant_target_name(forms[i].t), nm);
        snprintf(nm, sizeof nm, "language_model.model.layers.%d.feed_forward.experts.gate_up_proj", moe_layer);
        assert_null(qs_checkpoint_find(ck, nm));
        qs_checkpoint_close(ck);
        m = load(qdir, "");
        model_logits(m, PROMPT, fp8);
        qs_model_free(m);
        double eq = 0;
        for (int v = 0; v < V; v++)
            eq = fmax(eq, fabs(fp8[v] - got[v]));
        printf("%s: quantize %s (%s) vs bf16 %.3g\n", shape, qs_quant_target_name(forms[i].t),
               qs_quant_format_name(forms[i].f), eq);
        assert_true(eq > 0 && eq < forms[i].tol * scale);
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf %s", qdir);
        assert_int_equal(system(cmd), 0);
    }
    free(got), free(dec), free(per), free(fp8), free(want);
}

/* The chat template init-model writes for Llama 4, through the Jinja engine: header tokens, <|eot|>
 * after each turn, list content's text parts joined; the expected bytes are jinja2 3.1's. */
static void chat_template(void **state)
{
    write_shape("tiny-llama4-scout");
    qs_chat_template *t;
    qs_err err;
    if (qs_chat_template_load_from_dir(g_dir, &t, &err))
        fail_msg("%s", err.msg);
    cJSON *msgs = cJSON_Parse("[{\"role\":\"system\",\"content\":\"Be brief.\"},{\"role\":\"user\",\"content\":"
                              "[{\"type\":\"text\",\"text\":\"Hi \"},{\"type\":\"text\",\"text\":\"there\"}]},"
                              "{\"role\":\"assistant\",\"content\":\"Hello\"},{\"role\":\"user\",\"content\":\"Bye\"}]");
    char *out = NULL;
    if (qs_chat_template_render(t, msgs, NULL, true, qs_chat_template_bos_token(t), qs_chat_template_eos_token(t), NULL,
                                &out, &err))
        fail_msg("%s", err.msg);
    assert_string_equal(out, "<|begin_of_text|><|header_start|>system<|header_end|>\n\nBe brief.<|eot|>"
                             "<|header_start|>user<|header_end|>\n\nHi there<|eot|><|header_start|>assistant"
                             "<|header_end|>\n\nHello<|eot|><|header_start|>user<|header_end|>\n\nBye<|eot|>"
                             "<|header_start|>assistant<|header_end|>\n\n");
    free(out);
    cJSON_Delete(msgs);
    qs_chat_template_free(t);
}

/* `qserve backends` reads a Llama 4 checkpoint's headers: every MoE layer's experts (fused 3-D ones
 * described per expert), its router and shared expert, the dense layers' feed_forward. */
static void backends_model(void **state)
{
    const char *shapes[] = {"tiny-llama4-scout", "tiny-llama4-maverick"};
    for (int i = 0; i < 2; i++) {
        write_shape(shapes[i]);
        qs_backends_model bm;
        qs_err err;
        if (qs_backends_model_open(g_dir, QS_PLATFORM_CPU, true, &bm, &err))
            fail_msg("%s: %s", shapes[i], err.msg);
        int n_moe = i == 0 ? 4 : 2, routers = 0, shared = 0, dense_down = 0;
        assert_int_equal(bm.n_moes, n_moe);
        for (int j = 0; j < bm.n_moes; j++) {
            assert_int_equal(bm.moes[j].num_experts, i == 0 ? 4 : 8);
            assert_int_equal(bm.moes[j].gate[1].n, 64);
            assert_int_equal(bm.moes[j].down[1].k, 64);
        }
        for (int j = 0; j < bm.n_linears; j++) {
            routers += strstr(bm.linears[j].name, "feed_forward.router") != NULL;
            shared += strstr(bm.linears[j].name, "shared_expert") != NULL;
            dense_down += strstr(bm.linears[j].name, "feed_forward.down_proj") != NULL;
        }
        assert_int_equal(routers, n_moe);
        assert_int_equal(shared, 3 * n_moe);
        assert_int_equal(dense_down, 4 - n_moe);
        assert_string_equal(bm.linears[bm.n_linears - 1].name, "language_model.lm_head");
        qs_backends_model_close(&bm);
    }
}

static void tiny_scout(void **state) { whole_model("tiny-llama4-scout"); }
static void tiny_maverick(void **state) { whole_model("tiny-llama4-maverick"); }

static int setup(void **state)
{
    snprintf(g_dir, sizeof g_dir, "/tmp/qs_llama4_XXXXXX");
    return mkdtemp(g_dir) ? 0 : -1;
}

static int teardown(void **state)
{
    qs_test_remove_init_model(g_dir);
    rmdir(g_dir);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(config_defaults),      cmocka_unit_test(config_refusals),
        cmocka_unit_test(chunked_attention),    cmocka_unit_test(temperature_and_rope),
        cmocka_unit_test(routing_scales_input), cmocka_unit_test(tiny_scout),
        cmocka_unit_test(tiny_maverick),        cmocka_unit_test(chat_template),
        cmocka_unit_test(backends_model),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
