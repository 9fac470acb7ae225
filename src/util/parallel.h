/* parallel.h — a small fixed thread pool for the CPU reference path: qs_parallel_for splits an
 * index range over all threads (the caller's included) and returns when every chunk is done.
 * Nested calls from inside a worker run serially, so kernels may call it freely. */
#ifndef QS_UTIL_PARALLEL_H
#define QS_UTIL_PARALLEL_H

#include <stdint.h>

/* fn(ctx, begin, end) handles indices [begin, end). */
typedef void (*qs_range_fn)(void *ctx, int64_t begin, int64_t end);

/* Number of threads to use (0 = one per online core). Call before the first qs_parallel_for. */
void qs_parallel_set_threads(int n);
int qs_parallel_threads(void);
/* Runs fn over [0, n) split into contiguous chunks of at least min_chunk indices. */
void qs_parallel_for(int64_t n, int64_t min_chunk, qs_range_fn fn, void *ctx);

#endif
