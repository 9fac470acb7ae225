/* test_util.c — error formatting and file helpers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "util/error.h"
#include "util/fileio.h"
#include "util/json_strings.h"
#include "util/parallel.h"

static void err_prefix_keeps_message(void **state)
{
    qs_err e;
    assert_int_equal(qs_errf(&e, "tensor %s: bad dtype", "w"), -1);
    qs_err_prefix(&e, "%s: ", "model.safetensors");
    assert_string_equal(e.msg, "model.safetensors: tensor w: bad dtype");
}

static void read_missing_file_names_it(void **state)
{
    qs_err e;
    char *buf;
    assert_int_equal(qs_read_file("/nonexistent/qserve.json", &buf, NULL, &e), -1);
    assert_non_null(strstr(e.msg, "/nonexistent/qserve.json"));
}

static void int_list_parses_and_rejects(void **state)
{
    int *ids, n;
    assert_int_equal(qs_arg_int_list("--ids", "1, 2,3", &ids, &n), 0);
    assert_int_equal(n, 3);
    assert_int_equal(ids[2], 3);
    free(ids);
    assert_int_equal(qs_arg_int_list("--ids", "1,x", &ids, &n), -1);
}

static void add_range(void *ctx, int64_t b, int64_t e)
{
    int *v = ctx;
    for (int64_t i = b; i < e; i++)
        v[i] += (int)i;
}

static void parallel_for_covers_each_index_once(void **state)
{
    enum { N = 1001 };
    int v[N] = {0};
    for (int rep = 0; rep < 50; rep++)
        qs_parallel_for(N, 7, add_range, v);
    for (int i = 0; i < N; i++)
        assert_int_equal(v[i], 50 * i);
}

/* Lengths of strings holding \u0000, found in document order through arrays, objects and keys;
 * output text with NUL bytes printed back as \u0000. */
static void json_string_lengths_and_nul_output(void **state)
{
    const char *raw = "{\"a\": [\"x\\u0000\", {\"b\": \"\\u0000\\ud83d\\ude00\\u00e9\"}, 1, null],"
                      " \"c\": \"\\\\u0000\", \"k\\u0000\": \"\\u0000\"}";
    cJSON *root = cJSON_Parse(raw);
    assert_non_null(root);
    const cJSON *key = NULL;
    assert_int_equal(qs_json_record_string_lengths(root, raw, strlen(raw), &key), 4); /* 3 values, 1 key */
    assert_non_null(key);
    assert_string_equal(key->string, "k");
    const cJSON *a = cJSON_GetObjectItem(root, "a");
    assert_int_equal(qs_json_string_len(cJSON_GetArrayItem(a, 0)), 2);
    const cJSON *b = cJSON_GetObjectItem(cJSON_GetArrayItem(a, 1), "b");
    assert_int_equal(qs_json_string_len(b), 1 + 4 + 2);
    assert_memory_equal(b->valuestring, "\0\xf0\x9f\x98\x80\xc3\xa9", 7);
    const cJSON *c = cJSON_GetObjectItem(root, "c");
    assert_false(qs_json_string_has_nul(c));
    assert_int_equal(qs_json_string_len(c), 6); /* an escaped backslash: the text \u0000 */
    assert_int_equal(qs_json_string_len(cJSON_GetArrayItem(a, 2)), 0); /* not a string */
    cJSON_Delete(root);

    cJSON *out = cJSON_CreateObject();
    assert_true(qs_json_add_text(out, "t", "a\0b\0", 4));
    char *text = qs_json_print(out);
    assert_string_equal(text, "{\"t\":\"a\\u0000b\\u0000\"}");
    free(text);
    cJSON_Delete(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(err_prefix_keeps_message),
        cmocka_unit_test(read_missing_file_names_it),
        cmocka_unit_test(int_list_parses_and_rejects),
        cmocka_unit_test(parallel_for_covers_each_index_once),
        cmocka_unit_test(json_string_lengths_and_nul_output),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
