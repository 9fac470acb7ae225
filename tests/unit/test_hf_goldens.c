/* test_hf_goldens.c — the forward pass against Hugging Face transformers on tiny random models of
 * the six architectures (tests/data/hf-goldens/ARCH[-bf16], made by scripts/make-hf-goldens.py):
 * the prompt's last logits within 1e-3 relative of transformers in float32 (also for the BF16
 * weights, which both compute in float32), within 2e-2 of transformers' bfloat16 compute, and the
 * 24 greedy tokens equal wherever the reference's top-1/top-2 margin is clear (> 1e-3 relative),
 * decoding with the reference's tokens fed back so one unclear step cannot derail the rest.
 * Checkpoints quantized by `qserve quantize` (-fp8: W8A8 per-channel / per-token, -nvfp4a16:
 * NVFP4 weight-only) are compared with transformers on their dequantized weights; -fp8a16 is the
 * same FP8 checkpoint declared weight-only (input_activations null), which must then match to
 * 1e-3 like every float32-activation model, proving the FP8 weights decode exactly. W8A8's looser
 * bound is the FP8 rounding of the activations (3 mantissa bits), which the reference lacks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "model/kv_cache.h"
#include "model/model.h"
#include "util/fileio.h"

#include "test_helpers.h"

#define GOLDEN_ROOT "tests/data/hf-goldens"

static double rel_err(const float *got, const cJSON *want, int n)
{
    double max_diff = 0, max_ref = 0;
    for (int i = 0; i < n; i++) {
        double w = cJSON_GetArrayItem(want, i)->valuedouble;
        double d = fabs(got[i] - w);
        if (d > max_diff)
            max_diff = d;
        if (fabs(w) > max_ref)
            max_ref = fabs(w);
    }
    return max_diff / (max_ref > 0 ? max_ref : 1);
}

/* How close a model must come: F32/BF16 weights and weight-only quantized ones compute in float32
 * exactly as transformers does on the (dequantized) weights; W8A8 models also quantize their
 * activations to FP8 per token, which transformers' dequantized reference does not. */
typedef struct tolerance {
    double logits;     /* max |diff| / max |ref| of the last logits */
    double margin;     /* greedy tokens must match where (top1 - top2) / |top1| exceeds this */
} tolerance;

static void check_prompt(qs_model *m, const cJSON *p, const char *name, bool bf16, tolerance tol, int *clear,
                         int *unclear)
{
    const qs_model_config *mc = qs_model_get_config(m);
    const cJSON *ids = cJSON_GetObjectItem(p, "ids"), *greedy = cJSON_GetObjectItem(p, "greedy");
    const cJSON *top1 = cJSON_GetObjectItem(p, "top1"), *top2 = cJSON_GetObjectItem(p, "top2");
    int n_prompt = cJSON_GetArraySize(ids), n_greedy = cJSON_GetArraySize(greedy);
    int total = n_prompt + n_greedy;
    qs_kv_cache *kv;
    qs_err err;
    int n_blocks = (total + QS_KV_BLOCK_SIZE - 1) / QS_KV_BLOCK_SIZE;
    assert_int_equal(qs_kv_cache_create(mc, QS_PLATFORM_CPU, n_blocks, &kv, &err), 0);
    int32_t *table = malloc(sizeof(int32_t) * (size_t)n_blocks), *toks = malloc(sizeof(int32_t) * (size_t)total);
    float *logits = malloc(sizeof(float) * (size_t)mc->vocab_size);
    for (int i = 0; i < n_blocks; i++)
        table[i] = qs_kv_cache_alloc(kv);
    for (int i = 0; i < n_prompt; i++)
        toks[i] = cJSON_GetArrayItem(ids, i)->valueint;
    qs_seq_step s = {.tokens = toks, .n_tokens = n_prompt, .block_table = table, .n_blocks = n_blocks,
                     .want_logits = true};
    if (qs_model_forward(m, kv, &s, 1, logits, &err) != 0)
        fail_msg("%s: forward: %s", name, err.msg);
    double e = rel_err(logits, cJSON_GetObjectItem(p, "last_logits"), mc->vocab_size);
    if (e > tol.logits)
        fail_msg("%s: prompt of %d tokens: last logits differ from transformers (float32) by %.2e relative "
                 "(allowed %.0e)", name, n_prompt, e, tol.logits);
    const cJSON *bf = cJSON_GetObjectItem(p, "last_logits_bf16_compute");
    if (bf16 && bf) {
        double eb = rel_err(logits, bf, mc->vocab_size);
        if (eb > 2e-2)
            fail_msg("%s: last logits differ from transformers (bfloat16 compute) by %.2e relative", name, eb);
    }
    for (int step = 0; step < n_greedy; step++) {
        int want = cJSON_GetArrayItem(greedy, step)->valueint;
        double t1 = cJSON_GetArrayItem(top1, step)->valuedouble, t2 = cJSON_GetArrayItem(top2, step)->valuedouble;
        double scale = fmax(fmax(fabs(t1), fabs(t2)), 1e-6);
        if ((t1 - t2) / scale > tol.margin) {
            (*clear)++;
            if (qs_test_argmax(logits, mc->vocab_size) != want)
                fail_msg("%s: greedy step %d: got token %d, transformers %d (margin %.2e)", name, step,
                         qs_test_argmax(logits, mc->vocab_size), want, (t1 - t2) / scale);
        } else {
            (*unclear)++;
        }
        if (step + 1 == n_greedy)
            break;
        toks[n_prompt + step] = want;
        qs_seq_step d = {.tokens = &toks[n_prompt + step], .n_tokens = 1, .start_pos = n_prompt + step,
                         .block_table = table, .n_blocks = n_blocks, .want_logits = true};
        if (qs_model_forward(m, kv, &d, 1, logits, &err) != 0)
            fail_msg("%s: decode: %s", name, err.msg);
    }
    free(table);
    free(toks);
    free(logits);
    qs_kv_cache_free(kv);
}

