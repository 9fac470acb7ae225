/* test_ops_cpu.c — the CPU ops against hand-computed values and a naive float64 attention:
 * RMSNorm (plain and fused with the residual add), bias, RoPE (rotate-half, position 0 identity,
 * norm preserved, llama3 frequency scaling), SwiGLU, MoE routing (softmax, top-k, ties,
 * renormalisation), embedding and row gathers, paged KV writes and causal GQA attention over
 * scattered blocks for two sequences at once. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/ops.h"
#include "cpu/backend_cpu.h"
#include "device/backends.h"
#include "model/kv_cache.h"
#include "model/model_internal.h"

static const qs_ops *ops;

static int setup(void **state)
{
    ops = qs_ops_cpu();
    return ops && qs_ops_for_platform(QS_PLATFORM_CPU, NULL) == ops ? 0 : -1;
}

static void rmsnorm_by_hand(void **state)
{
    float x[8] = {1, 2, 3, 4, -1, 0, 0, 1}, w[4] = {1, 1, 2, 0.5f}, out[8];
    qs_err err;
    assert_int_equal(ops->rmsnorm(out, x, w, 2, 4, 0.0f, &err), 0);
    double r = sqrt(30.0 / 4);
    assert_float_equal(out[0], 1 / r, 1e-6);
    assert_float_equal(out[2], 3 / r * 2, 1e-6);
    assert_float_equal(out[3], 4 / r * 0.5, 1e-6);
    assert_float_equal(out[4], -1 / sqrt(0.5), 1e-6);
    /* fused: residual += x, out = norm(residual) */
    float res[4] = {0, 1, 1, 3}, add[4] = {1, 1, 2, 1};
    assert_int_equal(ops->add_rmsnorm(res, add, out, w, 1, 4, 1e-5f, QS_ACT_NATURAL, &err), 0);
    assert_float_equal(res[1], 2, 0);
    assert_float_equal(out[3], 4 / sqrt(30.0 / 4 + 1e-5) * 0.5, 1e-6);
}

/* The marlin orders (core/act_order.h) move pairs within 128-k stages, every position hit once; the
 * ops that produce a linear's input write it in them, and refuse rows they do not fit. */
static void ordered_outputs(void **state)
{
    enum { D = 256, ROWS = 2 };
    for (int o = QS_ACT_MARLIN_FP8; o <= QS_ACT_MARLIN_FP4; o++) {
        int hits[D] = {0};
        for (int64_t k = 0; k < D; k++) {
            int64_t j = qs_act_position((qs_act_order)o, k);
            assert_true(j >= (k / 128) * 128 && j < (k / 128 + 1) * 128);
            if (k % 2)
                assert_int_equal(j, qs_act_position((qs_act_order)o, k - 1) + 1);
            hits[j]++;
        }
        for (int j = 0; j < D; j++)
            assert_int_equal(hits[j], 1);
    }
    assert_int_not_equal(qs_act_position(QS_ACT_MARLIN_FP8, 8), qs_act_position(QS_ACT_MARLIN_FP4, 8));
    qs_err err;
    float x[ROWS * D], w[D], res_a[ROWS * D], res_b[ROWS * D], nat[ROWS * D], ord[ROWS * D], gu[ROWS * 2 * D];
    for (int i = 0; i < ROWS * D; i++)
        x[i] = sinf(0.37f * (float)i), res_a[i] = res_b[i] = cosf(0.11f * (float)i);
    for (int i = 0; i < D; i++)
        w[i] = 1.0f + 0.01f * (float)(i % 17);
    for (int i = 0; i < ROWS * 2 * D; i++)
        gu[i] = sinf(0.23f * (float)i + 1.0f);
    for (int o = QS_ACT_MARLIN_FP8; o <= QS_ACT_MARLIN_FP4; o++) {
        memcpy(res_b, res_a, sizeof res_a);
        float res_c[ROWS * D];
        memcpy(res_c, res_a, sizeof res_a);
        assert_int_equal(ops->add_rmsnorm(res_b, x, nat, w, ROWS, D, 1e-5f, QS_ACT_NATURAL, &err), 0);
        assert_int_equal(ops->add_rmsnorm(res_c, x, ord, w, ROWS, D, 1e-5f, (qs_act_order)o, &err), 0);
        for (int r = 0; r < ROWS; r++)
            for (int k = 0; k < D; k++) {
                assert_float_equal(ord[r * D + qs_act_position((qs_act_order)o, k)], nat[r * D + k], 0);
                assert_float_equal(res_c[r * D + k], res_b[r * D + k], 0); /* the residual stays natural */
            }
        assert_int_equal(ops->swiglu_gate_up(nat, gu, ROWS, D, QS_ACT_NATURAL, &err), 0);
        assert_int_equal(ops->swiglu_gate_up(ord, gu, ROWS, D, (qs_act_order)o, &err), 0);
        for (int r = 0; r < ROWS; r++)
            for (int k = 0; k < D; k++)
                assert_float_equal(ord[r * D + qs_act_position((qs_act_order)o, k)], nat[r * D + k], 0);
    }
    assert_int_not_equal(ops->add_rmsnorm(res_b, x, ord, w, 1, 100, 1e-5f, QS_ACT_MARLIN_FP8, &err), 0);
    assert_non_null(strstr(err.msg, "activation order"));
    assert_int_not_equal(ops->swiglu_gate_up(ord, gu, 1, 100, QS_ACT_MARLIN_FP4, &err), 0);
}

