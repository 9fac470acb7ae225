/* encode_compare.h — for the tokenizer suites: a text encodes to the same ids with one of the
 * tokenizer's memory-saving paths on (piecewise words, compact merges) and off, which is HF's
 * plain whole-word heap loop. Header-only, as each suite is one binary from one .c file; include
 * it after cmocka.h. */
#ifndef QS_TEST_ENCODE_COMPARE_H
#define QS_TEST_ENCODE_COMPARE_H

#include <stdbool.h>
#include <stdlib.h>

#include "tokenizer/tokenizer.h"

/* path points into tok (tok->piecewise, tok->compact_merges); it must be on, and is on again after. */
static inline void qs_test_encode_same_without(qs_tokenizer *tok, bool *path, const char *text, size_t len)
{
    qs_err err;
    int32_t *a, *b;
    size_t na, nb;
    assert_true(*path);
    assert_int_equal(qs_tokenizer_encode(tok, text, len, true, &a, &na, &err), 0);
    *path = false;
    int rc = qs_tokenizer_encode(tok, text, len, true, &b, &nb, &err);
    *path = true;
    assert_int_equal(rc, 0);
    assert_int_equal(na, nb);
    assert_memory_equal(a, b, na * sizeof *a);
    free(a);
    free(b);
}

#endif
