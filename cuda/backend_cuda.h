/* backend_cuda.h — the CUDA backend's description (core/backend.h), which src/device/backends.c
 * lists. Only built when nvcc is found (QS_HAVE_CUDA). */
#ifndef QS_CUDA_BACKEND_CUDA_H
#define QS_CUDA_BACKEND_CUDA_H

#include "core/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

extern const qs_backend qs_backend_cuda;

#ifdef __cplusplus
}
#endif

#endif
