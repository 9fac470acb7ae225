/* test_model_golden.c — the forward pass on a real trained model: stories260K converted to HF
 * format by build/convert-llama2c must reproduce llama2.c's greedy 200 tokens exactly, and a
 * batched step (several sequences, chunked prefill and decode mixed, scattered KV blocks) must
 * give the same logits as running each sequence alone. The converted tokenizer.json must encode
 * text exactly as llama2.c does (dummy-prefix space, byte fallback, score-greedy merges: written
 * out below from llama2.c's description) and decode back to it. Skips when ../shared/data is
 * absent. */
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

#include "config/config.h"
#include "model/kv_cache.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"
#include "util/fileio.h"

#include "test_helpers.h"

static char model_dir[256];
static qs_model *model;
static int golden[200];

static int setup(void **state)
{
    int made = qs_test_stories_make("golden", model_dir, sizeof model_dir, golden);
    if (made <= 0)
        return made;
    qs_config cfg;
    qs_config_defaults(&cfg);
    snprintf(cfg.model_dir, sizeof(cfg.model_dir), "%s", model_dir);
    cfg.device = QS_DEVICE_CPU;
    qs_err err;
    if (qs_model_load(&cfg, &model, &err) != 0) {
        printf("load: %s\n", err.msg);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    qs_model_free(model);
    return qs_test_stories_remove(model_dir);
}

static void greedy_200_matches_llama2c(void **state)
{
    if (!model)
        skip();
    const qs_model_config *mc = qs_model_get_config(model);
    qs_kv_cache *kv;
    qs_err err;
    assert_int_equal(qs_kv_cache_create(mc, QS_PLATFORM_CPU, 16, &kv, &err), 0);
    int32_t table[16];
    for (int i = 0; i < 16; i++) /* scattered, reversed blocks: the table, not the order, decides */
        table[i] = qs_kv_cache_alloc(kv);
    for (int i = 0; i < 8; i++) {
        int32_t t = table[i];
        table[i] = table[15 - i];
        table[15 - i] = t;
    }
    float *logits = malloc(sizeof(float) * (size_t)mc->vocab_size);
    int32_t tok = 1;
    for (int pos = 0; pos < 200; pos++) {
        qs_seq_step s = {.tokens = &tok, .n_tokens = 1, .start_pos = pos, .block_table = table,
                         .n_blocks = pos / 16 + 1, .want_logits = true};
        assert_int_equal(qs_model_forward(model, kv, &s, 1, logits, &err), 0);
        tok = qs_test_argmax(logits, mc->vocab_size);
        if (tok != golden[pos])
            fail_msg("position %d: got %d, golden %d", pos, tok, golden[pos]);
    }
    free(logits);
    qs_kv_cache_free(kv);
}

/* Runs tokens[0..n) of one sequence in one prefill, returns the last logits. */
static void run_alone(const int32_t *tokens, int n, float *logits)
{
    const qs_model_config *mc = qs_model_get_config(model);
    qs_kv_cache *kv;
    qs_err err;
    assert_int_equal(qs_kv_cache_create(mc, QS_PLATFORM_CPU, 8, &kv, &err), 0);
    int32_t table[8];
    for (int i = 0; i < 8; i++)
        table[i] = qs_kv_cache_alloc(kv);
    qs_seq_step s = {.tokens = tokens, .n_tokens = n, .start_pos = 0, .block_table = table,
                     .n_blocks = (n + 15) / 16, .want_logits = true};
    assert_int_equal(qs_model_forward(model, kv, &s, 1, logits, &err), 0);
    qs_kv_cache_free(kv);
}

static void batched_step_equals_single_runs(void **state)
{
    if (!model)
        skip();
    const qs_model_config *mc = qs_model_get_config(model);
    int V = mc->vocab_size;
    int32_t seq[3][60];
    for (int s = 0; s < 3; s++) {
        seq[s][0] = 1;
        for (int i = 1; i < 60; i++)
            seq[s][i] = golden[(i * (s + 1) + 7 * s) % 200];
    }
    /* sequence lengths after the batched step: A 41 (prefill 23 then chunk of 18), B 37 (prefill
     * 36, then one decode token), C 20 (a single prefill in the batched step) */
    int len[3] = {41, 37, 20};
    float *want = malloc(sizeof(float) * 3 * V), *got = malloc(sizeof(float) * 3 * V);
    for (int s = 0; s < 3; s++)
        run_alone(seq[s], len[s], want + s * V);

    qs_kv_cache *kv;
    qs_err err;
    assert_int_equal(qs_kv_cache_create(mc, QS_PLATFORM_CPU, 12, &kv, &err), 0);
    int32_t tab[3][3];
    for (int b = 0; b < 3; b++) /* interleaved block ids across sequences */
        for (int s = 0; s < 3; s++)
            tab[s][b] = qs_kv_cache_alloc(kv);
    qs_seq_step first[2] = {
        {.tokens = seq[0], .n_tokens = 23, .start_pos = 0, .block_table = tab[0], .n_blocks = 2, .want_logits = false},
        {.tokens = seq[1], .n_tokens = 36, .start_pos = 0, .block_table = tab[1], .n_blocks = 3, .want_logits = true},
    };
    assert_int_equal(qs_model_forward(model, kv, first, 2, got, &err), 0);
    qs_seq_step mixed[3] = {
        {.tokens = seq[0] + 23, .n_tokens = 18, .start_pos = 23, .block_table = tab[0], .n_blocks = 3,
         .want_logits = true},
        {.tokens = seq[1] + 36, .n_tokens = 1, .start_pos = 36, .block_table = tab[1], .n_blocks = 3,
         .want_logits = true},
        {.tokens = seq[2], .n_tokens = 20, .start_pos = 0, .block_table = tab[2], .n_blocks = 2, .want_logits = true},
    };
    assert_int_equal(qs_model_forward(model, kv, mixed, 3, got, &err), 0);
    for (int s = 0; s < 3; s++)
        for (int i = 0; i < V; i++) {
            float w = want[s * V + i], g = got[s * V + i];
            if (fabsf(w - g) > 1e-4f * (1 + fabsf(w)))
                fail_msg("sequence %d logit %d: batched %g, alone %g", s, i, g, w);
        }
    free(want);
    free(got);
    qs_kv_cache_free(kv);
}

static void bad_steps_are_errors(void **state)
{
    if (!model)
        skip();
    const qs_model_config *mc = qs_model_get_config(model);
    qs_kv_cache *kv;
    qs_err err;
    float *logits = malloc(sizeof(float) * (size_t)mc->vocab_size);
    assert_int_equal(qs_kv_cache_create(mc, QS_PLATFORM_CPU, 2, &kv, &err), 0);
    int32_t table[2] = {0, 1}, bad_table[1] = {7}, tok = 5, bad_tok = 512;
    qs_seq_step s = {.tokens = &bad_tok, .n_tokens = 1, .block_table = table, .n_blocks = 1, .want_logits = true};
    assert_int_equal(qs_model_forward(model, kv, &s, 1, logits, &err), -1);
    assert_non_null(strstr(err.msg, "vocabulary"));
    s.tokens = &tok;
    s.block_table = bad_table;
    assert_int_equal(qs_model_forward(model, kv, &s, 1, logits, &err), -1);
    assert_non_null(strstr(err.msg, "outside the cache"));
    s.block_table = table;
    s.start_pos = 40; /* needs 3 blocks, has 1 */
    assert_int_equal(qs_model_forward(model, kv, &s, 1, logits, &err), -1);
    assert_non_null(strstr(err.msg, "KV blocks"));
    free(logits);
    qs_kv_cache_free(kv);
}

/* tok512.bin: max_len, then per token: float score, int32 len, bytes. */
typedef struct l2c_tok {
    int n;
    char *str[512];
    float score[512];
} l2c_tok;

static int l2c_find(const l2c_tok *t, const char *s, size_t len)
{
    for (int i = 0; i < t->n; i++)
        if (strlen(t->str[i]) == len && !memcmp(t->str[i], s, len))
            return i;
    return -1;
}

/* llama2.c's encoding: BOS, a dummy-prefix space, one token per UTF-8 character (or its bytes
 * + 3), then repeatedly merge the adjacent pair whose concatenation is the best-scored token. */
static int l2c_encode(const l2c_tok *t, const char *text, int32_t *out)
{
    int n = 0;
    out[n++] = 1;
    int start = n;
    if (*text)
        out[n++] = l2c_find(t, " ", 1);
    for (const char *c = text; *c;) {
        size_t len = 1;
        while (c[len] && ((unsigned char)c[len] & 0xC0) == 0x80 && len < 4)
            len++;
        int id = l2c_find(t, c, len);
        if (id >= 0)
            out[n++] = id;
        else
            for (size_t i = 0; i < len; i++)
                out[n++] = (unsigned char)c[i] + 3;
        c += len;
    }
    for (;;) {
        float best = -1e30f;
        int best_i = -1, best_id = -1;
        char buf[256];
        for (int i = start; i + 1 < n; i++) {
            snprintf(buf, sizeof(buf), "%s%s", t->str[out[i]], t->str[out[i + 1]]);
            int id = l2c_find(t, buf, strlen(buf));
            if (id >= 0 && t->score[id] > best) {
                best = t->score[id];
                best_i = i;
                best_id = id;
            }
        }
        if (best_i < 0)
            break;
        out[best_i] = best_id;
        memmove(out + best_i + 1, out + best_i + 2, sizeof(int32_t) * (size_t)(n - best_i - 2));
        n--;
    }
    return n;
}

static void tokenizer_matches_llama2c(void **state)
{
    if (!model)
        skip();
    char path[1024];
    snprintf(path, sizeof(path), "%s/tok512.bin", qs_test_stories_dir());
    char *raw, *golden_text;
    size_t len;
    qs_err err;
    assert_int_equal(qs_read_file(path, &raw, &len, &err), 0);
    l2c_tok t = {.n = 512};
    size_t off = 4;
    for (int i = 0; i < 512; i++) {
        int32_t n;
        memcpy(&t.score[i], raw + off, 4);
        memcpy(&n, raw + off + 4, 4);
        t.str[i] = strndup(raw + off + 8, (size_t)n);
        off += 8 + (size_t)n;
    }
    free(raw);
    snprintf(path, sizeof(path), "%s/golden_greedy_200.txt", qs_test_stories_dir());
    assert_int_equal(qs_read_file(path, &golden_text, NULL, &err), 0);
    qs_tokenizer *tok;
    if (qs_tokenizer_load(model_dir, &tok, &err) != 0)
        fail_msg("tokenizer: %s", err.msg);
    const char *texts[] = {golden_text, "Once upon a time", "Hello world!", "  two  spaces, tabs\tand\nlines",
                           "caf\xc3\xa9 \xe2\x9c\x93 \xe4\xb8\xad 42", "x"};
    for (size_t k = 0; k < sizeof(texts) / sizeof(texts[0]); k++) {
        int32_t want[2048];
        int n_want = l2c_encode(&t, texts[k], want);
        int32_t *got;
        size_t n_got;
        assert_int_equal(qs_tokenizer_encode(tok, texts[k], strlen(texts[k]), true, &got, &n_got, &err), 0);
        if ((int)n_got != n_want || memcmp(got, want, sizeof(int32_t) * n_got))
            fail_msg("text %zu (\"%.40s\"): %zu tokens from tokenizer.json, %d from llama2.c's algorithm", k,
                     texts[k], n_got, n_want);
        char *back;
        assert_int_equal(qs_tokenizer_decode(tok, got, n_got, true, &back, &err), 0);
        assert_string_equal(back, texts[k]);
        free(back);
        free(got);
    }
    qs_tokenizer_free(tok);
    free(golden_text);
    for (int i = 0; i < 512; i++)
        free(t.str[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(greedy_200_matches_llama2c),
        cmocka_unit_test(batched_step_equals_single_runs),
        cmocka_unit_test(bad_steps_are_errors),
        cmocka_unit_test(tokenizer_matches_llama2c),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
