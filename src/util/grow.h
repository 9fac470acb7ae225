/* grow.h — the one grow-by-doubling rule for arrays built up an element at a time (grow.c). */
#ifndef QS_UTIL_GROW_H
#define QS_UTIL_GROW_H

#include <stddef.h>

/* The capacity that holds need elements: cap if it already does, else cap (first when cap is 0)
 * doubled until it does. */
int qs_grown_cap(int cap, int need, int first);

/* Room for need elements of size bytes in arr (capacity *cap), by qs_grown_cap: returns the
 * array, moved or not, and updates *cap; NULL when out of memory, with arr and *cap unchanged
 * (arr stays the caller's to free). */
void *qs_grow(void *arr, int *cap, int need, int first, size_t size);

#endif
