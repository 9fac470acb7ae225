// marlin_stream.cu — the `marlin` kernel for steps of at most 8 tokens (decode): a matrix-vector
// product bound by reading the weights once, every warp streaming one contiguous run of them.
//
// The register kernel (marlin_gemv.cu) gives each CTA one 16-row strip (split over k when the
// strips are few): at k = 4096 a warp has one round of loads before its CTA ends, the memory
// system idles while CTAs turn over, and 6144 rows make 1.45 waves (Nsight Compute,
// docs/bench/h200-call11-ncu-marlin-gemv.txt: 55% of DRAM bandwidth at 28672x4096, 28% at
// 6144x4096). Here:
//  - The grid is the resident CTAs (two per SM) and no more; every warp takes a contiguous run
//    of the packed weight units. The packed layout stores a strip's units one after another and
//    the strips one after another, so the units in (strip, k unit) order are one array and warp w
//    takes units [U w / W, U (w+1) / W) of the U units over W warps: every SM reads the same bytes
//    whatever the layer's shape, with no partial wave and no split factor to pick.
//  - A warp streams its run with two batches of weights in flight in registers (as the register
//    kernel does) and the activations through L1.
//  - Runs cross strip boundaries. A warp that covers a whole strip stores its outputs; pieces of
//    a strip shared by several warps are written as partial sums (each warp has two slots: the
//    strip it starts in and the one it ends in), and the last warp to finish the strip (a ticket
//    per strip) adds them in warp order: deterministic, and the same at every token count.
// (A first version streamed each warp's run through a shared-memory ring filled by bulk async
// copies, one CTA per SM: correct but slower, 68 us at 28672x4096 against 38.5, issue-bound with
// two warps per scheduler: docs/bench/h200-call12-marlin-stream-v1.txt, h200-call13-*.)
#include <algorithm>
#include <stdlib.h>
#include <string.h>

#include "marlin.h"
#include "marlin_device.cuh"

namespace qs_marlin {
namespace {

constexpr int kStreamWarps = 8;
constexpr int kStreamThreads = kStreamWarps * 32;
constexpr int kMaxStreamM = 8;      // one n8 token tile
constexpr int kSlotFloats = 8 * 16; // one warp's partial sums for one strip: 8 tokens x 16 rows

// The warp whose run holds unit f, and the first unit of warp w's run (U units over W warps).
__device__ __forceinline__ int warp_of(long long f, long long U, int W) { return (int)(((f + 1) * W + U - 1) / U - 1); }
__device__ __forceinline__ long long run_start(int w, long long U, int W) { return U * w / W; }

// The activations one unit needs: per k16 tile of the unit, x[r][k0 + 2c, +1] and
// x[r][k0 + 8 + 2c, +1] (0 past the real tokens).
template <bool FP4> struct UnitX {
    uint32_t b[FP4 ? 8 : 4];
};

template <bool FP4> __device__ __forceinline__ UnitX<FP4> unit_x(const Params &p, int r, int c, int k0)
{
    UnitX<FP4> x;
    const bool real = r < p.M;
    const __nv_bfloat16 *row = p.x + (size_t)r * p.XS + k0 + 2 * c;
#pragma unroll
    for (int i = 0; i < (FP4 ? 8 : 4); i++)
        x.b[i] = real ? __ldg((const unsigned int *)(row + 8 * i)) : 0u;
    return x;
}

// NVFP4: the scale codes of rows r and r + 8 for unit u of a strip (16 rows x 256 k per step).
struct UnitScales {
    uint32_t r, r8;
};
__device__ __forceinline__ UnitScales unit_scales(const Params &p, int strip, int u, int r)
{
    const uint8_t *sc = p.sc + ((size_t)strip * p.ksteps + u / 4) * kFp4ScaleStepBytes + (u % 4) * 4;
    return {__ldg((const unsigned int *)(sc + r * 16)), __ldg((const unsigned int *)(sc + (r + 8) * 16))};
}

// The finished piece of a strip (v: this warp's sums for its lane's four outputs): stored when
// the warp covered the whole strip, else added to the strip's partial sums, the last warp to
// arrive adding them up in warp order.
__device__ __forceinline__ void finish_piece(const Params &p, float v0, float v1, float v2, float v3, int strip, int gw,
                                          long long f0, long long f1, long long U, int W)
{
    const int lane = threadIdx.x & 31, r = lane >> 2, c = lane & 3;
    float v[4] = {v0, v1, v2, v3};
    const long long lo = (long long)strip * p.units_k, hi = lo + p.units_k;
    if (f0 > lo || f1 < hi) {
        const int slot = f0 >= lo ? 0 : 1; // the strip this run starts in, or the one it ends in
        float *mine = p.ws + ((size_t)gw * 2 + slot) * kSlotFloats;
#pragma unroll
        for (int e = 0; e < 4; e++)
            __stcg(mine + (2 * c + (e & 1)) * 16 + r + (e >> 1) * 8, v[e]);
        __threadfence();
        __syncwarp();
        int ticket = 0;
        if (lane == 0)
            ticket = atomicAdd(p.cnt + strip, 1);
        ticket = __shfl_sync(0xffffffffu, ticket, 0);
        const int w_lo = warp_of(lo, U, W), w_hi = warp_of(hi - 1, U, W);
        if (ticket != w_hi - w_lo)
            return;
        __threadfence();
#pragma unroll
        for (int e = 0; e < 4; e++)
            v[e] = 0.f;
        for (int w = w_lo; w <= w_hi; w++) {
            const float *part = p.ws + ((size_t)w * 2 + (run_start(w, U, W) >= lo ? 0 : 1)) * kSlotFloats;
#pragma unroll
            for (int e = 0; e < 4; e++)
                v[e] += __ldcg(part + (2 * c + (e & 1)) * 16 + r + (e >> 1) * 8);
        }
        if (lane == 0)
            p.cnt[strip] = 0;
    }
#pragma unroll
    for (int e = 0; e < 4; e++) {
        const int m = 2 * c + (e & 1);
        if (m < p.M)
            store_output(p, v[e], m, strip * 16 + r + (e >> 1) * 8);
    }
}

// Weights are read once: no L1 allocation, non-coherent path.
__device__ __forceinline__ uint4 ld_weights(const uint8_t *p)
{
    uint4 v;
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p));
    return v;
}

