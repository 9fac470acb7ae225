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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(err_prefix_keeps_message),
        cmocka_unit_test(read_missing_file_names_it),
        cmocka_unit_test(int_list_parses_and_rejects),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
