/* test_helpers.h — small helpers shared by the cmocka suites. Header-only (static inline), since
 * each suite is one binary built from one .c file. */
#ifndef QS_TEST_HELPERS_H
#define QS_TEST_HELPERS_H

/* Index of the largest of x[0..n-1] (the first one on ties): a greedy pick. */
static inline int qs_test_argmax(const float *x, int n)
{
    int b = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[b])
            b = i;
    return b;
}

#endif