// Where a unit of the run is: its strip and its index in the strip.
struct Cursor {
    int strip, u;
    __device__ __forceinline__ void next(int units_k)
    {
        const bool wrap = ++u == units_k;
        strip += wrap;
        u = wrap ? 0 : u;
    }
};

// One batch of a lane's weights in registers, and for NVFP4 its scale codes of rows r and r+8.
template <bool FP4, int B> struct Batch {
    uint4 w[B];
    uint32_t s_r[FP4 ? B : 1], s_r8[FP4 ? B : 1];
};

template <bool FP4, int B, int CTAS_PER_SM>
__global__ void __launch_bounds__(kStreamThreads, CTAS_PER_SM) marlin_stream_kernel(const Params p)
{
    constexpr int UNIT_K = FP4 ? kFp4UnitK : kFp8UnitK;
    const int lane = threadIdx.x & 31, r = lane >> 2, c = lane & 3;
    const int gw = blockIdx.x * kStreamWarps + (threadIdx.x >> 5), W = p.warps;
    if (gw >= W)
        return; // no block-wide barrier follows
    const long long U = (long long)p.strips * p.units_k;
    const long long f0 = run_start(gw, U, W), f1 = run_start(gw + 1, U, W);
    const int n = (int)(f1 - f0);
    const uint8_t *wp = p.w + (size_t)f0 * kUnitBytes + lane * 16;
    const Cursor start = {(int)(f0 / p.units_k), (int)(f0 % p.units_k)};
    Cursor at_load = start, at_compute = start;

    auto load = [&](Batch<FP4, B> &b, int j) {
#pragma unroll
        for (int i = 0; i < B; i++) {
            const bool in = j + i < n;
            b.w[i] = in ? ld_weights(wp + (size_t)(j + i) * kUnitBytes) : make_uint4(0, 0, 0, 0);
            if (FP4) {
                const UnitScales s = in ? unit_scales(p, at_load.strip, at_load.u, r) : UnitScales{0u, 0u};
                b.s_r[i] = s.r;
                b.s_r8[i] = s.r8;
                at_load.next(p.units_k);
            }
        }
    };
    // Two accumulators (even and odd k16 tiles) so consecutive mma do not wait for each other.
    float acc[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
    // A strip completed inside a batch is finished after the batch's last mma: finishing fences
    // memory, and no activation load of the batch could be moved above a fence. (Batches never
    // hold more than one strip end: B <= units_k.)
    float done[4];
    int done_strip = -1;
    auto compute = [&](const Batch<FP4, B> &b, int j) {
#pragma unroll
        for (int i = 0; i < B; i++) {
            if (j + i >= n)
                break;
            const UnitX<FP4> x = unit_x<FP4>(p, r, c, at_compute.u * UNIT_K);
            const uint4 v = b.w[i];
            if (!FP4) {
                uint32_t a[8];
                dequant_fp8(v.x, a[0], a[1]);
                dequant_fp8(v.y, a[2], a[3]);
                dequant_fp8(v.z, a[4], a[5]);
                dequant_fp8(v.w, a[6], a[7]);
                mma(acc[0], a, x.b[0], x.b[1]);
                mma(acc[1], a + 4, x.b[2], x.b[3]);
            } else {
                const uint32_t words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
                for (int q = 0; q < 4; q++) {
                    uint32_t a[4];
                    dequant_fp4(words[q], scale_bf16x2(b.s_r[i], q), scale_bf16x2(b.s_r8[i], q), a);
                    mma(acc[q & 1], a, x.b[2 * q], x.b[2 * q + 1]);
                }
            }
            if (at_compute.u + 1 == p.units_k) {
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    done[e] = acc[0][e] + acc[1][e];
                    acc[0][e] = acc[1][e] = 0.f;
                }
                done_strip = at_compute.strip;
            }
            at_compute.next(p.units_k);
        }
        if (done_strip >= 0) {
            finish_piece(p, done[0], done[1], done[2], done[3], done_strip, gw, f0, f1, U, W);
            done_strip = -1;
        }
    };

    // The weights do not depend on the previous kernel: the first batch is requested before
    // waiting for it (programmatic dependent launch); the activations are read after.
    Batch<FP4, B> b0, b1;
    load(b0, 0);
    wait_for_previous_grid();
    allow_next_grid();
    for (int j = 0; j < n; j += 2 * B) {
        if (j + B < n)
            load(b1, j + B);
        compute(b0, j);
        if (j + B >= n)
            break;
        if (j + 2 * B < n)
            load(b0, j + 2 * B);
        compute(b1, j + B);
    }
    if (at_compute.u != 0)
        finish_piece(p, acc[0][0] + acc[1][0], acc[0][1] + acc[1][1], acc[0][2] + acc[1][2], acc[0][3] + acc[1][3],
                     at_compute.strip, gw, f0, f1, U, W);
}

