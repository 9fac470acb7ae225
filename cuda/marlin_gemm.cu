// marlin_gemm.cu — the `marlin` GEMM kernel: y[m,n] = x[m,k] W^T for FP8 E4M3 or NVFP4 weights
// packed by marlin_pack.cu and BF16 activations, on BF16 tensor cores with FP32 accumulation.
//
// A CTA is 4 warps; warp w owns 16 weight rows, so a CTA covers 64 output columns for one block
// of MT*8 tokens and one slice of k (split-K). Each pipeline stage brings, with cp.async, the
// CTA's weights for one k step (2 KB per warp: each lane its own four 16-byte pieces) and the
// activation rows (XOR-swizzled 16-byte chunks; k is permuted inside a unit, marlin_layout.h, so
// a lane's B fragments for a unit are one 16-byte shared-memory load), STAGES deep. A lane
// expands its own weight bytes to BF16 in registers and issues mma.m16n8k16 with W as the A
// operand and x^T as B. With several k slices, each CTA writes FP32 partials to a workspace and
// the last CTA of an output tile (an atomic ticket) sums them in split order — deterministic.
#include <algorithm>
#include <stdlib.h>

#include "cuda_check.h"
#include "cuda_stream.h"
#include "marlin.h"
#include "marlin_device.cuh"
#include "marlin_workspace.h"
#include "device_query.h"

