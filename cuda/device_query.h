/* device_query.h — device discovery through the CUDA runtime: how many GPUs the driver shows
 * and what one of them is (name, compute capability, SM count, memory). Host code never includes
 * CUDA headers; the CUDA backend (backend_cuda.cu) hands these out as its capability hooks (built
 * from cuda/device_query.cu only when nvcc is found, QS_HAVE_CUDA). Nothing here aborts: no driver
 * or no GPU is simply 0 devices. */
#ifndef QS_CUDA_DEVICE_QUERY_H
#define QS_CUDA_DEVICE_QUERY_H

#ifdef __cplusplus
extern "C" {
#endif

#include "core/platform.h"
#include "util/error.h"

/* Number of CUDA devices usable by this process; 0 when there is no driver, no GPU, or the driver
 * is older than the runtime (the reason is kept for qs_cuda_unavailable_reason). */
int qs_cuda_device_count(void);
/* Why qs_cuda_device_count returned 0 ("CUDA driver: no CUDA-capable device is detected"), or "". */
const char *qs_cuda_unavailable_reason(void);
/* Fills caps (platform CUDA, name, compute capability, SM count, total memory) for a device. */
int qs_cuda_device_caps(int ordinal, qs_device_caps *caps, qs_err *err);
/* The current device's SM count, asked once per device (what kernels size their grids by); 0 where
 * it cannot be read. */
int qs_cuda_sm_count(void);

#ifdef __cplusplus
}
#endif

#endif
