// weights_upload.h — copying a checkpoint tensor to the device as-is, or its float values as
// FP32 / BF16, for the kernels' prepare steps.
#ifndef QS_CUDA_WEIGHTS_UPLOAD_H
#define QS_CUDA_WEIGHTS_UPLOAD_H

#include <cuda_bf16.h>

extern "C" {
#include "core/tensor.h"
#include "util/error.h"
}

// Raw bytes of t on the device (*dev must be freed with cudaFree).
int qs_upload_raw(const qs_tensor *t, void **dev, qs_err *err);
// Float values of t (F32/F16/BF16/F64) as device FP32; count returns numel.
int qs_upload_as_f32(const qs_tensor *t, float **dev, qs_err *err);
// Float values of t as device BF16.
int qs_upload_as_bf16(const qs_tensor *t, __nv_bfloat16 **dev, qs_err *err);
// A host float array replicated to a device FP32 vector of n entries (value, or values[i]).
int qs_upload_f32_fill(float value, int64_t n, float **dev, qs_err *err);

#endif
