/* l2_prefetch.h — starting to bring a read-only device buffer (a layer's weights) into the L2
 * cache ahead of the kernel that reads it, while the kernels queued before that one leave device
 * memory idle (a decode step's attention before o_proj). Only built with CUDA. */
#ifndef QS_CUDA_L2_PREFETCH_H
#define QS_CUDA_L2_PREFETCH_H

#include <stddef.h>

#include "util/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Queues on `stream` (a cudaStream_t; NULL: the default stream) a kernel that asks L2 for the
 * `bytes` at buf (device memory, 16-byte aligned; a tail under 16 bytes is left out) by bulk
 * prefetches and returns without waiting for the data. On compute capability 9.0+ only (the bulk
 * prefetch; elsewhere nothing is queued and 0 is returned), as a programmatic dependent launch
 * when the small ops are (qs_ops_pdl): it lets the kernel after it launch at once and ends only
 * after the kernel before it, so stream order holds for everything else. buf must not be written
 * by a kernel still queued or running. Launch errors are reported. */
int qs_cuda_l2_prefetch(const void *buf, size_t bytes, void *stream, qs_err *err);

#ifdef __cplusplus
}
#endif

#endif
