// marlin_pair.cu — the activations of marlin's paired FP8 path (the stream kernel's Paired
// activation path, marlin_stream.cu): each BF16 row split, per 128-k block, into two E4M3 rows at
// one power-of-two scale (src/quant/fp8_pair.h is the CPU reference and the proof):
//   e = 8 - p where the block's largest |x| is in [2^(p-1), 2^p), so it lands in [128, 256);
//   hi = e4m3(x 2^e), lo = e4m3(x 2^e - hi), factor = 2^-e,
// so W x = sum over blocks of (W hi + W lo) * factor: two FP8 wgmma over the weights' own bytes,
// exact for every element within 2^-10 of its block's largest.
#include <cuda_fp8.h>

#include "cuda_check.h"
#include "marlin.h"
#include "marlin_device.cuh"

namespace qs_marlin {
namespace {

constexpr int kBlockK = 128; // k per scale block: one stage of the stream kernel

__device__ __forceinline__ uint8_t to_e4m3(float v)
{
    return (uint8_t)__nv_cvt_float_to_fp8(v, __NV_SATFINITE, __NV_E4M3);
}
__device__ __forceinline__ float from_e4m3(uint8_t b)
{
    return __half2float(__half(__nv_cvt_fp8_to_halfraw((__nv_fp8_storage_t)b, __NV_E4M3)));
}

// One warp per (token, 128-k block): each lane 4 consecutive k. k past the layer's reads as zero
// (the padded weights there are zeros too).
__global__ void pair_split_kernel(const __nv_bfloat16 *x, int xs, int m, int k, int k_pad, int mp, uint8_t *hi,
                                  uint8_t *lo, float *factor)
{
    // the stream kernel after it (a programmatic dependent launch) may start now: its weight copies
    // do not read what this kernel writes, and its activation copies wait for this grid's end
    allow_next_grid();
    const int kblocks = k_pad / kBlockK;
    const int item = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5), lane = threadIdx.x & 31;
    if (item >= m * kblocks)
        return;
    const int t = item / kblocks, b = item % kblocks, k0 = b * kBlockK + 4 * lane;
    float v[4];
    float amax = 0.f;
#pragma unroll
    for (int j = 0; j < 4; j++) {
        v[j] = k0 + j < k ? __bfloat162float(x[(size_t)t * xs + k0 + j]) : 0.f;
        amax = fmaxf(amax, fabsf(v[j]));
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
    int e = 0;
    if (amax > 0.f) {
        int p;
        frexpf(amax, &p);
        e = 8 - p;
    }
    uint32_t h = 0, l = 0;
#pragma unroll
    for (int j = 0; j < 4; j++) {
        const float scaled = ldexpf(v[j], e); // exact: a power of two
        const uint8_t hb = to_e4m3(scaled);
        h |= (uint32_t)hb << (8 * j);
        l |= (uint32_t)to_e4m3(scaled - from_e4m3(hb)) << (8 * j);
    }
    const size_t at = (size_t)t * k_pad + k0;
    *(uint32_t *)(hi + at) = h;
    *(uint32_t *)(lo + at) = l;
    if (lane == 0)
        factor[(size_t)b * mp + t] = ldexpf(1.f, -e);
}

} // namespace

size_t pair_bytes(const Layer &l, int64_t m)
{
    const int64_t mp = (m + 3) / 4 * 4;
    return (size_t)(2 * m * l.k_pad) + (size_t)(l.k_pad / kBlockK * mp) * sizeof(float);
}

int pair_split(const Layer &l, const __nv_bfloat16 *x, int64_t xs, int64_t m, uint8_t *pairs, cudaStream_t s,
               qs_err *err)
{
    const int64_t mp = (m + 3) / 4 * 4, items = m * (l.k_pad / kBlockK);
    uint8_t *hi = pairs, *lo = pairs + m * l.k_pad;
    float *factor = (float *)(pairs + 2 * m * l.k_pad);
    // A plain launch after the kernel that wrote x, as permute_activations (marlin_permute.cu).
    // QSERVE_MARLIN_PAIR_SPLIT=0 skips it (wrong results: to time the stream kernel alone).
    static const bool skip = env_int("QSERVE_MARLIN_PAIR_SPLIT", 1) == 0;
    if (skip)
        return 0;
    pair_split_kernel<<<(unsigned)((items + 7) / 8), 256, 0, s>>>(x, (int)xs, (int)m, (int)l.k, (int)l.k_pad, (int)mp,
                                                                  hi, lo, factor);
    QS_LAUNCH_CHECK(err);
    return 0;
}

} // namespace qs_marlin
