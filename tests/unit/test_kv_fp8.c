/* test_kv_fp8.c — the FP8 (and bf16) KV cache of the CPU reference. The ops: kv_write stores
 * E4M3(x / scale) (saturating at ±448 · scale) and attention over the FP8 cache equals, bit for
 * bit, attention over a float32 cache holding the dequantized values; bf16 likewise. The cache:
 * FP8 holds twice the blocks of bf16 in the same bytes. The scales: both checkpoint layouts
 * (compressed-tensors self_attn.k_scale, ModelOpt k_proj.k_scale) are read, missing ones are 1.0
 * and a bad one is an error. Accuracy: on stories260K and tiny transformers-golden models, a
 * teacher-forced greedy run with an FP8 KV cache (scales 1.0, as vLLM without checkpoint scales)
 * keeps the BF16-KV run's greedy token at every step whose BF16 margin is clear, and the
 * logprob drift of the chosen tokens is printed. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "config/config.h"
#include "core/fp8.h"
#include "core/ops.h"
#include "core/tensor.h"
#include "device/backends.h"
#include "model/kv_cache.h"
#include "io/safetensors_writer.h"
#include "model/kv_scales.h"
#include "model/model.h"
#include "util/fileio.h"

#include "test_helpers.h"

static float frand(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return (float)((*s >> 8) & 0xffff) / 32768.0f - 1.0f;
}

enum { HEADS = 4, KV_HEADS = 2, HD = 16, NB = 8 };

/* Two sequences (5 and 20 tokens) through kv_write and attention on the cache type given. */
static void run_attention(const qs_ops *ops, qs_kv_dtype dt, float ks, float vs, const float *q, const float *k,
                          const float *v, void *kc, void *vc, float *out)
{
    static const int32_t tables[2 * 2] = {5, 1, 2, 7};
    int32_t seq[25], pos[25], slots[25];
    for (int t = 0; t < 25; t++) {
        seq[t] = t < 5 ? 0 : 1;
        pos[t] = t < 5 ? t : t - 5;
        slots[t] = tables[seq[t] * 2 + pos[t] / QS_KV_BLOCK_SIZE] * QS_KV_BLOCK_SIZE + pos[t] % QS_KV_BLOCK_SIZE;
    }
    qs_attn_batch b = {.n_tokens = 25, .n_seqs = 2, .max_blocks = 2, .tok_seq = seq, .tok_pos = pos,
                       .block_tables = tables, .slot_mapping = slots, .kv_dtype = dt, .k_scale = ks, .v_scale = vs};
    qs_err err;
    assert_int_equal(ops->kv_write(kc, vc, k, v, &b, KV_HEADS, HD, &err), 0);
    assert_int_equal(ops->attention(out, q, kc, vc, &b, HEADS, KV_HEADS, HD, 0.25f, QS_ACT_NATURAL, &err), 0);
}