static void bias_swiglu_embedding_gather(void **state)
{
    qs_err err;
    float y[4] = {1, 2, 3, 4}, b[2] = {10, 20};
    assert_int_equal(ops->add_bias(y, b, 2, 2, &err), 0);
    assert_float_equal(y[3], 24, 0);
    float g[2] = {0, 2}, u[2] = {5, 3}, o[2];
    assert_int_equal(ops->swiglu(o, g, u, 1, 2, &err), 0);
    assert_float_equal(o[0], 0, 0);
    assert_float_equal(o[1], 2 / (1 + exp(-2.0)) * 3, 1e-6);
    float table[6] = {0, 1, 10, 11, 20, 21}, e[6];
    int32_t ids[3] = {2, 0, 2};
    assert_int_equal(ops->embedding(e, table, ids, 3, 2, &err), 0);
    assert_float_equal(e[0], 20, 0);
    assert_float_equal(e[3], 1, 0);
    int32_t rows[2] = {2, 1};
    float gout[4];
    assert_int_equal(ops->gather_rows(gout, e, rows, 2, 2, &err), 0);
    assert_float_equal(gout[1], 21, 0);
    assert_float_equal(gout[2], 0, 0);
}

static void rope_rotate_half(void **state)
{
    qs_err err;
    /* head_dim 4: pairs (0,2) and (1,3); 2 heads at two positions */
    float inv[2] = {1.0f, 0.1f};
    float x[16], orig[16];
    for (int i = 0; i < 16; i++)
        orig[i] = x[i] = (float)(i + 1);
    int32_t pos[2] = {0, 3};
    assert_int_equal(ops->rope(x, pos, inv, 2, 2, 4, &err), 0);
    for (int i = 0; i < 8; i++) /* position 0: identity */
        assert_float_equal(x[i], orig[i], 1e-6);
    /* token 1, head 0: values 9,10,11,12; pair (9,11) rotated by 3 rad, pair (10,12) by 0.3 */
    assert_float_equal(x[8], 9 * cos(3.0) - 11 * sin(3.0), 1e-5);
    assert_float_equal(x[10], 11 * cos(3.0) + 9 * sin(3.0), 1e-5);
    assert_float_equal(x[9], 10 * cos(0.3) - 12 * sin(0.3), 1e-5);
    assert_float_equal(x[11], 12 * cos(0.3) + 10 * sin(0.3), 1e-5);
    /* token 1, head 1 got the same rotation */
    assert_float_equal(x[12], 13 * cos(3.0) - 15 * sin(3.0), 1e-5);
}

