// blaslt.h — one process-wide cuBLASLt handle and workspace, and the two GEMM shapes qserve
// needs, both as y[m,n] = x[m,k] · w[n,k]^T in row-major terms (cuBLASLt's "TN" layout):
//  - BF16 x BF16 -> BF16 with an optional BF16 bias [n];
//  - FP8 E4M3 x FP8 E4M3 -> BF16 with scale modes for the weight (A) and activation (B) operands.
// Heuristic results are cached per shape. The engine drives the device from one thread.
#ifndef QS_CUDA_BLASLT_H
#define QS_CUDA_BLASLT_H

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <stdint.h>

extern "C" {
#include "util/error.h"
}

int qs_blaslt_gemm_bf16(const __nv_bfloat16 *w, const __nv_bfloat16 *x, const __nv_bfloat16 *bias,
                        __nv_bfloat16 *y, int64_t m, int64_t n, int64_t k, cudaStream_t s, qs_err *err);

// a_mode / b_mode: CUBLASLT_MATMUL_MATRIX_SCALE_* for the weight and activation scales
// (device pointers). Returns 1 with no error text when cuBLASLt has no algorithm for this
// combination and shape (so callers can fall back or report), 0 on success, -1 on errors.
int qs_blaslt_gemm_fp8(const uint8_t *w, const float *w_scale, int a_mode, const uint8_t *x, const float *x_scale,
                       int b_mode, const __nv_bfloat16 *bias, __nv_bfloat16 *y, int64_t m, int64_t n, int64_t k,
                       cudaStream_t s, qs_err *err);

// 1 if cuBLASLt reports an FP8 algorithm for these modes and shape on the current device.
int qs_blaslt_fp8_supported(int a_mode, int b_mode, int64_t m, int64_t n, int64_t k);

#endif