namespace qs_marlin {
namespace {

constexpr int kWarps = 4; // per CTA by default; QSERVE_MARLIN_WARPS=8 tries 8 (one activation stage, twice the rows)
constexpr int kWarpStageBytes = 2048; // 16 rows x one k step of packed weights

// WR: 16-row weight strips per warp. Two strips let one activation fragment (16-byte load) feed
// four mma instead of two, which matters once MT is large enough for shared-memory reads of
// the activations to bound the loop.
template <bool FP4, int MT, int STAGES, bool BLOCK, int WR, int NW> struct Cfg {
    static constexpr int THREADS = NW * 32;
    static constexpr int BK = FP4 ? kFp4StepK : kFp8StepK;
    static constexpr int W_STAGE = NW * WR * kWarpStageBytes;
    static constexpr int SC_STAGE = FP4 ? NW * WR * kFp4ScaleStepBytes : 0;
    static constexpr int XROWS = MT * 8;
    static constexpr int XCH = BK / 8; // 16-byte chunks per activation row per stage
    static constexpr int X_STAGE = XROWS * BK * 2;
    static constexpr int STAGE = W_STAGE + SC_STAGE + X_STAGE;
    static constexpr int SMEM = STAGE * STAGES;
};

// Shared-memory slot of activation chunk ch (8 k) of token row `row` in a stage. A lane reads
// chunk c (FP8) or 2c + h (NVFP4) of unit u for token r: the 8 lanes of a 16-byte-load phase are
// two rows x four chunks, which this XOR puts in eight different bank groups.
template <bool FP4> __device__ __forceinline__ int x_swizzle(int ch, int row) { return ch ^ ((row & 1) << (FP4 ? 0 : 2)); }

template <bool FP4, int MT, int STAGES, bool BLOCK, int WR, int NW>
__global__ void __launch_bounds__(NW * 32) marlin_kernel(const Params p)
{
    using C = Cfg<FP4, MT, STAGES, BLOCK, WR, NW>;
    extern __shared__ __align__(16) uint8_t smem[];

    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    int bid = blockIdx.x;
    const int mb = bid % p.mblocks;
    bid /= p.mblocks;
    const int tile = bid % p.tiles_n;
    const int split = bid / p.tiles_n;
    const int s_begin = (int)((long long)split * p.ksteps / p.splits);
    const int s_end = (int)((long long)(split + 1) * p.ksteps / p.splits);
    const int nsteps = s_end - s_begin;
    const int rot = (p.rotate && nsteps > 0) ? tile % nsteps : 0;
    const int nb0 = (tile * NW + warp) * WR; // first 16-row strip of this warp
    bool active[WR];
#pragma unroll
    for (int w = 0; w < WR; w++)
        active[w] = nb0 + w < (p.NP >> 4);
    const bool any_active = active[0];
    const int m0 = mb * C::XROWS;
    const int xrows = min(C::XROWS, p.M - m0); // rows past M are never loaded: their outputs are dropped

    const int units_per_step = 4;
    const int units_k = p.K / (FP4 ? kFp4UnitK : kFp8UnitK);

    auto step_of = [&](int i) {
        int j = i + rot;
        return s_begin + (j >= nsteps ? j - nsteps : j);
    };
    auto load_weights = [&](int buf, int step) {
        uint8_t *st = smem + buf * C::STAGE;
#pragma unroll
        for (int w = 0; w < WR; w++) {
            if (!active[w])
                continue;
            const uint8_t *src = p.w + ((size_t)(nb0 + w) * units_k + (size_t)step * units_per_step) * kUnitBytes + lane * 16;
            uint8_t *dst = st + (warp * WR + w) * kWarpStageBytes + lane * 16;
#pragma unroll
            for (int u = 0; u < units_per_step; u++)
                cp_async16(dst + u * kUnitBytes, src + u * kUnitBytes);
            if (FP4 && lane < 16)
                cp_async16(st + C::W_STAGE + (warp * WR + w) * kFp4ScaleStepBytes + lane * 16,
                           p.sc + ((size_t)(nb0 + w) * p.ksteps + step) * kFp4ScaleStepBytes + lane * 16);
        }
    };
    auto load_activations = [&](int buf, int step) {
        uint8_t *xs = smem + buf * C::STAGE + C::W_STAGE + C::SC_STAGE;
        const __nv_bfloat16 *xg = p.x + (size_t)step * C::BK;
#pragma unroll
        for (int j = 0; j < (C::XROWS * C::XCH + C::THREADS - 1) / C::THREADS; j++) {
            int i = tid + j * C::THREADS;
            int row = i / C::XCH, ch = i % C::XCH;
            if (row < xrows)
                cp_async16(xs + (row * C::XCH + x_swizzle<FP4>(ch, row)) * 16, xg + (size_t)(m0 + row) * p.XS + ch * 8);
        }
    };
    auto load_stage = [&](int buf, int step) {
        load_weights(buf, step);
        load_activations(buf, step);
    };

    float acc[WR][MT][4];
#pragma unroll
    for (int w = 0; w < WR; w++)
#pragma unroll
        for (int t = 0; t < MT; t++)
#pragma unroll
            for (int e = 0; e < 4; e++)
                acc[w][t][e] = 0.f;

    // Prologue: the first stages' weights are requested before waiting for the previous kernel
    // (they do not depend on it), their activations after; all in the first commit group, the
    // other prologue groups left empty so that stage j is still complete at iteration j's wait.
#pragma unroll
    for (int s = 0; s < STAGES - 1; s++)
        if (s < nsteps)
            load_weights(s, step_of(s));
    wait_for_previous_grid();
#pragma unroll
    for (int s = 0; s < STAGES - 1; s++) {
        if (s < nsteps)
            load_activations(s, step_of(s));
        cp_async_commit();
    }
    allow_next_grid();

    const int r = lane >> 2, c = lane & 3;
    for (int it = 0; it < nsteps; it++) {
        cp_async_wait<STAGES - 2>();
        __syncthreads();
        {
            int nx = it + STAGES - 1;
            if (nx < nsteps)
                load_stage(nx % STAGES, step_of(nx));
            cp_async_commit();
        }
        if (!any_active)
            continue;
        const uint8_t *st = smem + (it % STAGES) * C::STAGE;
        const uint8_t *xs = st + C::W_STAGE + C::SC_STAGE;
        float tmp[WR][MT][4];
        float (*tgt)[MT][4] = BLOCK ? tmp : acc;
        if (BLOCK) {
#pragma unroll
            for (int w = 0; w < WR; w++)
#pragma unroll
                for (int t = 0; t < MT; t++)
#pragma unroll
                    for (int e = 0; e < 4; e++)
                        tmp[w][t][e] = 0.f;
        }
#pragma unroll
        for (int u = 0; u < units_per_step; u++) {
            if (!FP4) {
                uint32_t a[WR][8];
#pragma unroll
                for (int w = 0; w < WR; w++) {
                    const uint4 v = *(const uint4 *)(st + (warp * WR + w) * kWarpStageBytes + lane * 16 + u * kUnitBytes);
                    dequant_fp8(v.x, a[w][0], a[w][1]);
                    dequant_fp8(v.y, a[w][2], a[w][3]);
                    dequant_fp8(v.z, a[w][4], a[w][5]);
                    dequant_fp8(v.w, a[w][6], a[w][7]);
                }
#pragma unroll
                for (int t = 0; t < MT; t++) {
                    if (t * 8 >= xrows)
                        break;
                    // lane (r, c): token t*8 + r, the unit's k [8c, 8c+8) — both tiles' B registers
                    const int row = t * 8 + r, ch = u * 4 + c;
                    const uint4 b = *(const uint4 *)(xs + (row * C::XCH + x_swizzle<FP4>(ch, row)) * 16);
#pragma unroll
                    for (int w = 0; w < WR; w++) {
                        mma(tgt[w][t], a[w], b.x, b.y);
                        mma(tgt[w][t], a[w] + 4, b.z, b.w);
                    }
                }
            } else {
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    uint32_t a0[WR][4], a1[WR][4];
#pragma unroll
                    for (int w = 0; w < WR; w++) {
                        const uint4 v = *(const uint4 *)(st + (warp * WR + w) * kWarpStageBytes + lane * 16 + u * kUnitBytes);
                        const uint8_t *scs = st + C::W_STAGE + (warp * WR + w) * kFp4ScaleStepBytes;
                        const uint32_t codes = *(const uint16_t *)(scs + fp4_scale_byte(lane, u, 0));
                        const uint32_t s_r = scale_bf16x2(codes, 0), s_r8 = scale_bf16x2(codes, 1);
                        const uint32_t w0 = h ? v.z : v.x, w1 = h ? v.w : v.y;
                        dequant_fp4(w0, s_r, s_r8, a0[w]);
                        dequant_fp4(w1, s_r, s_r8, a1[w]);
                    }
#pragma unroll
                    for (int t = 0; t < MT; t++) {
                        if (t * 8 >= xrows)
                            break;
                        // lane (r, c): token t*8 + r, k [16c + 8h, 16c + 8h + 8): tiles 2h, 2h+1
                        const int row = t * 8 + r, ch = u * 8 + 2 * c + h;
                        const uint4 b = *(const uint4 *)(xs + (row * C::XCH + x_swizzle<FP4>(ch, row)) * 16);
#pragma unroll
                        for (int w = 0; w < WR; w++) {
                            mma(tgt[w][t], a0[w], b.x, b.y);
                            mma(tgt[w][t], a1[w], b.z, b.w);
                        }
                    }
                }
            }
        }
        if (BLOCK) {
            const int step = step_of(it);
#pragma unroll
            for (int w = 0; w < WR; w++) {
                const float bs = active[w] ? __ldg(p.blockscale + (size_t)((nb0 + w) >> 3) * p.kblocks + step) : 0.f;
#pragma unroll
                for (int t = 0; t < MT; t++)
#pragma unroll
                    for (int e = 0; e < 4; e++)
                        acc[w][t][e] = fmaf(tmp[w][t][e], bs, acc[w][t][e]);
            }
        }
    }
    cp_async_wait<0>();

