/* ring_probe.h — the marlin stream kernel's weight transport alone (dev/cuda/ring_probe.cu): one CTA
 * per SM pulls its contiguous share of a buffer through a shared-memory ring of `depth` stages,
 * one bulk copy per stage issued by one thread, while four warps sum each stage as it lands and
 * hand its slot back. bench_kernels times it beside the plain streaming read (read_probe.h) on
 * each layer's FP8 weight bytes, in the same run: whether a ring of that depth, with nothing else
 * of the GEMM around it, streams the bytes as fast as plain loads do. Only built with CUDA; runs
 * on compute capability 9.0 with the build's sm_90a code. */
#ifndef QS_CUDA_RING_PROBE_H
#define QS_CUDA_RING_PROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The most ring stages, and the most bytes a ring may hold (the shared memory one CTA may take). */
#define QS_RING_PROBE_MAX_DEPTH 16
#define QS_RING_PROBE_MAX_RING_BYTES (200 * 1024)

/* Adds the wrapping sum of the `bytes / 4` words at buf (device memory, 16-byte aligned; bytes a
 * multiple of 16) to *dev_sum (device memory), on `stream` (a cudaStream_t; NULL: the default
 * stream), read through rings of `depth` (2..QS_RING_PROBE_MAX_DEPTH) stages of `stage_bytes` (a
 * multiple of 16; depth * stage_bytes at most QS_RING_PROBE_MAX_RING_BYTES) on `ctas` CTAs (0: as
 * many as the stream kernel would take for that many stages: even shares on 95% of the SMs or
 * more, else one per SM; never more CTAs than stages). `alone`: each CTA takes all the shared
 * memory an SM offers, as the stream kernel does, so no CTA of the next call can start beside it;
 * else only its ring's, and one of the next call (launched as a dependent) may start on the same SM
 * while it streams. As the read probe: asynchronous, and with programmatic dependent launch the
 * reads may start before the previous kernel on the stream has ended (buf must not be what it
 * writes). Errors: a bad argument, a device other than compute capability 9.0, or a build without
 * sm_90a code. */
int qs_cuda_ring_read_sum(const void *buf, size_t bytes, int stage_bytes, int depth, int ctas, bool alone,
                          uint32_t *dev_sum, void *stream, qs_err *err);

#ifdef __cplusplus
}
#endif

#endif
