/* test_stop.c — the stop matcher: stop strings split across many feeds, held-back prefixes
 * released when they stop matching, the earliest of several stops winning, stop ids, and the
 * flush at the end. The released text concatenated must always equal the input up to the stop. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "engine/stop.h"

/* Feeds pieces one by one; returns the concatenated released text, *stopped_at the piece index
 * where a stop matched (-1 if none). */
static void run(qs_stop_matcher *m, const char *const *pieces, int n, char *out, int *stopped_at)
{
    const char *o;
    size_t ol;
    out[0] = 0;
    *stopped_at = -1;
    for (int i = 0; i < n; i++) {
        bool stop = qs_stop_feed(m, pieces[i], strlen(pieces[i]), &o, &ol);
        strncat(out, o, ol);
        if (stop) {
            *stopped_at = i;
            return;
        }
    }
    qs_stop_flush(m, &o, &ol);
    strncat(out, o, ol);
}

static void stop_across_tokens(void **state)
{
    const char *stops[] = {"\n\nUser:"};
    qs_stop_matcher *m = qs_stop_new(stops, 1, NULL, 0);
    const char *pieces[] = {"Hello", " there", ".\n", "\nUs", "er", ":", " more"};
    char out[256];
    int at;
    run(m, pieces, 7, out, &at);
    assert_int_equal(at, 5);
    assert_string_equal(out, "Hello there.");
    assert_true(qs_stop_matched(m));
    assert_int_equal(qs_stop_matched_index(m), 0);
    qs_stop_free(m);
}

static void held_prefix_released_when_it_breaks(void **state)
{
    const char *stops[] = {"STOP"};
    qs_stop_matcher *m = qs_stop_new(stops, 1, NULL, 0);
    const char *o;
    size_t ol;
    assert_false(qs_stop_feed(m, "abcST", 5, &o, &ol));
    assert_int_equal(ol, 3); /* "ST" is held back */
    assert_memory_equal(o, "abc", 3);
    assert_false(qs_stop_feed(m, "Ox", 2, &o, &ol));
    assert_int_equal(ol, 4);
    assert_memory_equal(o, "STOx", 4);
    assert_false(qs_stop_feed(m, "ST", 2, &o, &ol));
    assert_int_equal(ol, 0);
    qs_stop_flush(m, &o, &ol); /* the end of generation releases what was held */
    assert_int_equal(ol, 2);
    assert_memory_equal(o, "ST", 2);
    qs_stop_free(m);
}

static void earliest_stop_wins(void **state)
{
    const char *stops[] = {"world", "lo w", ""};
    qs_stop_matcher *m = qs_stop_new(stops, 3, NULL, 0);
    const char *pieces[] = {"hello world"};
    char out[64];
    int at;
    run(m, pieces, 1, out, &at);
    assert_int_equal(at, 0);
    assert_string_equal(out, "hel");
    assert_int_equal(qs_stop_matched_index(m), 1);
    qs_stop_free(m);
}

static void no_stops_passes_everything(void **state)
{
    qs_stop_matcher *m = qs_stop_new(NULL, 0, NULL, 0);
    const char *pieces[] = {"a", "b", "", "c"};
    char out[64];
    int at;
    run(m, pieces, 4, out, &at);
    assert_int_equal(at, -1);
    assert_string_equal(out, "abc");
    assert_false(qs_stop_is_stop_token(m, 2));
    qs_stop_free(m);
}

static void stop_ids(void **state)
{
    int32_t ids[] = {7, 151645};
    qs_stop_matcher *m = qs_stop_new(NULL, 0, ids, 2);
    assert_true(qs_stop_is_stop_token(m, 151645));
    assert_true(qs_stop_is_stop_token(m, 7));
    assert_false(qs_stop_is_stop_token(m, 8));
    qs_stop_free(m);
}

static void overlapping_prefixes(void **state)
{
    /* "aab" inside "aaab": the held suffix must keep "aa" while more a's arrive */
    const char *stops[] = {"aab"};
    qs_stop_matcher *m = qs_stop_new(stops, 1, NULL, 0);
    const char *pieces[] = {"x", "a", "a", "a", "b", "y"};
    char out[64];
    int at;
    run(m, pieces, 6, out, &at);
    assert_int_equal(at, 4);
    assert_string_equal(out, "xa");
    qs_stop_free(m);
}

/* Stop strings are length-delimited: one holding a NUL byte matches across it, and a NUL alone in
 * the text is not the end of a shorter stop string. */
static void stop_string_with_nul(void **state)
{
    const char *stops[] = {"a\0b", "z"};
    size_t lens[] = {3, 1};
    qs_stop_matcher *m = qs_stop_new_n(stops, lens, 2, NULL, 0);
    assert_non_null(m);
    const char *o;
    size_t ol;
    assert_false(qs_stop_feed(m, "xa\0c", 4, &o, &ol)); /* "a\0" then c: not the stop string */
    assert_int_equal(ol, 4);
    assert_memory_equal(o, "xa\0c", 4);
    assert_false(qs_stop_feed(m, "da", 2, &o, &ol)); /* "a" may begin the stop string: held */
    assert_int_equal(ol, 1);
    assert_memory_equal(o, "d", 1);
    assert_true(qs_stop_feed(m, "\0b tail", 7, &o, &ol));
    assert_int_equal(ol, 0);
    assert_int_equal(qs_stop_matched_index(m), 0);
    qs_stop_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(stop_across_tokens), cmocka_unit_test(stop_string_with_nul), cmocka_unit_test(held_prefix_released_when_it_breaks),
        cmocka_unit_test(earliest_stop_wins), cmocka_unit_test(no_stops_passes_everything),
        cmocka_unit_test(stop_ids),           cmocka_unit_test(overlapping_prefixes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
