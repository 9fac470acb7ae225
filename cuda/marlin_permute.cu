// marlin_permute.cu — the activations copied into the packer's k order (marlin_layout.h): xp[m][j]
// = x[m][logical source of j], k_pad wide, zeros past k. The wgmma kernel (marlin_wgmma.cu) and the
// stream kernel's rewrite-free path (marlin_stream.cu) read B in that order. Per thread one 32-k
// item of a row: four 8-k chunks in, the stream kernel's own 4 x 4 transpose of 4-byte pairs
// (marlin_stream_rewrite.h), four 16-byte stores out.
#include <algorithm>

#include "marlin.h"
#include "marlin_device.cuh"
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

template <bool FP4>
__global__ void __launch_bounds__(256) permute_kernel(const __nv_bfloat16 *x, int xs, __nv_bfloat16 *xp, int m, int k,
                                                      int k_pad)
{
    allow_next_grid(); // the kernel after it waits for all of this grid before reading xp
    const int items = k_pad / 32;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (int64_t)m * items;
         i += (int64_t)gridDim.x * blockDim.x) {
        const int row = (int)(i / items), b = (int)(i % items); // item b: k [32b, 32b + 32) of xp
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
}

} // namespace

int permute_activations(const Layer &l, const __nv_bfloat16 *x, int64_t xs, int64_t m, __nv_bfloat16 *xp,
                        cudaStream_t s, qs_err *err)
{
    // A plain launch, after the kernel that wrote x: as a programmatic dependent launch it made
    // every stream-kernel call ~5 us slower (docs/decisions.md).
    const int64_t threads = m * (l.k_pad / 32);
    const unsigned blocks = (unsigned)std::min<int64_t>((threads + 255) / 256, 4096);
    if (l.fp4)
        permute_kernel<true><<<blocks, 256, 0, s>>>(x, (int)xs, xp, (int)m, (int)l.k, (int)l.k_pad);
    else
        permute_kernel<false><<<blocks, 256, 0, s>>>(x, (int)xs, xp, (int)m, (int)l.k, (int)l.k_pad);
    QS_LAUNCH_CHECK(err);
    return 0;
}

} // namespace qs_marlin
