// marlin_gemv.cu — the `marlin` kernel for steps of at most 8 tokens (decode), where the GEMM is
// a matrix-vector product bound by reading the weights once.
//
// The pipelined kernel (marlin_gemm.cu) stages a CTA's weights through shared memory behind
// __syncthreads; at M <= 8 that measured slower (4096x4096: 11.8 us against 8.4 here). Here a CTA
// is 8 warps on one 16-row strip; each warp takes its share of the CTA's k units and loads its
// lanes' 16-byte pieces of packed weights (the packed layout puts each lane's mma fragments in its
// own 16 bytes) straight into registers, two batches in flight, with the activation fragments
// read through L1 (every warp of the SM reads the same few KB). Warps' sums meet in shared
// memory; when one CTA per strip would not fill the GPU, k is also split across CTAs and their
// partials summed by the last one (marlin_device.cuh), deterministically.
#include <algorithm>
#include <stdlib.h>

#include "marlin.h"
#include "marlin_device.cuh"

namespace qs_marlin {
namespace {

constexpr int kGemvWarps = 8;
constexpr int kGemvThreads = kGemvWarps * 32;
// Units per batch, two batches in flight per warp: 8 KB (FP8) / 4 KB (NVFP4, whose expansion
// needs more registers) per warp. (A variant streaming through per-warp cp.async rings in shared
// memory, more bytes in flight, measured slower: docs/marlin.md.)
template <bool FP4> constexpr int kBatch = FP4 ? 4 : 8;
constexpr int kMaxGemvM = 8; // one n8 token tile
constexpr int kMinUnitsPerWarp = 8;

// Weights are read once: no L1 allocation, non-coherent path.
__device__ __forceinline__ uint4 ld_weights(const uint8_t *p)
{
    uint4 v;
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p));
    return v;
}

// Two BF16 activations x[m][k], x[m][k+1] (k even) as one register; 0 past the real tokens.
__device__ __forceinline__ uint32_t x_pair(const Params &p, int m, int k)
{
    return m < p.M ? __ldg((const unsigned int *)(p.x + (size_t)m * p.XS + k)) : 0u;
}

// One batch of a lane's weights in registers, and for NVFP4 its scale codes of rows r and r+8.
template <bool FP4> struct Batch {
    uint4 w[kBatch<FP4>];
    uint32_t s_r[FP4 ? kBatch<FP4> : 1], s_r8[FP4 ? kBatch<FP4> : 1];
};

template <bool FP4> __global__ void __launch_bounds__(kGemvThreads, 2) marlin_gemv_kernel(const Params p)
{
    constexpr int B = kBatch<FP4>;
    constexpr int UNIT_K = FP4 ? kFp4UnitK : kFp8UnitK;
    __shared__ float red[kGemvWarps][4][32];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, r = lane >> 2, c = lane & 3;
    const int strip = blockIdx.x % p.strips, split = blockIdx.x / p.strips;
    const int cta_u0 = (int)((long long)split * p.units_k / p.splits);
    const int cta_n = (int)((long long)(split + 1) * p.units_k / p.splits) - cta_u0;
    const int u0 = cta_u0 + warp * cta_n / kGemvWarps, u1 = cta_u0 + (warp + 1) * cta_n / kGemvWarps;
    const uint8_t *wp = p.w + (size_t)strip * p.units_k * kUnitBytes + lane * 16;

    auto load = [&](Batch<FP4> &b, int j) {
#pragma unroll
        for (int i = 0; i < B; i++) {
            const int u = j + i;
            b.w[i] = u < u1 ? ld_weights(wp + (size_t)u * kUnitBytes) : make_uint4(0, 0, 0, 0);
            if (FP4) {
                // scales of (strip, 256-k step u/4): 16 rows x 16 bytes, unit u%4's 4 bytes per row
                const uint8_t *sc = p.sc + ((size_t)strip * p.ksteps + u / 4) * kFp4ScaleStepBytes + (u % 4) * 4;
                b.s_r[i] = u < u1 ? __ldg((const unsigned int *)(sc + r * 16)) : 0u;
                b.s_r8[i] = u < u1 ? __ldg((const unsigned int *)(sc + (r + 8) * 16)) : 0u;
            }
        }
    };
    float acc[4] = {0.f, 0.f, 0.f, 0.f};
    // One k16 tile: A from the weights, B = x[r][k0 + 2c, +1] and x[r][k0 + 8 + 2c, +1].
    auto tile = [&](const uint32_t a[4], int k0) { mma(acc, a, x_pair(p, r, k0 + 2 * c), x_pair(p, r, k0 + 8 + 2 * c)); };
    auto compute = [&](const Batch<FP4> &b, int j) {
#pragma unroll
        for (int i = 0; i < B; i++) {
            if (j + i >= u1)
                break;
            const int k0 = (j + i) * UNIT_K;
            const uint4 v = b.w[i];
            if (!FP4) {
                uint32_t a[8];
                dequant_fp8(v.x, a[0], a[1]);
                dequant_fp8(v.y, a[2], a[3]);
                dequant_fp8(v.z, a[4], a[5]);
                dequant_fp8(v.w, a[6], a[7]);
                tile(a, k0);
                tile(a + 4, k0 + 16);
            } else {
                const uint32_t words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
                for (int q = 0; q < 4; q++) {
                    uint32_t a[4];
                    dequant_fp4(words[q], scale_bf16x2(b.s_r[i], q), scale_bf16x2(b.s_r8[i], q), a);
                    tile(a, k0 + 16 * q);
                }
            }
        }
    };

    // The weights do not depend on the previous kernel: the first batch is requested before
    // waiting for it (programmatic dependent launch); the activations are read after.
    Batch<FP4> b0, b1;
    load(b0, u0);
    wait_for_previous_grid();
    allow_next_grid();
    for (int j = u0; j < u1; j += 2 * B) {
        if (j + B < u1)
            load(b1, j + B);
        compute(b0, j);
        if (j + B >= u1)
            break;
        if (j + 2 * B < u1)
            load(b0, j + 2 * B);
        compute(b1, j + B);
    }

    // Sum the warps: the first four warps each own one accumulator slot of every lane.
#pragma unroll
    for (int e = 0; e < 4; e++)
        red[warp][e][lane] = acc[e];
    __syncthreads();
    const int e = warp;
    const int m = 2 * c + (e & 1), n = strip * 16 + r + (e >> 1) * 8;
    const bool owner = warp < 4 && m < p.M;
    float v = 0.f;
    if (warp < 4)
#pragma unroll
        for (int w = 0; w < kGemvWarps; w++)
            v += red[w][e][lane];
    if (p.splits > 1) {
        if (owner)
            __stcg(partial_at(p, split, m, n), v);
        if (!last_of_tile(p, strip))
            return;
        if (owner)
            v = sum_partials(p, m, n);
    }
    if (owner)
        store_output(p, v, m, n);
}