static void rope_frequencies(void **state)
{
    qs_model_config mc;
    memset(&mc, 0, sizeof(mc));
    mc.head_dim = 8;
    mc.rope_theta = 10000;
    float f[64];
    qs_rope_inv_freq(&mc, f);
    for (int i = 0; i < 4; i++)
        assert_float_equal(f[i], pow(10000, -2.0 * i / 8), 1e-6 * f[i]);
    /* llama3 (Llama-3.1-8B's values): short wavelengths kept, long ones divided by factor,
     * the middle blended */
    mc.head_dim = 128;
    mc.rope_theta = 500000;
    mc.rope_type = QS_ROPE_LLAMA3;
    mc.rope_factor = 8;
    mc.rope_low_freq_factor = 1;
    mc.rope_high_freq_factor = 4;
    mc.rope_original_max_position = 8192;
    qs_rope_inv_freq(&mc, f);
    assert_float_equal(f[0], 1.0, 1e-7);
    double last = pow(500000, -126.0 / 128);
    assert_float_equal(f[63], last / 8, 1e-4 * last);
    int blended = 0;
    for (int i = 0; i < 64; i++) {
        double base = pow(500000, -2.0 * i / 128), wavelen = 2 * M_PI / base;
        if (wavelen > 2048 && wavelen < 8192) {
            blended++;
            assert_true(f[i] < base * (1 - 1e-6) && f[i] > base / 8 * (1 + 1e-6));
            double smooth = (8192 / wavelen - 1) / 3;
            assert_float_equal(f[i], (1 - smooth) * base / 8 + smooth * base, 1e-4 * base);
        }
    }
    assert_true(blended > 0);
}

static void moe_routing(void **state)
{
    qs_err err;
    float logits[8] = {1, 3, 2, 0, /* token 1: a tie */ 1, 1, 0, -1};
    int32_t ids[4];
    float w[4];
    assert_int_equal(ops->moe_route(logits, ids, w, 2, 4, 2, false, &err), 0);
    double z = exp(1) + exp(3) + exp(2) + exp(0);
    assert_int_equal(ids[0], 1);
    assert_int_equal(ids[1], 2);
    assert_float_equal(w[0], exp(3) / z, 1e-6);
    assert_float_equal(w[1], exp(2) / z, 1e-6);
    assert_int_equal(ids[2], 0); /* ties: the lower expert id first */
    assert_int_equal(ids[3], 1);
    assert_int_equal(ops->moe_route(logits, ids, w, 2, 4, 2, true, &err), 0);
    assert_float_equal(w[0], exp(3) / (exp(3) + exp(2)), 1e-6);
    assert_float_equal(w[0] + w[1], 1, 1e-6);
    assert_float_equal(w[2], 0.5, 1e-6);
    assert_int_equal(ops->moe_route(logits, ids, w, 2, 4, 5, true, &err), -1);
}

/* Naive attention of one query row over contiguous k/v rows [0, n). */
/* Expert parallelism: slots of this rank's experts become local ids, the others weigh 0. */
static void moe_expert_slice(void **state)
{
    qs_err e;
    int32_t ids[6] = {0, 5, 3, 4, 7, 6};
    float w[6] = {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f};
    assert_int_equal(ops->moe_expert_slice(ids, w, 6, 4, 3, &e), 0); /* experts 4..7 */
    int32_t want_ids[6] = {-1, 1, -1, 0, -1, 2};
    float want_w[6] = {0.0f, 0.2f, 0.0f, 0.4f, 0.0f, 0.6f};
    assert_memory_equal(ids, want_ids, sizeof ids);
    assert_memory_equal(w, want_w, sizeof w);
    assert_int_equal(ops->moe_expert_slice(ids, w, 6, 0, 0, &e), -1);
}

static void naive(const float *q, const float *k, const float *v, int n, int hd, int kv_stride, double *out)
{
    double s[64], max = -1e300, sum = 0;
    for (int p = 0; p < n; p++) {
        s[p] = 0;
        for (int i = 0; i < hd; i++)
            s[p] += (double)q[i] * k[p * kv_stride + i];
        s[p] /= sqrt(hd);
        if (s[p] > max)
            max = s[p];
    }
    for (int p = 0; p < n; p++)
        sum += (s[p] = exp(s[p] - max));
    for (int i = 0; i < hd; i++) {
        out[i] = 0;
        for (int p = 0; p < n; p++)
            out[i] += s[p] / sum * v[p * kv_stride + i];
    }
}

/* A one-layer CPU KV cache of `blocks` blocks for kv_heads x head_dim. */
static qs_kv_cache *cpu_cache(int kv_heads, int head_dim, int blocks)
{
    qs_model_config mc;
    memset(&mc, 0, sizeof(mc));
    mc.num_layers = 1;
    mc.num_kv_heads = kv_heads;
    mc.head_dim = head_dim;
    qs_kv_cache *kv;
    qs_err err;
    assert_int_equal(qs_kv_cache_create(&mc, QS_PLATFORM_CPU, blocks, &kv, &err), 0);
    return kv;
}

