// scratch.h — process-wide, growable device scratch buffers by slot. Linear layers run one
// after another on the engine's stream, so one buffer per purpose serves every layer (an
// emulation layer's dequantized weights, quantized activations, padded operands).
#ifndef QS_CUDA_SCRATCH_H
#define QS_CUDA_SCRATCH_H

#include <stddef.h>

extern "C" {
#include "util/error.h"
}

enum qs_scratch_slot {
    QS_SCRATCH_WEIGHT_BF16,
    QS_SCRATCH_ACT_FP8,
    QS_SCRATCH_ACT_SCALES,
    QS_SCRATCH_ACT_BF16,
    QS_SCRATCH_OUT_BF16,
    QS_SCRATCH_MOE_X,      // token rows gathered in expert order
    QS_SCRATCH_MOE_GATE,
    QS_SCRATCH_MOE_UP,
    QS_SCRATCH_MOE_Y,      // expert outputs in expert order
    QS_SCRATCH_MOE_INDEX,  // gather and combine index arrays
    QS_SCRATCH_ATTN_SPLIT, // split-KV partial softmax states
    QS_SCRATCH_ATTN_PREFILL, // which tokens the tensor-core prefill kernel takes
    QS_SCRATCH_COUNT
};

// Returns a buffer of at least `bytes` for slot (contents undefined).
int qs_scratch_get(qs_scratch_slot slot, size_t bytes, void **ptr, qs_err *err);

#endif
