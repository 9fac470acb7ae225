// memory.cu — device allocation, copies and bf16 staging conversions (see qs_cuda_mem.h).
#include <cuda_bf16.h>
#include <stdlib.h>
#include <vector>

#include "cuda_check.h"
#include "qs_cuda_mem.h"

extern "C" int qs_cuda_malloc(void **ptr, size_t bytes, qs_err *err)
{
    *ptr = nullptr;
    cudaError_t rc = cudaMalloc(ptr, bytes ? bytes : 1);
    if (rc != cudaSuccess)
        return qs_errf(err, "cudaMalloc of %zu bytes failed: %s", bytes, cudaGetErrorString(rc));
    return 0;
}

extern "C" void qs_cuda_free(void *ptr)
{
    if (ptr)
        cudaFree(ptr);
}

extern "C" int qs_cuda_memcpy_h2d(void *dst, const void *src, size_t bytes, qs_err *err)
{
    QS_CUDA_TRY(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), err);
    return 0;
}

extern "C" int qs_cuda_memcpy_d2h(void *dst, const void *src, size_t bytes, qs_err *err)
{
    QS_CUDA_TRY(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), err);
    return 0;
}

extern "C" int qs_cuda_memset(void *dst, int value, size_t bytes, qs_err *err)
{
    QS_CUDA_TRY(cudaMemset(dst, value, bytes), err);
    return 0;
}

extern "C" int qs_cuda_synchronize(qs_err *err)
{
    QS_CUDA_TRY(cudaDeviceSynchronize(), err);
    return 0;
}

extern "C" int qs_cuda_upload_f32_as_bf16(void *dst_bf16, const float *src, size_t n, qs_err *err)
{
    std::vector<__nv_bfloat16> staging(n);
    for (size_t i = 0; i < n; i++)
        staging[i] = __float2bfloat16_rn(src[i]);
    return qs_cuda_memcpy_h2d(dst_bf16, staging.data(), n * sizeof(__nv_bfloat16), err);
}

extern "C" int qs_cuda_download_bf16_as_f32(float *dst, const void *src_bf16, size_t n, qs_err *err)
{
    std::vector<__nv_bfloat16> staging(n);
    if (qs_cuda_memcpy_d2h(staging.data(), src_bf16, n * sizeof(__nv_bfloat16), err))
        return -1;
    for (size_t i = 0; i < n; i++)
        dst[i] = __bfloat162float(staging[i]);
    return 0;
}
