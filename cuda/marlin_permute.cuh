// marlin_permute.cuh — one 32-k item of the activations' permuted copy (the packer's k order,
// marlin_layout.h; marlin_stream_rewrite.h has the index math): written by permute_kernel
// (marlin_permute.cu) for the wgmma kernel, and by the stream kernel's own rewrite-free path
// (marlin_stream.cu), whose CTAs share the copy out among themselves.
#ifndef QS_CUDA_MARLIN_PERMUTE_CUH
#define QS_CUDA_MARLIN_PERMUTE_CUH

#include <cuda_bf16.h>
#include <stdint.h>

#include "marlin_stream_rewrite.h"

namespace qs_marlin {
namespace {

// x[kc .. kc+8) of one row, zeros past k: one 16-byte load where the chunk is whole and aligned
// (every stream-kernel layer), element by element otherwise (a k that is no multiple of 8).
__device__ __forceinline__ uint4 load_chunk(const __nv_bfloat16 *row, int kc, int k)
{
    const __nv_bfloat16 *p = row + kc;
    if (kc + 8 <= k && ((uintptr_t)p & 15) == 0)
        return __ldg((const uint4 *)p);
    __align__(16) __nv_bfloat16 v[8];
#pragma unroll
    for (int e = 0; e < 8; e++)
        v[e] = kc + e < k ? p[e] : __float2bfloat16_rn(0.f);
    return *(const uint4 *)v;
}

// Item b of row `row`: k [32b, 32b + 32) of xp (rows k_pad wide) from x (rows xs apart, k wide):
// four 8-k chunks in, the 4 x 4 transpose of 4-byte pairs, four 16-byte stores.
template <bool FP4>
__device__ __forceinline__ void permute_item(const __nv_bfloat16 *x, int64_t xs, __nv_bfloat16 *xp, int row, int b,
                                             int k, int k_pad)
{
    uint4 ch[4], core[4];
#pragma unroll
    for (int c = 0; c < 4; c++)
        ch[c] = load_chunk(x + (size_t)row * xs, item_source_k<FP4>(b, c), k);
    transpose_pairs(ch, core);
    uint4 *dst = (uint4 *)(xp + (size_t)row * k_pad + 32 * b);
#pragma unroll
    for (int o = 0; o < 4; o++)
        dst[o] = core[o];
}

} // namespace
} // namespace qs_marlin

#endif
