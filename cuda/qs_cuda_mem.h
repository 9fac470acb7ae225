/* qs_cuda_mem.h — the plain-C door to device memory and streams: allocation, copies and
 * synchronisation for host code (the model loader, the GPU tests). Every call is checked and
 * reports failures through qs_err; nothing here aborts. Only built when nvcc is found
 * (QS_HAVE_CUDA). */
#ifndef QS_CUDA_MEM_H
#define QS_CUDA_MEM_H

#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

#ifdef __cplusplus
extern "C" {
#endif

int qs_cuda_malloc(void **ptr, size_t bytes, qs_err *err);
void qs_cuda_free(void *ptr);
int qs_cuda_memcpy_h2d(void *dst, const void *src, size_t bytes, qs_err *err);
int qs_cuda_memcpy_d2h(void *dst, const void *src, size_t bytes, qs_err *err);
int qs_cuda_memset(void *dst, int value, size_t bytes, qs_err *err);
/* Waits for all work on the device; reports any asynchronous error that happened. */
int qs_cuda_synchronize(qs_err *err);
/* Converts between host float32 and device bf16 (n elements) through a host staging copy. */
int qs_cuda_upload_f32_as_bf16(void *dst_bf16, const float *src, size_t n, qs_err *err);
int qs_cuda_download_bf16_as_f32(float *dst, const void *src_bf16, size_t n, qs_err *err);

/* Device-event timing of work queued on the default stream. */
typedef struct qs_cuda_timer qs_cuda_timer;
qs_cuda_timer *qs_cuda_timer_new(void);
void qs_cuda_timer_start(qs_cuda_timer *t);
/* Milliseconds since start (waits for the queued work to finish). */
float qs_cuda_timer_stop_ms(qs_cuda_timer *t);
void qs_cuda_timer_free(qs_cuda_timer *t);
/* Device-to-device copy bandwidth in GB/s (bytes read + written), median of iters copies. */
int qs_cuda_copy_bandwidth(size_t bytes, int iters, double *gbps, qs_err *err);
/* Free and total bytes of the current device's memory (cudaMemGetInfo). */
int qs_cuda_mem_get_info(size_t *free_bytes, size_t *total_bytes, qs_err *err);
/* Sizes of the L2 cache and device memory. */
int qs_cuda_l2_bytes(void);

#ifdef __cplusplus
}
#endif

#endif