static void paged_attention_matches_naive(void **state)
{
    enum { H = 4, KVH = 2, HD = 8, L0 = 20, L1 = 35, T = L0 + L1 };
    qs_kv_cache *kv = cpu_cache(KVH, HD, 8);
    qs_err err;
    /* sequence 0: blocks 5, 1; sequence 1: blocks 6, 0, 3 */
    int32_t tables[2 * 3] = {5, 1, 0, 6, 0, 3};
    float *q = malloc(sizeof(float) * T * H * HD), *k = malloc(sizeof(float) * T * KVH * HD);
    float *v = malloc(sizeof(float) * T * KVH * HD), *out = malloc(sizeof(float) * T * H * HD);
    srand(7);
    for (int i = 0; i < T * H * HD; i++)
        q[i] = (float)rand() / RAND_MAX - 0.5f;
    for (int i = 0; i < T * KVH * HD; i++) {
        k[i] = (float)rand() / RAND_MAX - 0.5f;
        v[i] = (float)rand() / RAND_MAX - 0.5f;
    }
    int32_t seq[T], pos[T], slots[T];
    for (int t = 0; t < T; t++) {
        int s = t < L0 ? 0 : 1, p = s ? t - L0 : t;
        seq[t] = s;
        pos[t] = p;
        slots[t] = tables[s * 3 + p / QS_KV_BLOCK_SIZE] * QS_KV_BLOCK_SIZE + p % QS_KV_BLOCK_SIZE;
    }
    qs_attn_batch b = {.n_tokens = T, .n_seqs = 2, .max_blocks = 3, .tok_seq = seq, .tok_pos = pos,
                       .block_tables = tables, .slot_mapping = slots};
    assert_int_equal(ops->kv_write(qs_kv_cache_k(kv, 0), qs_kv_cache_v(kv, 0), k, v, &b, KVH, HD, &err), 0);
    assert_int_equal(ops->attention(out, q, qs_kv_cache_k(kv, 0), qs_kv_cache_v(kv, 0), &b, H, KVH, HD,
                                    (float)(1 / sqrt(HD)), QS_ACT_NATURAL, &err), 0);
    for (int t = 0; t < T; t++) {
        int base = seq[t] ? L0 : 0;
        for (int h = 0; h < H; h++) {
            double want[HD];
            int kvh = h / (H / KVH);
            naive(q + (t * H + h) * HD, k + base * KVH * HD + kvh * HD, v + base * KVH * HD + kvh * HD, pos[t] + 1,
                  HD, KVH * HD, want);
            for (int i = 0; i < HD; i++)
                assert_float_equal(out[(t * H + h) * HD + i], want[i], 1e-5);
        }
    }
    /* sliding window 5: token at position p reads positions p-4..p only */
    b.sliding_window = 5;
    assert_int_equal(ops->attention(out, q, qs_kv_cache_k(kv, 0), qs_kv_cache_v(kv, 0), &b, H, KVH, HD,
                                    (float)(1 / sqrt(HD)), QS_ACT_NATURAL, &err), 0);
    for (int t = 0; t < T; t++) {
        int first = pos[t] + 1 > 5 ? pos[t] + 1 - 5 : 0, base = (seq[t] ? L0 : 0) + first;
        for (int h = 0; h < H; h++) {
            double want[HD];
            int kvh = h / (H / KVH);
            naive(q + (t * H + h) * HD, k + base * KVH * HD + kvh * HD, v + base * KVH * HD + kvh * HD,
                  pos[t] + 1 - first, HD, KVH * HD, want);
            for (int i = 0; i < HD; i++)
                assert_float_equal(out[(t * H + h) * HD + i], want[i], 1e-5);
        }
    }
    assert_int_equal(
        ops->attention(out, q, qs_kv_cache_k(kv, 0), qs_kv_cache_v(kv, 0), &b, 3, 2, HD, 1, QS_ACT_NATURAL, &err), -1);
    /* rows of H * HD = 32 are no whole 128-k stage: the marlin orders are refused */
    assert_int_equal(ops->attention(out, q, qs_kv_cache_k(kv, 0), qs_kv_cache_v(kv, 0), &b, H, KVH, HD, 1,
                                    QS_ACT_MARLIN_FP8, &err),
                     -1);
    assert_non_null(strstr(err.msg, "activation order"));
    free(q);
    free(k);
    free(v);
    free(out);
    qs_kv_cache_free(kv);
}

