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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(err_prefix_keeps_message),
        cmocka_unit_test(read_missing_file_names_it),
        cmocka_unit_test(int_list_parses_and_rejects),
        cmocka_unit_test(parallel_for_covers_each_index_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