// k slices per strip (CTAs = strips x slices): when the strips do not fill one wave of resident
// CTAs (two per SM), k is split to fill it, keeping at least kMinUnitsPerWarp units per warp.
int gemv_splits(const Layer &l, int sms)
{
    const int64_t strips = l.n_pad / 16, units_k = l.k_pad / (l.fp4 ? kFp4UnitK : kFp8UnitK);
    const int64_t wave = (int64_t)sms * 2; // __launch_bounds__(256, 2)
    int64_t s = std::min<int64_t>(wave / strips, units_k / (kGemvWarps * kMinUnitsPerWarp));
    return (int)std::max<int64_t>(1, std::min<int64_t>(s, 16));
}

// The split-K partials (one per k slice, token and padded output) and tickets (one per strip).
void workspace_for(const Layer &l, int splits, int64_t m, size_t *floats, size_t *counters)
{
    *floats = splits > 1 ? (size_t)splits * m * l.n_pad : 0;
    *counters = splits > 1 ? (size_t)(l.n_pad / 16) : 0;
}

} // namespace

// FP8 with per-tensor or per-channel scales and NVFP4; 128x128-block FP8 stays on the GEMM.
// QSERVE_MARLIN_GEMV=0 turns the kernel off (for measurements).
int64_t gemv_max_m(const Layer &l)
{
    static const bool off = [] {
        const char *e = getenv("QSERVE_MARLIN_GEMV");
        return e && *e == '0';
    }();
    return (l.block || off) ? 0 : kMaxGemvM;
}

void gemv_workspace(const Layer &l, int64_t m, size_t *floats, size_t *counters)
{
    Runtime rt;
    qs_err err;
    workspace_for(l, runtime(&rt, &err) ? 1 : gemv_splits(l, rt.sms), m, floats, counters);
}

int gemv(const Layer &l, Params &p, cudaStream_t s, qs_err *err)
{
    Runtime rt;
    if (runtime(&rt, err))
        return -1;
    p.strips = (int)(l.n_pad / 16);
    p.units_k = (int)(l.k_pad / (l.fp4 ? kFp4UnitK : kFp8UnitK));
    p.ksteps = (int)(l.k_pad / (l.fp4 ? kFp4StepK : kFp8StepK));
    p.splits = gemv_splits(l, rt.sms);
    size_t floats, counters;
    workspace_for(l, p.splits, p.M, &floats, &counters);
    if (p.splits > 1 && split_workspace(floats, counters, p, err))
        return -1;
    const unsigned grid = (unsigned)(p.strips * p.splits);
    return l.fp4 ? launch_kernel(marlin_gemv_kernel<true>, grid, kGemvThreads, 0, rt.pdl, s, p, err)
                 : launch_kernel(marlin_gemv_kernel<false>, grid, kGemvThreads, 0, rt.pdl, s, p, err);
}

} // namespace qs_marlin