    // Calls f(accumulator, m, n) for every accumulator of an active strip whose token row m < M.
    auto for_each_output = [&](auto &&f) {
#pragma unroll
        for (int w = 0; w < WR; w++) {
            if (!active[w])
                continue;
            const int n0 = (nb0 + w) * 16 + r;
#pragma unroll
            for (int t = 0; t < MT; t++)
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    const int m = m0 + t * 8 + 2 * c + (e & 1), n = n0 + (e >> 1) * 8;
                    if (m < p.M)
                        f(acc[w][t][e], m, n);
                }
        }
    };
    if (p.splits > 1) {
        for_each_output([&](float &a, int m, int n) { __stcg(partial_at(p, split, m, n), a); });
        if (!last_of_tile(p, mb * p.tiles_n + tile))
            return;
        for_each_output([&](float &a, int m, int n) { a = sum_partials(p, m, n); });
    }
    for_each_output([&](float &a, int m, int n) { store_output(p, a, m, n); });
}

// ---- host side ----

int g_sms = 0;
bool g_pdl = false;
bool g_sm90 = false;

__global__ void pad_rows_kernel(const __nv_bfloat16 *x, __nv_bfloat16 *out, int64_t m, int64_t k, int64_t k_pad)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < m * k_pad; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t r = i / k_pad, c = i % k_pad;
        out[i] = c < k ? x[r * k + c] : __float2bfloat16_rn(0.f);
    }
}

