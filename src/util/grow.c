/* grow.c — the one grow-by-doubling rule for arrays built up an element at a time, so that the
 * many builders (grammars, schemas, matcher stacks) do not each repeat it. */
#include "util/grow.h"

#include <limits.h>
#include <stdlib.h>

int qs_grown_cap(int cap, int need, int first)
{
    if (need <= cap)
        return cap;
    int n = cap > 0 ? cap : first > 0 ? first : 1;
    while (n < need)
        n = n > INT_MAX / 2 ? need : n * 2;
    return n;
}

void *qs_grow(void *arr, int *cap, int need, int first, size_t size)
{
    if (arr && need <= *cap)
        return arr;
    int n = qs_grown_cap(*cap, need > 0 ? need : 1, first);
    void *p = realloc(arr, size * (size_t)n);
    if (p)
        *cap = n;
    return p;
}
