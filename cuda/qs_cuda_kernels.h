/* qs_cuda_kernels.h — the CUDA kernel descriptors the registry lists (src/core/kernel.h):
 *  - cublaslt: BF16 GEMM (bf16 scheme) and FP8 W8A8 GEMMs with per-tensor, per-channel/per-token
 *    (outer-vector) and 128x128-block scales, as far as the machine's cuBLASLt supports them;
 *  - emulation: every scheme, dequantize to BF16 then a cuBLASLt BF16 GEMM (W8A8/W4A4 schemes
 *    also quantize-dequantize their activations, so the result is the checkpoint's function).
 * Only linked when nvcc is found (QS_HAVE_CUDA). */
#ifndef QS_CUDA_KERNELS_H
#define QS_CUDA_KERNELS_H

#include "core/kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

extern const qs_kernel qs_kernel_cublaslt_bf16;
extern const qs_kernel qs_kernel_cublaslt_fp8;
extern const qs_kernel qs_kernel_emulation_linear;
/* marlin: FP8 and NVFP4 weights expanded to BF16 in registers, BF16 tensor cores (marlin*.cu). */
extern const qs_kernel qs_kernel_marlin_linear;
/* MoE: the experts as per-expert GEMMs over the tokens sorted by expert, each through the linear
 * kernel of the same name; SwiGLU between; a weighted, fixed-order combine. */
extern const qs_kernel qs_kernel_cublaslt_moe_bf16;
extern const qs_kernel qs_kernel_cublaslt_moe_fp8;
extern const qs_kernel qs_kernel_emulation_moe;
extern const qs_kernel qs_kernel_marlin_moe;

#ifdef __cplusplus
}
#endif

#endif