/* The attention written in o_proj's marlin orders (rows of 8 heads x 16 = one 128-k stage): each
 * ordered row is the natural row with element k moved to qs_act_position(order, k). */
static void paged_attention_ordered_rows(void **state)
{
    enum { H = 8, KVH = 2, HD = 16, T = 21, W = H * HD };
    qs_kv_cache *kv = cpu_cache(KVH, HD, 4);
    qs_err err;
    int32_t tables[2] = {3, 1}, seq[T], pos[T], slots[T];
    static float q[T * W], k[T * KVH * HD], v[T * KVH * HD], nat[T * W], ord[T * W];
    for (int i = 0; i < T * W; i++)
        q[i] = sinf(0.31f * (float)i);
    for (int i = 0; i < T * KVH * HD; i++)
        k[i] = cosf(0.17f * (float)i), v[i] = sinf(0.07f * (float)i + 0.5f);
    for (int t = 0; t < T; t++)
        seq[t] = 0, pos[t] = t, slots[t] = tables[t / QS_KV_BLOCK_SIZE] * QS_KV_BLOCK_SIZE + t % QS_KV_BLOCK_SIZE;
    qs_attn_batch b = {.n_tokens = T, .n_seqs = 1, .max_blocks = 2, .tok_seq = seq, .tok_pos = pos,
                       .block_tables = tables, .slot_mapping = slots};
    void *kc = qs_kv_cache_k(kv, 0), *vc = qs_kv_cache_v(kv, 0);
    assert_int_equal(ops->kv_write(kc, vc, k, v, &b, KVH, HD, &err), 0);
    assert_int_equal(ops->attention(nat, q, kc, vc, &b, H, KVH, HD, 0.25f, QS_ACT_NATURAL, &err), 0);
    for (int o = QS_ACT_MARLIN_FP8; o <= QS_ACT_MARLIN_FP4; o++) {
        assert_int_equal(ops->attention(ord, q, kc, vc, &b, H, KVH, HD, 0.25f, (qs_act_order)o, &err), 0);
        for (int t = 0; t < T; t++)
            for (int i = 0; i < W; i++)
                assert_float_equal(ord[t * W + qs_act_position((qs_act_order)o, i)], nat[t * W + i], 0);
    }
    qs_kv_cache_free(kv);
}

static void memory_and_uploads(void **state)
{
    qs_err err;
    uint16_t bf[3] = {qs_f32_to_bf16(1.5f), qs_f32_to_bf16(-2.0f), qs_f32_to_bf16(0.25f)};
    qs_tensor t = {.name = "w", .dtype = QS_DT_BF16, .ndim = 1, .shape = {3}, .numel = 3, .data = bf,
                   .nbytes = sizeof(bf)};
    float *w = ops->upload_tensor(&t, &err), back[3];
    assert_non_null(w);
    assert_int_equal(ops->acts_to_host_f32(back, w, 3, &err), 0);
    assert_float_equal(back[1], -2.0f, 0);
    ops->free(w);
    t.dtype = QS_DT_I32;
    assert_null(ops->upload_tensor(&t, &err));
    assert_non_null(strstr(err.msg, "w"));
    int32_t *d = ops->alloc(16, &err), h[4] = {1, 2, 3, 4}, h2[4];
    assert_int_equal(ops->copy_to_device(d, h, 16, &err), 0);
    assert_int_equal(ops->copy_to_host(h2, d, 16, &err), 0);
    assert_memory_equal(h, h2, 16);
    ops->free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rmsnorm_by_hand),        cmocka_unit_test(ordered_outputs),
        cmocka_unit_test(bias_swiglu_embedding_gather),
        cmocka_unit_test(rope_rotate_half),       cmocka_unit_test(rope_frequencies),
        cmocka_unit_test(moe_routing),            cmocka_unit_test(moe_expert_slice),
        cmocka_unit_test(paged_attention_matches_naive),
        cmocka_unit_test(paged_attention_ordered_rows),
        cmocka_unit_test(memory_and_uploads),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