// Reads the SM count, and whether kernels are launched with programmatic dependent launch
// (sm_90 and later, unless QSERVE_MARLIN_PDL=0): then a marlin kernel requests its first weight
// stages while the kernel before it on the stream is still finishing.
int device_sms(qs_err *err)
{
    if (!g_sms) {
        int dev, major;
        QS_CUDA_TRY(cudaGetDevice(&dev), err);
        if ((g_sms = qs_cuda_sm_count()) <= 0)
            return qs_errf(err, "marlin: cannot read the device's SM count");
        QS_CUDA_TRY(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev), err);
        g_pdl = major >= 9 && knob("QSERVE_MARLIN_PDL", 1) != 0;
        int minor;
        QS_CUDA_TRY(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev), err);
        g_sm90 = false;
        if (major == 9 && minor == 0 && wgmma_built(&g_sm90, err))
            return -1;
    }
    return 0;
}

// The largest M that uses split-K, and the most k slices.
constexpr int kMaxSplitM = 64;
constexpr int kMaxSplits = 16;

struct Plan {
    int mt, wr, nw, mblocks, tiles_n, splits, ksteps;
};

// Measurement knobs (dev builds only: knob, marlin.h), read once: QSERVE_MARLIN_ROTATE=0 walks k in
// order in every CTA; QSERVE_MARLIN_WIDE=0 keeps one weight strip per warp at every M;
// QSERVE_MARLIN_WAVES=N aims the k split at N waves of resident CTAs; QSERVE_MARLIN_WARPS=8 runs up to 32 tokens with 8 warps (128 rows) per CTA, so each activation
// stage read from L2 feeds twice the weight rows.
struct Tuning {
    int rotate, wide, waves, warps8;
};
const Tuning &tuning()
{
    static Tuning t = {knob("QSERVE_MARLIN_ROTATE", 1), knob("QSERVE_MARLIN_WIDE", 1),
                       std::max(1, knob("QSERVE_MARLIN_WAVES", 1)), knob("QSERVE_MARLIN_WARPS", 4) == 8};
    return t;
}

template <bool FP4, int MT, int STAGES, bool BLOCK, int WR, int NW> int launch(const Params &p0, const Plan &pl, cudaStream_t s, qs_err *err)
{
    using C = Cfg<FP4, MT, STAGES, BLOCK, WR, NW>;
    static bool attr_set = false;
    if (!attr_set) {
        QS_CUDA_TRY(cudaFuncSetAttribute(marlin_kernel<FP4, MT, STAGES, BLOCK, WR, NW>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, C::SMEM),
                    err);
        attr_set = true;
    }
    Params p = p0;
    p.mblocks = pl.mblocks;
    p.tiles_n = pl.tiles_n;
    p.splits = pl.splits;
    p.ksteps = pl.ksteps;
    return launch_kernel(marlin_kernel<FP4, MT, STAGES, BLOCK, WR, NW>, (unsigned)pl.mblocks * pl.tiles_n * pl.splits,
                         C::THREADS, C::SMEM, g_pdl, s, p, err);
}

