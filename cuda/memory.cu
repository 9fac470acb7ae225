// memory.cu — device allocation, copies and bf16 staging conversions (see qs_cuda_mem.h).
#include <cuda_bf16.h>
#include <stdlib.h>
#include <algorithm>
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

struct qs_cuda_timer {
    cudaEvent_t start, stop;
};

extern "C" qs_cuda_timer *qs_cuda_timer_new(void)
{
    qs_cuda_timer *t = new qs_cuda_timer;
    cudaEventCreate(&t->start);
    cudaEventCreate(&t->stop);
    return t;
}

extern "C" void qs_cuda_timer_start(qs_cuda_timer *t) { cudaEventRecord(t->start, 0); }

extern "C" float qs_cuda_timer_stop_ms(qs_cuda_timer *t)
{
    float ms = 0.f;
    cudaEventRecord(t->stop, 0);
    cudaEventSynchronize(t->stop);
    cudaEventElapsedTime(&ms, t->start, t->stop);
    return ms;
}

extern "C" void qs_cuda_timer_free(qs_cuda_timer *t)
{
    if (!t)
        return;
    cudaEventDestroy(t->start);
    cudaEventDestroy(t->stop);
    delete t;
}

extern "C" int qs_cuda_copy_bandwidth(size_t bytes, int iters, double *gbps, qs_err *err)
{
    void *a = nullptr, *b = nullptr;
    QS_CUDA_TRY(cudaMalloc(&a, bytes), err);
    if (cudaMalloc(&b, bytes) != cudaSuccess) {
        cudaFree(a);
        return qs_errf(err, "cudaMalloc of %zu bytes failed", bytes);
    }
    cudaMemset(a, 1, bytes);
    std::vector<float> ms;
    qs_cuda_timer *t = qs_cuda_timer_new();
    for (int i = 0; i < iters + 2; i++) {
        qs_cuda_timer_start(t);
        cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, 0);
        float e = qs_cuda_timer_stop_ms(t);
        if (i >= 2)
            ms.push_back(e);
    }
    qs_cuda_timer_free(t);
    cudaFree(a);
    cudaFree(b);
    std::sort(ms.begin(), ms.end());
    *gbps = 2.0 * (double)bytes / (ms[ms.size() / 2] * 1e-3) / 1e9;
    QS_CUDA_TRY(cudaGetLastError(), err);
    return 0;
}

extern "C" int qs_cuda_l2_bytes(void)
{
    int dev = 0, l2 = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev);
    return l2;
}

extern "C" int qs_cuda_mem_get_info(size_t *free_bytes, size_t *total_bytes, qs_err *err)
{
    QS_CUDA_TRY(cudaMemGetInfo(free_bytes, total_bytes), err);
    return 0;
}
