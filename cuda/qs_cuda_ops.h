/* qs_cuda_ops.h — the CUDA implementation of the ops interface (src/ops/ops.h): BF16 activations,
 * BF16 weights for norms/embeddings/biases, FP32 math inside every kernel. Only built when nvcc
 * is found (QS_HAVE_CUDA). */
#ifndef QS_CUDA_OPS_H
#define QS_CUDA_OPS_H

#include "ops/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

const qs_ops *qs_ops_cuda(void);

#ifdef __cplusplus
}
#endif

#endif