// Occupancy of an instantiation (CTAs per SM), cached.
template <bool FP4, int MT, int STAGES, bool BLOCK, int WR, int NW> int occupancy()
{
    static int occ = 0;
    if (!occ) {
        using C = Cfg<FP4, MT, STAGES, BLOCK, WR, NW>;
        cudaFuncSetAttribute(marlin_kernel<FP4, MT, STAGES, BLOCK, WR, NW>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             C::SMEM);
        if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, marlin_kernel<FP4, MT, STAGES, BLOCK, WR, NW>, C::THREADS,
                                                          C::SMEM) != cudaSuccess ||
            occ < 1)
            occ = 1;
    }
    return occ;
}

// The one table of instantiations: (mt, wr, warps) -> stages, and the call made
// with them. Variants other than the default (4 warps, 4 stages) exist for the tuning switches.
template <bool FP4, bool BLOCK, typename F> int with_config(const Plan &pl, F &&f)
{
    const int mt = pl.mt;
    if (pl.nw == 8 && mt <= 4) {
        switch (mt) {
        case 1: return f.template operator()<FP4, 1, 4, BLOCK, 1, 8>();
        case 2: return f.template operator()<FP4, 2, 4, BLOCK, 1, 8>();
        default: return f.template operator()<FP4, 4, 3, BLOCK, 1, 8>();
        }
    }
    if (pl.wr == 2) {
        if (mt == 4)
            return f.template operator()<FP4, 4, FP4 ? 3 : 4, BLOCK, 2, 4>();
        return f.template operator()<FP4, 8, 3, BLOCK, 2, 4>();
    }
    switch (mt) {
    case 1: return f.template operator()<FP4, 1, 4, BLOCK, 1, 4>();
    case 2: return f.template operator()<FP4, 2, 4, BLOCK, 1, 4>();
    case 4: return f.template operator()<FP4, 4, FP4 ? 3 : 4, BLOCK, 1, 4>();
    default: return f.template operator()<FP4, 8, 3, BLOCK, 1, 4>();
    }
}

struct OccupancyOf {
    template <bool FP4, int MT, int ST, bool BLOCK, int WR, int NW> int operator()()
    {
        return occupancy<FP4, MT, ST, BLOCK, WR, NW>();
    }
};

struct LaunchWith {
    const Params &p;
    const Plan &pl;
    cudaStream_t s;
    qs_err *err;
    template <bool FP4, int MT, int ST, bool BLOCK, int WR, int NW> int operator()()
    {
        return launch<FP4, MT, ST, BLOCK, WR, NW>(p, pl, s, err);
    }
};

template <typename F> int for_layer(const Layer &l, const Plan &pl, F &&f)
{
    if (l.fp4)
        return with_config<true, false>(pl, f);
    return l.block ? with_config<false, true>(pl, f) : with_config<false, false>(pl, f);
}

Plan make_plan(const Layer &l, int64_t m)
{
    Plan pl;
    // NVFP4 stops at 32 tokens per CTA: 64 rows of 256 k of activations per stage would leave
    // one CTA per SM; more token blocks of the same weight tile run side by side and share L2.
    pl.mt = m <= 8 ? 1 : m <= 16 ? 2 : (m <= 32 || l.fp4) ? 4 : 8;
    // Two strips per warp halve the activation reads per weight byte but also the CTA count:
    // measured (docs/marlin.md) a gain only where the wide tiles still outnumber the SMs.
    pl.nw = (tuning().warps8 && pl.mt <= 4) ? 8 : kWarps;
    pl.wr = (pl.nw == kWarps && pl.mt >= 4 && tuning().wide && l.n_pad / (16 * kWarps * 2) >= g_sms) ? 2 : 1;
    pl.mblocks = (int)((m + pl.mt * 8 - 1) / (pl.mt * 8));
    pl.tiles_n = (int)((l.n_pad / 16 + pl.nw * pl.wr - 1) / (pl.nw * pl.wr));
    pl.ksteps = (int)(l.k_pad / (l.fp4 ? kFp4StepK : kFp8StepK));
    pl.splits = 1;
    if (m <= kMaxSplitM) {
        long slots = (long)g_sms * for_layer(l, pl, OccupancyOf{});
        long ctas = (long)pl.mblocks * pl.tiles_n;
        if (ctas < slots * 3 / 4) {
            // As many k slices as fit in one wave of resident CTAs (a second, partial wave would
            // leave most SMs idle at the end).
            int s = (int)(tuning().waves * slots / ctas);
            s = std::min(s, kMaxSplits);
            s = std::min(s, std::max(1, pl.ksteps / 2));
            pl.splits = std::max(1, s);
        }
    }
    return pl;
}

} // namespace

