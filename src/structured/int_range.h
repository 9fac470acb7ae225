/* int_range.h — integer bounds as a regex (int_range.c). Private to src/structured. */
#ifndef QS_STRUCTURED_INT_RANGE_H
#define QS_STRUCTURED_INT_RANGE_H

#include <stdbool.h>

#define QS_INT_MAX_DIGITS 15

/* A regex matching exactly the decimal integers in the bounds (each side optional), without
 * leading zeros ("-0" excluded), at most QS_INT_MAX_DIGITS digits. NULL if empty or out of memory. */
char *qs_int_range_regex(bool has_lo, long long lo, bool has_hi, long long hi);

#endif
