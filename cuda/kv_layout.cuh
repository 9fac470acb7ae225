// kv_layout.cuh — where a row of the paged KV cache lives, for every kernel that reads or writes
// it: per layer [block][kv_head][slot in block][head_dim] BF16, QS_KV_BLOCK_SIZE slots a block.
// Element offsets, in 64 bits. (The two functions write the same formula out rather than share a
// third: so written, every kernel that took them compiles to the instructions it had before.)
#ifndef QS_CUDA_KV_LAYOUT_CUH
#define QS_CUDA_KV_LAYOUT_CUH

#include <stdint.h>

extern "C" {
#include "core/kv_layout.h" // QS_KV_BLOCK_SIZE
}

// The row of KV head kvh at cache slot `slot` (a slot_mapping entry, not negative).
__device__ __forceinline__ int64_t qs_kv_slot_row(int32_t slot, int n_kv, int kvh, int head_dim)
{
    const int64_t block = slot / QS_KV_BLOCK_SIZE, in_block = slot % QS_KV_BLOCK_SIZE;
    return ((block * n_kv + kvh) * QS_KV_BLOCK_SIZE + in_block) * head_dim;
}

// The row of KV head kvh at position p of the sequence whose block table is `table`.
__device__ __forceinline__ int64_t qs_kv_pos_row(const int32_t *table, int p, int n_kv, int kvh, int head_dim)
{
    return ((table[p / QS_KV_BLOCK_SIZE] * (int64_t)n_kv + kvh) * QS_KV_BLOCK_SIZE + p % QS_KV_BLOCK_SIZE) * head_dim;
}

#endif
