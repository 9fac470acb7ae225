// weights_upload.cu — checkpoint tensors to device memory (see weights_upload.h).
#include <vector>

#include "cuda_check.h"
#include "weights_upload.h"

int qs_upload_raw(const qs_tensor *t, void **dev, qs_err *err)
{
    if (!t->data)
        return qs_errf(err, "tensor %s has no data loaded (headers-only checkpoint)", t->name);
    QS_CUDA_TRY(cudaMalloc(dev, t->nbytes ? t->nbytes : 1), err);
    QS_CUDA_TRY(cudaMemcpy(*dev, t->data, t->nbytes, cudaMemcpyHostToDevice), err);
    return 0;
}

int qs_upload_as_f32(const qs_tensor *t, float **dev, qs_err *err)
{
    if (!t->data)
        return qs_errf(err, "tensor %s has no data loaded (headers-only checkpoint)", t->name);
    std::vector<float> host((size_t)t->numel);
    for (int64_t i = 0; i < t->numel; i++)
        host[(size_t)i] = qs_tensor_get_f32(t, i);
    QS_CUDA_TRY(cudaMalloc((void **)dev, host.size() * sizeof(float) + 4), err);
    QS_CUDA_TRY(cudaMemcpy(*dev, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice), err);
    return 0;
}

int qs_upload_as_bf16(const qs_tensor *t, __nv_bfloat16 **dev, qs_err *err)
{
    if (!t->data)
        return qs_errf(err, "tensor %s has no data loaded (headers-only checkpoint)", t->name);
    std::vector<__nv_bfloat16> host((size_t)t->numel);
    for (int64_t i = 0; i < t->numel; i++)
        host[(size_t)i] = __float2bfloat16_rn(qs_tensor_get_f32(t, i));
    QS_CUDA_TRY(cudaMalloc((void **)dev, host.size() * sizeof(__nv_bfloat16) + 4), err);
    QS_CUDA_TRY(cudaMemcpy(*dev, host.data(), host.size() * sizeof(__nv_bfloat16), cudaMemcpyHostToDevice), err);
    return 0;
}

int qs_upload_f32_fill(float value, int64_t n, float **dev, qs_err *err)
{
    std::vector<float> host((size_t)n, value);
    QS_CUDA_TRY(cudaMalloc((void **)dev, host.size() * sizeof(float) + 4), err);
    QS_CUDA_TRY(cudaMemcpy(*dev, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice), err);
    return 0;
}
