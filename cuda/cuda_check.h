// cuda_check.h — CUDA-side error checking used by every .cu file: a failing runtime or
// cuBLASLt call becomes a qs_err naming the call, file and line, and the function returns -1.
#ifndef QS_CUDA_CHECK_H
#define QS_CUDA_CHECK_H

#include <cublasLt.h>
#include <cuda_runtime.h>

#include "cublaslt_dyn.h"

extern "C" {
#include "util/error.h"
}

#define QS_CUDA_TRY(call, err)                                                                      \
    do {                                                                                            \
        cudaError_t qs_rc_ = (call);                                                                \
        if (qs_rc_ != cudaSuccess)                                                                  \
            return qs_errf((err), "%s failed: %s (%s:%d)", #call, cudaGetErrorString(qs_rc_), __FILE__, \
                           __LINE__);                                                               \
    } while (0)

#define QS_CUBLAS_TRY(call, err)                                                                    \
    do {                                                                                            \
        cublasStatus_t qs_st_ = (call);                                                             \
        if (qs_st_ != CUBLAS_STATUS_SUCCESS)                                                        \
            return qs_errf((err), "%s failed: %s (%s:%d)", #call, qs_cublaslt_status_string(qs_st_),  \
                           __FILE__, __LINE__);                                                     \
    } while (0)

// After a kernel launch: reports launch-configuration errors at once.
#define QS_LAUNCH_CHECK(err) QS_CUDA_TRY(cudaGetLastError(), err)

#endif
