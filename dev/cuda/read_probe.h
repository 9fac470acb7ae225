/* read_probe.h — a plain streaming read of device memory: every 32-bit word of a buffer added
 * (wrapping) into one device word. bench_kernels times it on each layer's weight bytes, in the
 * same run as the GEMMs: what a single kernel that only reads those bytes takes, start and drain
 * included — the ceiling any weight-reading GEMM meets at that size. Only built with CUDA. */
#ifndef QS_CUDA_READ_PROBE_H
#define QS_CUDA_READ_PROBE_H

#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Adds the wrapping sum of the `bytes / 4` words at buf (device memory, 16-byte aligned; bytes a
 * multiple of 4) to *dev_sum (device memory), on `stream` (a cudaStream_t; NULL: the default
 * stream). Asynchronous; launch errors are reported. On sm_90+ the reads may start before the
 * kernel launched just before on the stream has finished (programmatic dependent launch, as for
 * marlin's weights): buf must not be what that kernel writes. */
int qs_cuda_read_sum(const void *buf, size_t bytes, uint32_t *dev_sum, void *stream, qs_err *err);

#ifdef __cplusplus
}
#endif

#endif