static void test_fp8_and_bf16_ops_match_dequantized_cache(void **state)
{
    (void)state;
    const qs_ops *ops = qs_ops_for_platform(QS_PLATFORM_CPU, NULL);
    assert_non_null(ops);
    enum { T = 25, KVROW = KV_HEADS * HD, QROW = HEADS * HD, CACHE = NB * KV_HEADS * QS_KV_BLOCK_SIZE * HD };
    static float q[T * QROW], k[T * KVROW], v[T * KVROW], out[T * QROW], ref[T * QROW];
    static float fk[CACHE], fv[CACHE];
    static uint8_t ck[CACHE], cv[CACHE];
    static uint16_t bk[CACHE], bv[CACHE];
    uint32_t s = 99;
    const float ks = 0.004f, vs = 0.02f;
    for (int i = 0; i < T * QROW; i++)
        q[i] = frand(&s);
    for (int i = 0; i < T * KVROW; i++) {
        k[i] = 3.0f * frand(&s);
        v[i] = 2.0f * frand(&s);
    }
    k[3] = 1000.0f; /* beyond 448 * 0.004: saturates */
    v[5] = -50.0f;
    memset(ck, 0xAA, sizeof ck);
    memset(cv, 0xAA, sizeof cv);
    run_attention(ops, QS_KV_FP8_E4M3, ks, vs, q, k, v, ck, cv, out);
    /* every written element is E4M3(x / scale); the rest of the cache is untouched */
    int written = 0;
    for (int i = 0; i < CACHE; i++) {
        fk[i] = qs_e4m3_to_f32(ck[i]) * ks;
        fv[i] = qs_e4m3_to_f32(cv[i]) * vs;
        written += ck[i] != 0xAA;
    }
    assert_true(written > 300);
    assert_int_equal(ck[(5 * KV_HEADS + 0) * QS_KV_BLOCK_SIZE * HD + 3], qs_f32_to_e4m3(1000.0f / ks));
    assert_true(fabsf(qs_e4m3_to_f32(ck[(5 * KV_HEADS + 0) * QS_KV_BLOCK_SIZE * HD + 3]) - QS_E4M3_MAX) == 0);
    assert_int_equal(cv[(5 * KV_HEADS + 0) * QS_KV_BLOCK_SIZE * HD + 5], qs_f32_to_e4m3(-50.0f / vs));
    /* attention over the FP8 cache == attention over its dequantized values in float32 */
    static const int32_t tables[4] = {5, 1, 2, 7};
    int32_t seq[T], pos[T], slots[T];
    for (int t = 0; t < T; t++) {
        seq[t] = t < 5 ? 0 : 1;
        pos[t] = t < 5 ? t : t - 5;
        slots[t] = -1; /* nothing written: the caches already hold the dequantized values */
    }
    qs_attn_batch b = {.n_tokens = T, .n_seqs = 2, .max_blocks = 2, .tok_seq = seq, .tok_pos = pos,
                       .block_tables = tables, .slot_mapping = slots};
    qs_err err;
    assert_int_equal(ops->attention(ref, q, fk, fv, &b, HEADS, KV_HEADS, HD, 0.25f, QS_ACT_NATURAL, &err), 0);
    assert_memory_equal(out, ref, sizeof out);
    /* and it differs from float32 KV by the quantization only */
    static float fk32[CACHE], fv32[CACHE], out32[T * QROW];
    run_attention(ops, QS_KV_ACT, 0, 0, q, k, v, fk32, fv32, out32);
    double max_err = 0;
    for (int i = 0; i < T * QROW; i++) {
        assert_false(isnan(out[i]));
        max_err = fmax(max_err, fabs((double)out[i] - out32[i]));
    }
    assert_true(max_err > 0); /* quantization shows (the saturated outlier most) */

    /* bf16: round to nearest even on write, the same reads */
    run_attention(ops, QS_KV_BF16, 0, 0, q, k, v, bk, bv, out);
    for (int i = 0; i < CACHE; i++) {
        fk[i] = qs_bf16_to_f32(bk[i]);
        fv[i] = qs_bf16_to_f32(bv[i]);
    }
    assert_int_equal(ops->attention(ref, q, fk, fv, &b, HEADS, KV_HEADS, HD, 0.25f, QS_ACT_NATURAL, &err), 0);
    assert_memory_equal(out, ref, sizeof out);
}