static void golden_model(void **state)
{
    const char *name = *state;
    char dir[512], path[600];
    snprintf(dir, sizeof(dir), "%s/%s", GOLDEN_ROOT, name);
    qs_path_join(path, sizeof(path), dir, "golden.json");
    if (!qs_file_exists(path)) {
        printf("skip %s: %s not found (run from the repository root)\n", name, path);
        skip();
    }
    char *text;
    qs_err err;
    assert_int_equal(qs_read_file(path, &text, NULL, &err), 0);
    cJSON *g = cJSON_Parse(text);
    free(text);
    assert_non_null(g);
    qs_config cfg;
    qs_config_defaults(&cfg);
    snprintf(cfg.model_dir, sizeof(cfg.model_dir), "%s", dir);
    cfg.device = QS_DEVICE_CPU;
    qs_model *m;
    if (qs_model_load(&cfg, &m, &err) != 0)
        fail_msg("%s: load: %s", name, err.msg);
    bool bf16 = strstr(name, "-bf16") != NULL;
    tolerance tol = {1e-3, 1e-3};
    if (strstr(name, "-fp8") && !strstr(name, "-fp8a16")) /* W8A8: activations FP8 per token */
        tol = (tolerance){1.5e-1, 1e-1};
    int clear = 0, unclear = 0;
    const cJSON *p;
    cJSON_ArrayForEach(p, cJSON_GetObjectItem(g, "prompts")) check_prompt(m, p, name, bf16, tol, &clear, &unclear);
    printf("%s: last logits within %.1e; %d greedy steps with a clear margin matched, %d unclear skipped\n", name, tol.logits, clear, unclear);
    assert_true(clear >= 20); /* the check must not be vacuous: 3 prompts x 24 steps = 72 */
    qs_model_free(m);
    cJSON_Delete(g);
}

#define GOLDEN(n) cmocka_unit_test_prestate(golden_model, (void *)n)

int main(void)
{
    const struct CMUnitTest tests[] = {
        GOLDEN("llama"),     GOLDEN("llama-bf16"),     GOLDEN("mistral"), GOLDEN("mistral-bf16"),
        GOLDEN("mistral_sw"), GOLDEN("mistral_sw-bf16"), /* sliding_window 12 < the 40-token prompt */
        GOLDEN("qwen2"),     GOLDEN("qwen2-bf16"),     GOLDEN("qwen3"),   GOLDEN("qwen3-bf16"),
        GOLDEN("qwen3_moe"), GOLDEN("qwen3_moe-bf16"), GOLDEN("mixtral"), GOLDEN("mixtral-bf16"),
        /* quantized by `qserve quantize`; references on the dequantized weights */
        GOLDEN("llama-fp8"), GOLDEN("llama-fp8a16"), GOLDEN("llama-nvfp4a16"), GOLDEN("qwen3_moe-fp8"),
        GOLDEN("qwen3_moe-fp8a16"), GOLDEN("mixtral-nvfp4a16"),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
