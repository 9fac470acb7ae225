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

static qs_tokenizer *load(const char *model_dir)
{
    qs_err err;
    qs_tokenizer *tok;
    if (qs_tokenizer_load(model_dir, &tok, &err)) {
        fprintf(stderr, "load %s: %s\n", model_dir, err.msg);
        return NULL;
    }
    return tok;
}

/* One line of a JSON-lines golden file (g parsed from line): returns its number of mismatches. */
typedef int (*golden_line_check)(const qs_tokenizer *tok, const char *golden_path, const char *line, const cJSON *g);

/* Runs check on every line of golden_path; returns the mismatches summed and the lines in *lines. */
static int check_golden_lines(const qs_tokenizer *tok, const char *golden_path, golden_line_check check, int *lines)
{
    qs_err err;
    char *text;
    assert_int_equal(qs_read_file(golden_path, &text, NULL, &err), 0);
    int bad = 0;
    *lines = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        cJSON *g = cJSON_Parse(line);
        assert_non_null(g);
        (*lines)++;
        bad += check(tok, golden_path, line, g);
        cJSON_Delete(g);
    }
    free(text);
    return bad;
}

/* An encode golden: ids with and without special tokens, and the decoded text. */
static int check_encode_line(const qs_tokenizer *tok, const char *golden_path, const char *line, const cJSON *g)
{
    qs_err err;
    int bad = 0;
    const cJSON *t = cJSON_GetObjectItem(g, "text");
    const char *s = t->valuestring;
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
    return bad;
}

/* Checks every line of golden_path against tok; returns the number of mismatches. */
static int check_goldens(const qs_tokenizer *tok, const char *golden_path)
{
    int lines;
    int bad = check_golden_lines(tok, golden_path, check_encode_line, &lines);
    fprintf(stderr, "%s: %d strings, %d mismatches\n", golden_path, lines, bad);
    assert_true(lines >= 40);
    return bad;
}

static int check_decode_goldens(const qs_tokenizer *tok, const char *golden_path);

/* Encode goldens and decode goldens for a tokenizer of the shared data, loaded once. */
static void run_shared(const char *name)
{
    char dir[1024], golden[1024], decode_golden[1024];
    snprintf(dir, sizeof dir, "%s/tokenizers/%s", qs_shared_data_dir(), name);
    snprintf(golden, sizeof golden, "tests/data/tokenizer/%s.jsonl", name);
    snprintf(decode_golden, sizeof decode_golden, "tests/data/tokenizer/%s_decode.jsonl", name);
    if (!qs_file_exists(dir)) {
        printf("skip: %s is absent (shared data not installed)\n", dir);
        skip();
    }
    qs_tokenizer *tok = load(dir);
    assert_non_null(tok);
    int bad = check_goldens(tok, golden) + check_decode_goldens(tok, decode_golden);
    qs_tokenizer_free(tok);
    assert_int_equal(bad, 0);
}

static void run_committed(const char *name)
{
    char dir[1024], golden[1024];
    snprintf(dir, sizeof dir, "tests/data/tokenizer/%s", name);
    snprintf(golden, sizeof golden, "tests/data/tokenizer/%s.jsonl", name);
    qs_tokenizer *tok = load(dir);
    assert_non_null(tok);
    int bad = check_goldens(tok, golden);
    qs_tokenizer_free(tok);
    assert_int_equal(bad, 0);
}

static size_t unhex(const char *hex, char *out)
{
    size_t n = strlen(hex) / 2;
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        sscanf(hex + 2 * i, "%2x", &v);
        out[i] = (char)v;
    }
    return n;
}

/* A decode golden: see check_decode_goldens. */
static int check_decode_line(const qs_tokenizer *tok, const char *golden_path, const char *line, const cJSON *g)
{
    qs_err err;
    int bad = 0;
    const cJSON *jids = cJSON_GetObjectItem(g, "ids");
    size_t n = (size_t)cJSON_GetArraySize(jids), k = 0;
    int32_t ids[64];
    assert_true(n <= 64);
    for (const cJSON *e = jids->child; e; e = e->next)
        ids[k++] = (int32_t)e->valuedouble;
    for (int skip = 0; skip <= 1; skip++) {
        const char *hex = cJSON_GetObjectItem(g, skip ? "text_skip_hex" : "text_hex")->valuestring;
        char want[1024], *got;
        size_t want_len = unhex(hex, want), got_len;
        assert_int_equal(qs_tokenizer_decode_n(tok, ids, n, skip, &got, &got_len, &err), 0);
        if (got_len != want_len || memcmp(got, want, got_len)) {
            fprintf(stderr, "%s: decode mismatch (skip=%d) for %s\n", golden_path, skip, line);
            bad++;
        }
        free(got);
        /* streaming */
        qs_decode_stream *st = qs_decode_stream_new(tok, skip);
        char acc[1024];
        size_t acc_len = 0;
        for (size_t i = 0; i <= n; i++) {
            const char *out;
            size_t out_len;
            if (i < n)
                assert_int_equal(qs_decode_stream_push(st, ids[i], &out, &out_len, &err), 0);
            else
                assert_int_equal(qs_decode_stream_flush(st, &out, &out_len), 0);
            assert_true(acc_len + out_len <= sizeof acc);
            memcpy(acc + acc_len, out, out_len);
            acc_len += out_len;
        }
        qs_decode_stream_free(st);
        if (acc_len != want_len || memcmp(acc, want, acc_len)) {
            fprintf(stderr, "%s: stream decode mismatch (skip=%d) for %s\n", golden_path, skip, line);
            bad++;
        }
    }
    return bad;
}

/* Random generated-looking id sequences (bytes cut mid-character, specials): full decode with
 * and without skip_special must match the golden bytes, and a decode stream must give the same. */
static int check_decode_goldens(const qs_tokenizer *tok, const char *golden_path)
{
    int lines;
    int bad = check_golden_lines(tok, golden_path, check_decode_line, &lines);
    fprintf(stderr, "%s: %d sequences, %d mismatches\n", golden_path, lines, bad);
    assert_true(lines >= 50);
    return bad;
}

static void qwen3_goldens(void **state) { run_shared("qwen3"); }
static void llama3_1_goldens(void **state) { run_shared("llama3_1"); }
static void llama2_style_goldens(void **state) { run_committed("llama2_style"); }
static void metaspace_style_goldens(void **state) { run_committed("metaspace_style"); }

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