// Units per batch (two batches in flight per warp) and resident CTAs per SM: 8 units (4 KB per
// warp per batch) at two CTAs for FP8, 4 for NVFP4 (whose expansion needs more registers);
// QSERVE_MARLIN_STREAM_BATCH=small halves the batch for a third resident CTA (for measurements).
bool small_batches()
{
    static const bool small = [] {
        const char *e = getenv("QSERVE_MARLIN_STREAM_BATCH");
        return e && !strcmp(e, "small");
    }();
    return small;
}

int ctas_per_sm() { return small_batches() ? 3 : 2; }

// Warps over the grid: every resident CTA slot once, and at most one warp per unit.
int stream_warps(const Layer &l, int sms)
{
    const int64_t units = (l.n_pad / 16) * (l.k_pad / (l.fp4 ? kFp4UnitK : kFp8UnitK));
    return (int)std::min<int64_t>((int64_t)sms * ctas_per_sm() * kStreamWarps, units);
}

template <bool FP4, int B, int CTAS>
int launch_stream(const Params &p, const Runtime &rt, cudaStream_t s, qs_err *err)
{
    const unsigned grid = (unsigned)((p.warps + kStreamWarps - 1) / kStreamWarps);
    return launch_kernel(marlin_stream_kernel<FP4, B, CTAS>, grid, kStreamThreads, 0, rt.pdl, s, p, err);
}

} // namespace

// FP8 with per-tensor or per-channel scales and NVFP4; 128x128-block FP8 stays on the GEMM.
// QSERVE_MARLIN_STREAM=0 runs the register kernel instead (for measurements).
int64_t stream_max_m(const Layer &l, const Runtime &rt)
{
    static const bool off = [] {
        const char *e = getenv("QSERVE_MARLIN_STREAM");
        return e && *e == '0';
    }();
    return (l.block || off) ? 0 : kMaxStreamM;
}

void stream_workspace(const Layer &l, const Runtime &rt, size_t *floats, size_t *counters)
{
    *floats = (size_t)stream_warps(l, rt.sms) * 2 * kSlotFloats;
    *counters = (size_t)(l.n_pad / 16);
}

int stream(const Layer &l, Params &p, const Runtime &rt, cudaStream_t s, qs_err *err)
{
    p.strips = (int)(l.n_pad / 16);
    p.units_k = (int)(l.k_pad / (l.fp4 ? kFp4UnitK : kFp8UnitK));
    p.ksteps = (int)(l.k_pad / (l.fp4 ? kFp4StepK : kFp8StepK));
    p.warps = stream_warps(l, rt.sms);
    size_t floats, counters;
    stream_workspace(l, rt, &floats, &counters);
    if (split_workspace(floats, counters, p, err))
        return -1;
    // A batch may hold one strip end at most: B <= units_k (>= 4: k is padded to 128 / 256).
    if (l.fp4)
        return small_batches() ? launch_stream<true, 2, 3>(p, rt, s, err) : launch_stream<true, 4, 2>(p, rt, s, err);
    return (small_batches() || p.units_k < 8) ? launch_stream<false, 4, 3>(p, rt, s, err)
                                               : launch_stream<false, 8, 2>(p, rt, s, err);
}

} // namespace qs_marlin