int runtime(Runtime *rt, qs_err *err)
{
    if (device_sms(err))
        return -1;
    rt->sms = g_sms;
    rt->pdl = g_pdl;
    rt->sm90 = g_sm90;
    return 0;
}

const qs_marlin_knobs &path_knobs()
{
    static const qs_marlin_knobs k = {
        knob("QSERVE_MARLIN_STREAM", 1),
        knob("QSERVE_MARLIN_STREAM_MIN", 1),
        std::min(knob("QSERVE_MARLIN_STREAM_MAX", QS_MARLIN_STREAM_MAX_TOKENS), QS_MARLIN_STREAM_MAX_TOKENS),
        knob("QSERVE_MARLIN_WGMMA", 1),
        knob("QSERVE_MARLIN_WGMMA_MIN", 17),
        std::min(knob("QSERVE_MARLIN_WGMMA_MAX", QS_MARLIN_WGMMA_MAX_TOKENS), QS_MARLIN_PLAN_LAST_RULE_TOKENS),
        std::min(std::max(0, knob("QSERVE_MARLIN_GEMV", QS_MARLIN_SMALL_M_MAX_TOKENS)), QS_MARLIN_SMALL_M_MAX_TOKENS),
    };
    return k;
}

int plan_paths(Layer &l, qs_err *err)
{
    Runtime rt;
    if (runtime(&rt, err))
        return -1;
    const qs_marlin_shape shape = {l.fp4, l.block, l.n, l.k, l.n_pad, l.k_pad};
    const qs_marlin_device dev = {rt.sms, rt.sm90};
    qs_marlin_plan_make(&shape, &dev, &path_knobs(), &l.plan);
    return 0;
}

int reserve_workspace(const Layer &l, int64_t m_max, qs_err *err)
{
    Runtime rt;
    if (runtime(&rt, err))
        return -1;
    size_t floats = 0, counters = 0, permuted = 0;
    // Every step size: the workspace grows with m inside each kernel's range, so sampling every
    // 8th size missed the ends of the ranges (64 tokens needs more than the 57 sampled).
    for (int64_t mm = 1; mm <= m_max; mm++) {
        size_t f = 0, c = 0;
        const qs_marlin_plan_row &row = *qs_marlin_plan_row_for(&l.plan, mm);
        if (row.ordered == QS_MARLIN_STREAM) { // (ordered: the steps it takes either way, and more)
            // its workspace, and (below) that of the kernel a step falls back to when its
            // activations do not suit the stream kernel's tensor map
            size_t pa;
            stream_workspace(l, mm, rt.sms, &f, &c, &pa);
            floats = std::max(floats, f);
            counters = std::max(counters, c);
            permuted = std::max(permuted, pa);
            f = c = 0;
        }
        if (row.unaligned == QS_MARLIN_WGMMA) {
            size_t pa;
            if (wgmma_workspace(l, mm, rt.sms, &f, &c, &pa, err))
                return -1;
            permuted = std::max(permuted, pa);
        } else if (row.unaligned == QS_MARLIN_SMALL_M) {
            if (small_m_workspace(l, mm, rt.sms, &f, &c, err))
                return -1;
        } else if (mm <= kMaxSplitM) {
            Plan pl = make_plan(l, mm);
            f = pl.splits > 1 ? (size_t)pl.splits * mm * l.n_pad : 0;
            c = (size_t)pl.mblocks * pl.tiles_n;
        }
        floats = std::max(floats, f);
        counters = std::max(counters, c);
    }
    if (permuted && !permuted_activations(permuted, err))
        return -1;
    return grow_split_workspace(floats, counters, err);
}

