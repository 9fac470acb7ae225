// marlin_workspace.h — the marlin buffers only marlin_gemm.cu grows directly (marlin_workspace.cu,
// which also defines marlin.h's split_workspace and permuted_activations).
#ifndef QS_CUDA_MARLIN_WORKSPACE_H
#define QS_CUDA_MARLIN_WORKSPACE_H

#include <cuda_bf16.h>
#include <stddef.h>

#include "util/error.h"

namespace qs_marlin {

// Grows the split-K workspace to `floats` partial sums and `counters` zeroed tickets.
int grow_split_workspace(size_t floats, size_t counters, qs_err *err);
// A device buffer of at least n BF16 for the zero-padded activation copy (k not a multiple of the
// k step); NULL and err set when it would have to grow during a CUDA graph capture.
__nv_bfloat16 *padded_activations(size_t n, qs_err *err);

} // namespace qs_marlin

#endif