static void test_cache_sizes_and_names(void **state)
{
    (void)state;
    qs_model_config mc = {0};
    mc.num_layers = 4;
    mc.num_kv_heads = 8;
    mc.head_dim = 128;
    size_t bytes = (size_t)1 << 30;
    int f32 = qs_kv_cache_blocks_for_bytes_dtype(&mc, QS_PLATFORM_CPU, QS_KV_ACT, bytes);
    int bf16 = qs_kv_cache_blocks_for_bytes_dtype(&mc, QS_PLATFORM_CPU, QS_KV_BF16, bytes);
    int fp8 = qs_kv_cache_blocks_for_bytes_dtype(&mc, QS_PLATFORM_CPU, QS_KV_FP8_E4M3, bytes);
    assert_int_equal(bf16, 2 * f32);
    assert_int_equal(fp8, 2 * bf16);
    qs_kv_dtype d;
    assert_int_equal(qs_kv_dtype_from_name("fp8", &d), 0);
    assert_int_equal(d, QS_KV_FP8_E4M3);
    assert_int_equal(qs_kv_dtype_from_name("fp8_e4m3", &d), 0);
    assert_int_equal(d, QS_KV_FP8_E4M3);
    assert_int_equal(qs_kv_dtype_from_name("auto", &d), 0);
    assert_int_equal(d, QS_KV_ACT);
    assert_int_equal(qs_kv_dtype_from_name("fp16", &d), -1);
    assert_string_equal(qs_kv_dtype_name(QS_KV_FP8_E4M3, QS_PLATFORM_CPU), "fp8_e4m3");
    assert_string_equal(qs_kv_dtype_name(QS_KV_ACT, QS_PLATFORM_CPU), "float32");
    qs_kv_cache *kv;
    qs_err err;
    float ks[4] = {0.5f, 1, 2, 4}, vs[4] = {1, 1, 1, 0.25f};
    assert_int_equal(qs_kv_cache_create_dtype(&mc, QS_PLATFORM_CPU, 4, QS_KV_FP8_E4M3, ks, vs, &kv, &err), 0);
    assert_int_equal(qs_kv_cache_dtype(kv), QS_KV_FP8_E4M3);
    qs_attn_batch b = {0};
    qs_kv_attn_params(kv, 3, &b);
    assert_true(b.kv_dtype == QS_KV_FP8_E4M3 && b.k_scale == 4.0f && b.v_scale == 0.25f);
    qs_kv_cache_free(kv);
    ks[2] = 0;
    assert_int_equal(qs_kv_cache_create_dtype(&mc, QS_PLATFORM_CPU, 4, QS_KV_FP8_E4M3, ks, vs, &kv, &err), -1);
    assert_non_null(strstr(err.msg, "layer 2"));
}

/* A checkpoint folder holding only KV scale tensors (the loader needs nothing else). */
static void write_scales(const char *dir, const char *k_fmt, const char *v_fmt, int layers, float bad_layer1)
{
    qs_st_writer *w = qs_st_writer_new();
    qs_err err;
    for (int l = 0; l < layers; l++) {
        char kn[128], vn[128];
        snprintf(kn, sizeof kn, k_fmt, l);
        snprintf(vn, sizeof vn, v_fmt, l);
        float kv[2] = {0.01f * (float)(l + 1), l == 1 && bad_layer1 != 0 ? bad_layer1 : 0.02f * (float)(l + 1)};
        assert_int_equal(qs_st_writer_add_copy(w, kn, QS_DT_F32, 0, NULL, &kv[0], 4, &err), 0);
        assert_int_equal(qs_st_writer_add_copy(w, vn, QS_DT_F32, 0, NULL, &kv[1], 4, &err), 0);
    }
    assert_int_equal(qs_st_writer_write_sharded(w, dir, 0, &err), 0);
    qs_st_writer_free(w);
}