qs_act_order input_order(const Layer &l, int64_t m)
{
    Runtime rt;
    qs_err ignored;
    // (the packed order needs whole 128-k stages: k_pad == k; a device whose facts cannot be read
    // gets natural order, and gemm reports the error)
    if (m <= 0 || l.k_pad != l.k || l.k % 128 != 0 || runtime(&rt, &ignored) ||
        qs_marlin_plan_row_for(&l.plan, m)->ordered != QS_MARLIN_STREAM || !stream_permutes(l, m, rt.sms, true))
        return QS_ACT_NATURAL;
    return l.fp4 ? QS_ACT_MARLIN_FP4 : QS_ACT_MARLIN_FP8;
}

int gemm(const Layer &l, const __nv_bfloat16 *x, __nv_bfloat16 *y, int64_t m, cudaStream_t s, qs_err *err, bool ordered)
{
    if (m <= 0)
        return 0;
    Runtime rt;
    if (runtime(&rt, err))
        return -1;
    Params p = {};
    p.w = l.w;
    p.sc = l.sc;
    p.colscale = l.colscale;
    p.colscale_stride = l.colscale_stride;
    p.blockscale = l.blockscale;
    p.kblocks = (int)(l.k_pad / 128);
    p.post1 = l.post1;
    p.post2 = l.post2;
    p.bias = l.bias;
    p.x = x;
    p.y = y;
    p.M = (int)m;
    p.N = (int)l.n;
    p.NP = (int)l.n_pad;
    p.K = (int)l.k_pad;
    p.XS = (int)l.k;
    p.strips = (int)(l.n_pad / 16);
    p.units_k = (int)(l.k_pad / (l.fp4 ? kFp4UnitK : kFp8UnitK));
    p.ksteps = (int)(l.k_pad / (l.fp4 ? kFp4StepK : kFp8StepK));
    if (ordered && (input_order(l, m) == QS_ACT_NATURAL || !stream_fits(x, y)))
        return qs_errf(err, "marlin: activations given in the packed order, which only the stream kernel reads "
                            "(and not at %lld tokens, or not from these addresses)", (long long)m);
    const qs_marlin_plan_row &row = *qs_marlin_plan_row_for(&l.plan, m);
    const qs_marlin_path path = !stream_fits(x, y) ? row.unaligned : ordered ? row.ordered : row.natural;
    if (path == QS_MARLIN_STREAM) // its tensor map reads x as it is
        return stream(l, p, x, l.k, rt, s, err, ordered);
    if (path == QS_MARLIN_WGMMA) // its activation copy pads k too
        return wgmma(l, p, x, l.k, rt, s, err);
    if (l.k_pad != l.k) {
        // The kernel reads whole 16-byte chunks of k steps: give it a zero-padded copy.
        __nv_bfloat16 *xpad = padded_activations((size_t)m * l.k_pad, err);
        if (!xpad)
            return -1;
        pad_rows_kernel<<<(unsigned)std::min<int64_t>(m * l.k_pad / 256 + 1, 65535), 256, 0, s>>>(x, xpad, m, l.k, l.k_pad);
        QS_LAUNCH_CHECK(err);
        p.x = xpad;
        p.XS = (int)l.k_pad;
    }
    if (path == QS_MARLIN_SMALL_M)
        return small_m(l, p, rt, s, err);
    Plan pl = make_plan(l, m);
    if (pl.splits > 1 && split_workspace((size_t)pl.splits * m * l.n_pad, (size_t)pl.mblocks * pl.tiles_n, p, err))
        return -1;
    p.rotate = tuning().rotate;
    return for_layer(l, pl, LaunchWith{p, pl, s, err});
}

} // namespace qs_marlin
