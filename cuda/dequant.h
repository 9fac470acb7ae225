// dequant.h — device kernels (C++ launchers) that expand quantized weights to BF16 and quantize
// activations the way a checkpoint's scheme says: FP8 E4M3 with tensor / channel / 128x128 block
// scales, NVFP4 (E2M1 + E4M3 per 16 + FP32 global), FP8 activations per tensor / token / group.
// Shared by the emulation and cuBLASLt linear kernels.
#ifndef QS_CUDA_DEQUANT_H
#define QS_CUDA_DEQUANT_H

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

extern "C" {
#include "core/scheme.h"
}

// out[n,k] = e4m3(w) * scale, scale per wscale layout (scale points to device floats).
void qs_launch_dequant_fp8(const uint8_t *w, const float *scale, qs_weight_scale_layout layout, int64_t n,
                           int64_t k, int block_n, int block_k, __nv_bfloat16 *out, cudaStream_t s);
// out[n,k] = e2m1(w) * e4m3(block_scale[n, k/16]) * global_scale.
void qs_launch_dequant_nvfp4(const uint8_t *packed, const uint8_t *block_scale, float global_scale, int64_t n,
                             int64_t k, __nv_bfloat16 *out, cudaStream_t s);
// Widen F32/F16 weights to BF16 (dtype_bits 32 or 16; is_f16 picks F16 over BF16 for 16 bits).
void qs_launch_to_bf16(const void *w, int dtype_bits, bool is_f16, int64_t count, __nv_bfloat16 *out,
                       cudaStream_t s);

typedef enum {
    QS_ACTQ_STATIC_TENSOR,   // scale given (device scalar)
    QS_ACTQ_DYNAMIC_TENSOR,  // scale = amax(x) / 448 over all of x
    QS_ACTQ_DYNAMIC_TOKEN,   // one scale per row
    QS_ACTQ_DYNAMIC_GROUP    // one scale per row per `group` columns
} qs_actq_mode;

// Quantizes x[m,k] to FP8 (q may be NULL) and/or writes the dequantized value back as BF16
// (qdq may be NULL). scales: device buffer, per mode: 1 float (tensor; input for STATIC) plus m
// floats of scratch for DYNAMIC_TENSOR, m floats (token), or ceil(k/group) * stride floats laid
// out group-major: scales[g * stride + row] (the outer-dim-major layout cuBLASLt's VEC128 mode
// reads; stride >= m allows a padded operand).
int qs_launch_quant_fp8_act(const __nv_bfloat16 *x, int64_t m, int64_t k, qs_actq_mode mode, int group,
                            int64_t stride, float *scales, uint8_t *q, __nv_bfloat16 *qdq, cudaStream_t s);
// dst[i] = src[0] for i < n (a per-tensor scale spread into a per-row vector).
void qs_launch_fill_from_scalar(const float *src, float *dst, int64_t n, cudaStream_t s);
// NVFP4 activations, quantize-dequantize in place of a W4A4 kernel's input: per 16 elements an
// E4M3 scale of amax/6 relative to the global scale (multiply-to-dequantize convention).
void qs_launch_qdq_nvfp4_act(const __nv_bfloat16 *x, int64_t m, int64_t k, float global_scale,
                             __nv_bfloat16 *out, cudaStream_t s);

#endif
