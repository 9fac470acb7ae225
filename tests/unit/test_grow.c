/* test_grow.c — the shared grow-by-doubling rule (src/util/grow.c): capacities double from the
 * first size until the need fits, an array grows with its contents kept, and a need that already
 * fits leaves the array where it is. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <limits.h>
#include <stdlib.h>

#include "util/grow.h"

static void capacities_double_from_first(void **state)
{
    assert_int_equal(qs_grown_cap(0, 1, 8), 8);
    assert_int_equal(qs_grown_cap(0, 9, 8), 16);
    assert_int_equal(qs_grown_cap(8, 8, 2), 8);     /* fits already */
    assert_int_equal(qs_grown_cap(8, 9, 2), 16);
    assert_int_equal(qs_grown_cap(3, 100, 8), 192); /* from the capacity, not from first */
    assert_int_equal(qs_grown_cap(INT_MAX / 2 + 1, INT_MAX, 8), INT_MAX); /* no overflow */
}

static void arrays_keep_their_contents(void **state)
{
    int *a = NULL, cap = 0;
    for (int i = 0; i < 1000; i++) {
        int *p = qs_grow(a, &cap, i + 1, 4, sizeof *p);
        assert_non_null(p);
        a = p;
        a[i] = i * 7;
        assert_true(cap >= i + 1);
    }
    assert_int_equal(cap, 1024);
    for (int i = 0; i < 1000; i++)
        assert_int_equal(a[i], i * 7);
    assert_ptr_equal(qs_grow(a, &cap, 10, 4, sizeof *a), a);
    assert_int_equal(cap, 1024);
    free(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(capacities_double_from_first),
        cmocka_unit_test(arrays_keep_their_contents),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
