/* test_tokenizer_golden.c — our encoder and decoder against goldens from an independent
 * implementation (@huggingface/tokenizers, see scripts/goldens/gen-tokenizer-goldens.mjs):
 * every string exact, with and without special tokens, for the real Qwen3 and Llama-3.1
 * tokenizers and the two small Llama-2 / Mistral style ones committed under tests/data. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tokenizer.h"
#include "util/fileio.h"

static bool ids_equal(const cJSON *want, const int32_t *got, size_t n)
{
    if ((size_t)cJSON_GetArraySize(want) != n)
        return false;
    size_t i = 0;
    for (const cJSON *e = want->child; e; e = e->next, i++)
        if ((int32_t)e->valuedouble != got[i])
            return false;
    return true;
}

static void print_ids(const char *what, const int32_t *ids, size_t n)
{
    fprintf(stderr, "  %s:", what);
    for (size_t i = 0; i < n; i++)
        fprintf(stderr, " %d", ids[i]);
    fprintf(stderr, "\n");
}

/* Checks every line of golden_path against the tokenizer in model_dir; returns mismatches. */
static int check_goldens(const char *model_dir, const char *golden_path)
{
    qs_err err;
    qs_tokenizer *tok;
    if (qs_tokenizer_load(model_dir, &tok, &err)) {
        fprintf(stderr, "load %s: %s\n", model_dir, err.msg);
        return -1;
    }
    char *text;
    assert_int_equal(qs_read_file(golden_path, &text, NULL, &err), 0);
    int bad = 0, lines = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        cJSON *g = cJSON_Parse(line);
        assert_non_null(g);
        const cJSON *t = cJSON_GetObjectItem(g, "text");
        const char *s = t->valuestring;
        lines++;
        for (int special = 1; special >= 0; special--) {
            int32_t *ids;
            size_t n;
            const cJSON *want = cJSON_GetObjectItem(g, special ? "ids" : "ids_plain");
            if (qs_tokenizer_encode(tok, s, strlen(s), special, &ids, &n, &err)) {
                fprintf(stderr, "%s: encode %s failed: %s\n", golden_path, line, err.msg);
                bad++;
                continue;
            }
            if (!ids_equal(want, ids, n)) {
                char *w = cJSON_PrintUnformatted(want);
                fprintf(stderr, "%s: mismatch (special=%d) for %s\n  want: %s\n", golden_path, special,
                        cJSON_PrintUnformatted(t), w);
                print_ids("got ", ids, n);
                free(w);
                bad++;
            } else if (!special) {
                char *dec;
                const char *want_text = cJSON_GetObjectItem(g, "decoded")->valuestring;
                assert_int_equal(qs_tokenizer_decode(tok, ids, n, false, &dec, &err), 0);
                if (strcmp(dec, want_text)) {
                    fprintf(stderr, "%s: decode mismatch for %s: got '%s'\n", golden_path, s, dec);
                    bad++;
                }
                free(dec);
            }
            free(ids);
        }
        cJSON_Delete(g);
    }
    fprintf(stderr, "%s: %d strings, %d mismatches\n", golden_path, lines, bad);
    assert_true(lines >= 40);
    free(text);
    qs_tokenizer_free(tok);
    return bad;
}

static void run_shared(const char *name)
{
    char dir[1024], golden[1024];
    snprintf(dir, sizeof dir, "%s/tokenizers/%s", qs_shared_data_dir(), name);
    snprintf(golden, sizeof golden, "tests/data/tokenizer/%s.jsonl", name);
    if (!qs_file_exists(dir)) {
        printf("skip: %s is absent (shared data not installed)\n", dir);
        skip();
    }
    assert_int_equal(check_goldens(dir, golden), 0);
}

static void qwen3_goldens(void **state) { run_shared("qwen3"); }
static void llama3_1_goldens(void **state) { run_shared("llama3_1"); }
static void llama2_style_goldens(void **state)
{
    assert_int_equal(check_goldens("tests/data/tokenizer/llama2_style", "tests/data/tokenizer/llama2_style.jsonl"), 0);
}
static void metaspace_style_goldens(void **state)
{
    assert_int_equal(check_goldens("tests/data/tokenizer/metaspace_style", "tests/data/tokenizer/metaspace_style.jsonl"), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(qwen3_goldens),
        cmocka_unit_test(llama3_1_goldens),
        cmocka_unit_test(llama2_style_goldens),
        cmocka_unit_test(metaspace_style_goldens),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