static void test_scales_from_both_layouts(void **state)
{
    (void)state;
    char dir[] = "/tmp/qs-kv-scales-XXXXXX";
    assert_non_null(mkdtemp(dir));
    qs_model_config mc = {0};
    mc.num_layers = 3;
    float k[3], v[3];
    char src[512];
    qs_err err;
    /* compressed-tensors names, two of three layers, the scheme declared in the config */
    write_scales(dir, "model.layers.%d.self_attn.k_scale", "model.layers.%d.self_attn.v_scale", 2, 0);
    mc.quantization_config_json = (char *)"{\"quant_method\":\"compressed-tensors\",\"kv_cache_scheme\":{\"num_bits\":8}}";
    assert_int_equal(qs_kv_scales_load(dir, &mc, k, v, src, sizeof src, &err), 2);
    assert_true(k[0] == 0.01f && v[1] == 0.04f && k[2] == 1.0f && v[2] == 1.0f);
    assert_non_null(strstr(src, "self_attn.k_scale/v_scale"));
    assert_non_null(strstr(src, "compressed-tensors kv_cache_scheme"));
    assert_non_null(strstr(src, "2 of 3 layers (1.0 for the rest)"));
    /* ModelOpt names */
    write_scales(dir, "model.layers.%d.self_attn.k_proj.k_scale", "model.layers.%d.self_attn.v_proj.v_scale", 3, 0);
    mc.quantization_config_json = (char *)"{\"quant_method\":\"modelopt\",\"kv_cache_quant_algo\":\"FP8\"}";
    assert_int_equal(qs_kv_scales_load(dir, &mc, k, v, src, sizeof src, &err), 3);
    assert_true(k[2] == 0.03f && v[2] == 0.06f);
    assert_non_null(strstr(src, "k_proj.k_scale/v_proj.v_scale"));
    assert_non_null(strstr(src, "ModelOpt"));
    assert_null(strstr(src, "1.0 for the rest"));
    /* a non-positive scale names the tensor */
    write_scales(dir, "model.layers.%d.self_attn.k_scale", "model.layers.%d.self_attn.v_scale", 2, -1.0f);
    assert_int_equal(qs_kv_scales_load(dir, &mc, k, v, src, sizeof src, &err), -1);
    assert_non_null(strstr(err.msg, "model.layers.1.self_attn.v_scale"));
    /* none at all: 1.0 */
    write_scales(dir, "other.%d.a", "other.%d.b", 3, 0);
    mc.quantization_config_json = NULL;
    assert_int_equal(qs_kv_scales_load(dir, &mc, k, v, src, sizeof src, &err), 0);
    assert_true(k[0] == 1.0f && v[2] == 1.0f);
    assert_non_null(strstr(src, "1.0 for every layer"));
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

/* ---------------- accuracy against BF16 KV ---------------- */

enum { PROMPT = 24, STEPS = 40 };
/* A greedy step counts as clear when BF16 KV's top logit leads the next by more than this share
 * of its size (at least 1). FP8 E4M3 with scale 1.0 moves these tiny models' logits by up to
 * ~0.1, and a routed MoE's by up to ~0.5 where an expert choice flips: Mixtral may lose a clear
 * step to such a flip (2 of 11 here), every dense model and Qwen3-MoE keep them all. */
#define CLEAR_MARGIN 0.1f

/* Teacher-forced run: prefill prompt, then feed tokens[PROMPT + i]; logits[i] after each. With
 * tokens NULL-filled (greedy), the argmax is appended. */
static void forced_run(qs_model *m, qs_kv_dtype dt, int32_t *tokens, bool greedy, float *logits, int vocab)
{
    const qs_model_config *mc = qs_model_get_config(m);
    qs_kv_cache *kv;
    qs_err err;
    int n_blocks = (PROMPT + STEPS + QS_KV_BLOCK_SIZE) / QS_KV_BLOCK_SIZE;
    assert_int_equal(qs_kv_cache_create_dtype(mc, QS_PLATFORM_CPU, n_blocks, dt, NULL, NULL, &kv, &err), 0);
    int32_t table[16];
    for (int i = 0; i < n_blocks; i++)
        table[i] = i;
    qs_seq_step p = {.tokens = tokens, .n_tokens = PROMPT, .start_pos = 0, .block_table = table,
                     .n_blocks = n_blocks, .want_logits = true};
    if (qs_model_forward(m, kv, &p, 1, logits, &err))
        fail_msg("prefill: %s", err.msg);
    for (int s = 0; s < STEPS - 1; s++) {
        float *row = logits + (size_t)s * vocab;
        if (greedy)
            tokens[PROMPT + s] = qs_test_argmax(row, vocab);
        qs_seq_step d = {.tokens = &tokens[PROMPT + s], .n_tokens = 1, .start_pos = PROMPT + s, .block_table = table,
                         .n_blocks = n_blocks, .want_logits = true};
        if (qs_model_forward(m, kv, &d, 1, row + vocab, &err))
            fail_msg("decode: %s", err.msg);
    }
    if (greedy)
        tokens[PROMPT + STEPS - 1] = qs_test_argmax(logits + (size_t)(STEPS - 1) * vocab, vocab);
    qs_kv_cache_free(kv);
}

static double logprob_of(const float *row, int vocab, int tok)
{
    double mx = row[0], sum = 0;
    for (int i = 1; i < vocab; i++)
        mx = fmax(mx, row[i]);
    for (int i = 0; i < vocab; i++)
        sum += exp((double)row[i] - mx);
    return (double)row[tok] - mx - log(sum);
}

static void check_accuracy(const char *name, const char *dir, int min_kept_pct)
{
    qs_config cfg;
    qs_config_defaults(&cfg);
    snprintf(cfg.model_dir, sizeof cfg.model_dir, "%s", dir);
    cfg.device = QS_DEVICE_CPU;
    qs_model *m;
    qs_err err;
    if (qs_model_load(&cfg, &m, &err))
        fail_msg("%s: load: %s", name, err.msg);
    int vocab = qs_model_get_config(m)->vocab_size;
    int32_t tokens[PROMPT + STEPS];
    uint32_t s = 5;
    for (int i = 0; i < PROMPT; i++) {
        s = s * 1664525u + 1013904223u;
        tokens[i] = 3 + (int32_t)((s >> 8) % (uint32_t)(vocab - 3));
    }
    float *ref = malloc(sizeof(float) * (size_t)vocab * STEPS), *fp8 = malloc(sizeof(float) * (size_t)vocab * STEPS);
    forced_run(m, QS_KV_BF16, tokens, true, ref, vocab); /* BF16 KV, greedy: the reference tokens */
    forced_run(m, QS_KV_FP8_E4M3, tokens, false, fp8, vocab);
    int clear = 0, kept = 0;
    double drift = 0, drift_sum = 0;
    for (int st = 0; st < STEPS; st++) {
        const float *r = ref + (size_t)st * vocab, *f = fp8 + (size_t)st * vocab;
        int top = qs_test_argmax(r, vocab);
        float second = -INFINITY;
        for (int i = 0; i < vocab; i++)
            if (i != top && r[i] > second)
                second = r[i];
        double d = fabs(logprob_of(r, vocab, top) - logprob_of(f, vocab, top));
        drift = fmax(drift, d);
        drift_sum += d;
        if (r[top] - second > CLEAR_MARGIN * fmaxf(1.0f, fabsf(r[top]))) {
            clear++;
            bool same = qs_test_argmax(f, vocab) == top;
            kept += same;
            if (!same)
                printf("%s: step %d: BF16 KV picks %d by a margin of %.4f (logit %.4f); FP8 KV picks %d\n", name, st, top,
                       (double)(r[top] - second), (double)r[top], qs_test_argmax(f, vocab));
        }
    }
    printf("%s: FP8 KV (scales 1.0) vs BF16 KV: %d of %d clear-margin greedy steps kept; logprob drift of the greedy "
           "token: max %.4f, mean %.4f\n",
           name, kept, clear, drift, drift_sum / STEPS);
    assert_true(clear >= 10);
    assert_true(100 * kept >= min_kept_pct * clear);
    free(ref);
    free(fp8);
    qs_model_free(m);
}

typedef struct {
    const char *name;
    int min_kept_pct;
} golden_case;

static void accuracy_golden(void **state)
{
    const golden_case *gc = *state;
    const char *name = gc->name;
    char dir[512], cfg_path[600];
    snprintf(dir, sizeof dir, "tests/data/hf-goldens/%s", name);
    snprintf(cfg_path, sizeof cfg_path, "%s/config.json", dir);
    if (!qs_file_exists(cfg_path)) {
        printf("skip %s: %s not found (run from the repository root)\n", name, cfg_path);
        skip();
    }
    check_accuracy(name, dir, gc->min_kept_pct);
}

static void accuracy_stories(void **state)
{
    (void)state;
    char dir[256];
    int made = qs_test_stories_make("kv-fp8", dir, sizeof dir, NULL);
    if (made == 0)
        skip();
    assert_int_equal(made, 1);
    check_accuracy("stories260K", dir, 100);
    qs_test_stories_remove(dir);
}

static const golden_case CASES[] = {
    {"llama", 100}, {"mistral_sw", 100}, {"qwen2", 100}, {"qwen3", 100}, {"qwen3_moe", 100},
    {"mixtral", 80}, /* expert routing flips: see CLEAR_MARGIN */
};
#define GOLDEN(i) cmocka_unit_test_prestate(accuracy_golden, (void *)&CASES[i])

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fp8_and_bf16_ops_match_dequantized_cache),
        cmocka_unit_test(test_cache_sizes_and_names),
        cmocka_unit_test(test_scales_from_both_layouts),
        cmocka_unit_test(accuracy_stories),
        GOLDEN(0), GOLDEN(1), GOLDEN(2), GOLDEN(3), GOLDEN(4), GOLDEN(5),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
