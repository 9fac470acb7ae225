// marlin_gemm.cu — the `marlin` GEMM kernel: y[m,n] = x[m,k] W^T for FP8 E4M3 or NVFP4 weights
// packed by marlin_pack.cu and BF16 activations, on BF16 tensor cores with FP32 accumulation.
//
// A CTA is 4 warps; warp w owns 16 weight rows, so a CTA covers 64 output columns for one block
// of MT*8 tokens and one slice of k (split-K). Each pipeline stage brings, with cp.async, the
// CTA's weights for one k step (2 KB per warp: each lane its own four 16-byte pieces) and the
// activation rows (XOR-swizzled 16-byte chunks, read back with ldmatrix), STAGES deep. A lane
// expands its own weight bytes to BF16 in registers and issues mma.m16n8k16 with W as the A
// operand and x^T as B. With several k slices, each CTA writes FP32 partials to a workspace and
// the last CTA of an output tile (an atomic ticket) sums them in split order — deterministic.
#include <algorithm>
#include <stdlib.h>

#include "cuda_check.h"
#include "marlin.h"

namespace qs_marlin {
namespace {

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kWarpStageBytes = 2048; // 16 rows x one k step of packed weights

__device__ __forceinline__ void cp_async16(void *smem, const void *gmem)
{
    unsigned s = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> __device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

__device__ __forceinline__ void ldmatrix_x4(uint32_t r[4], const void *smem)
{
    unsigned s = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(s));
}

__device__ __forceinline__ void mma(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1)
{
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// a * b - 0 on two BF16 lanes (exact when the product fits BF16; subnormal inputs supported).
__device__ __forceinline__ uint32_t bmul(uint32_t a, uint32_t b)
{
    uint32_t d;
    asm("fma.rn.bf16x2 %0, %1, %2, %3;\n" : "=r"(d) : "r"(a), "r"(b), "r"(0x80008000u));
    return d;
}

// Four E4M3 bytes -> two BF16x2 registers: the E4M3 exponent/mantissa go to the low 7 bits of
// the BF16 exponent/mantissa, the sign to bit 15; that BF16 is value * 2^-120, fixed by one
// multiply (exact, subnormals included).
__device__ __forceinline__ void dequant_fp8(uint32_t v, uint32_t &lo, uint32_t &hi)
{
    const uint32_t k2p120 = 0x7B807B80u; // BF16 2^120, twice
    uint32_t l = ((v << 8) & 0x80008000u) | ((v << 4) & 0x07F007F0u);
    uint32_t h = (v & 0x80008000u) | ((v >> 4) & 0x07F007F0u);
    lo = bmul(l, k2p120);
    hi = bmul(h, k2p120);
}

// One NVFP4 word (one k16 tile of a lane) -> its four A registers, times the row scales.
__device__ __forceinline__ void dequant_fp4(uint32_t v, uint32_t sc_r, uint32_t sc_r8, uint32_t a[4])
{
    const uint32_t M = 0x81C081C0u;
    uint32_t q3 = ((v >> 4) & 0x00C000C0u) | ((v >> 5) & 0x01000100u) | ((v << 1) & 0x80008000u);
    a[0] = bmul(v & M, sc_r);
    a[1] = bmul((v << 3) & M, sc_r8);
    a[2] = bmul((v << 6) & M, sc_r);
    a[3] = bmul(q3, sc_r8);
}

// Byte j of a word of E5M3 codes -> BF16x2 (scale * 2^42 in both halves).
__device__ __forceinline__ uint32_t scale_bf16x2(uint32_t codes, int j)
{
    uint32_t t = __byte_perm(codes, 0u, 0x4040u | (uint32_t)j | ((uint32_t)j << 8));
    return t * 16u + 0x50005000u;
}

struct Params {
    const uint8_t *w, *sc;
    const float *colscale;
    int colscale_stride;
    const float *blockscale;
    int kblocks;
    float post1, post2;
    const __nv_bfloat16 *bias;
    const __nv_bfloat16 *x;
    __nv_bfloat16 *y;
    float *ws;
    int *cnt;
    int M, N, K;
    int tiles_n, mblocks, splits, ksteps;
};

template <bool FP4, int MT, int STAGES, bool BLOCK> struct Cfg {
    static constexpr int BK = FP4 ? kFp4StepK : kFp8StepK;
    static constexpr int W_STAGE = kWarps * kWarpStageBytes;
    static constexpr int SC_STAGE = FP4 ? kWarps * kFp4ScaleStepBytes : 0;
    static constexpr int XROWS = MT * 8;
    static constexpr int XCH = BK / 8; // 16-byte chunks per activation row per stage
    static constexpr int X_STAGE = XROWS * BK * 2;
    static constexpr int STAGE = W_STAGE + SC_STAGE + X_STAGE;
    static constexpr int SMEM = STAGE * STAGES;
};

template <bool FP4, int MT, int STAGES, bool BLOCK>
__global__ void __launch_bounds__(kThreads) marlin_kernel(const Params p)
{
    using C = Cfg<FP4, MT, STAGES, BLOCK>;
    extern __shared__ __align__(16) uint8_t smem[];
    __shared__ int s_last;

    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    int bid = blockIdx.x;
    const int mb = bid % p.mblocks;
    bid /= p.mblocks;
    const int tile = bid % p.tiles_n;
    const int split = bid / p.tiles_n;
    const int s_begin = (int)((long long)split * p.ksteps / p.splits);
    const int s_end = (int)((long long)(split + 1) * p.ksteps / p.splits);
    const int nsteps = s_end - s_begin;
    const int nb16 = tile * kWarps + warp;
    const bool active = nb16 < (p.N >> 4);
    const int m0 = mb * C::XROWS;

    const int units_per_step = 4;
    const int units_k = p.K / (FP4 ? kFp4UnitK : kFp8UnitK);
    const uint8_t *wg = p.w + (size_t)nb16 * units_k * kUnitBytes + lane * 16;
    const uint8_t *scg = FP4 ? p.sc + (size_t)nb16 * p.ksteps * kFp4ScaleStepBytes + lane * 16 : nullptr;

    auto load_stage = [&](int buf, int step) {
        uint8_t *st = smem + buf * C::STAGE;
        if (active) {
            const uint8_t *src = wg + (size_t)step * units_per_step * kUnitBytes;
            uint8_t *dst = st + warp * kWarpStageBytes + lane * 16;
#pragma unroll
            for (int u = 0; u < units_per_step; u++)
                cp_async16(dst + u * kUnitBytes, src + u * kUnitBytes);
            if (FP4 && lane < 16)
                cp_async16(st + C::W_STAGE + warp * kFp4ScaleStepBytes + lane * 16,
                           scg + (size_t)step * kFp4ScaleStepBytes);
        }
        uint8_t *xs = st + C::W_STAGE + C::SC_STAGE;
        const __nv_bfloat16 *xg = p.x + (size_t)step * C::BK;
#pragma unroll
        for (int j = 0; j < C::XROWS * C::XCH / kThreads; j++) {
            int i = tid + j * kThreads;
            int row = i / C::XCH, ch = i % C::XCH;
            int gm = min(m0 + row, p.M - 1);
            cp_async16(xs + (row * C::XCH + (ch ^ (row & 7))) * 16, xg + (size_t)gm * p.K + ch * 8);
        }
    };

    float acc[MT][4];
#pragma unroll
    for (int t = 0; t < MT; t++)
#pragma unroll
        for (int e = 0; e < 4; e++)
            acc[t][e] = 0.f;

#pragma unroll
    for (int s = 0; s < STAGES - 1; s++) {
        if (s < nsteps)
            load_stage(s, s_begin + s);
        cp_async_commit();
    }

    const int r = lane >> 2;
    for (int it = 0; it < nsteps; it++) {
        cp_async_wait<STAGES - 2>();
        __syncthreads();
        {
            int nx = it + STAGES - 1;
            if (nx < nsteps)
                load_stage(nx % STAGES, s_begin + nx);
            cp_async_commit();
        }
        if (!active)
            continue;
        const uint8_t *st = smem + (it % STAGES) * C::STAGE;
        const uint8_t *wsm = st + warp * kWarpStageBytes + lane * 16;
        const uint8_t *xs = st + C::W_STAGE + C::SC_STAGE;
        float tmp[MT][4];
        float (*tgt)[4] = BLOCK ? tmp : acc;
        if (BLOCK) {
#pragma unroll
            for (int t = 0; t < MT; t++)
#pragma unroll
                for (int e = 0; e < 4; e++)
                    tmp[t][e] = 0.f;
        }
#pragma unroll
        for (int u = 0; u < units_per_step; u++) {
            const uint4 v = *(const uint4 *)(wsm + u * kUnitBytes);
            if (!FP4) {
                uint32_t a[8];
                dequant_fp8(v.x, a[0], a[1]);
                dequant_fp8(v.y, a[2], a[3]);
                dequant_fp8(v.z, a[4], a[5]);
                dequant_fp8(v.w, a[6], a[7]);
#pragma unroll
                for (int t = 0; t < MT; t++) {
                    uint32_t b[4];
                    int row = t * 8 + (lane & 7), ch = u * 4 + (lane >> 3);
                    ldmatrix_x4(b, xs + (row * C::XCH + (ch ^ (lane & 7))) * 16);
                    mma(tgt[t], a, b[0], b[1]);
                    mma(tgt[t], a + 4, b[2], b[3]);
                }
            } else {
                const uint8_t *scs = st + C::W_STAGE + warp * kFp4ScaleStepBytes;
                const uint32_t s_r = *(const uint32_t *)(scs + r * 16 + u * 4);
                const uint32_t s_r8 = *(const uint32_t *)(scs + (r + 8) * 16 + u * 4);
                const uint32_t words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    uint32_t a0[4], a1[4];
                    dequant_fp4(words[2 * h], scale_bf16x2(s_r, 2 * h), scale_bf16x2(s_r8, 2 * h), a0);
                    dequant_fp4(words[2 * h + 1], scale_bf16x2(s_r, 2 * h + 1), scale_bf16x2(s_r8, 2 * h + 1), a1);
#pragma unroll
                    for (int t = 0; t < MT; t++) {
                        uint32_t b[4];
                        int row = t * 8 + (lane & 7), ch = u * 8 + h * 4 + (lane >> 3);
                        ldmatrix_x4(b, xs + (row * C::XCH + (ch ^ (lane & 7))) * 16);
                        mma(tgt[t], a0, b[0], b[1]);
                        mma(tgt[t], a1, b[2], b[3]);
                    }
                }
            }
        }
        if (BLOCK) {
            const float bs = __ldg(p.blockscale + (size_t)(nb16 >> 3) * p.kblocks + (s_begin + it));
#pragma unroll
            for (int t = 0; t < MT; t++)
#pragma unroll
                for (int e = 0; e < 4; e++)
                    acc[t][e] = fmaf(tmp[t][e], bs, acc[t][e]);
        }
    }
    cp_async_wait<0>();

    const int c = lane & 3;
    const int n0 = nb16 * 16 + r;
    if (p.splits > 1) {
        if (active) {
#pragma unroll
            for (int t = 0; t < MT; t++)
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    int m = m0 + t * 8 + 2 * c + (e & 1), n = n0 + (e >> 1) * 8;
                    if (m < p.M)
                        __stcg(p.ws + ((size_t)split * p.M + m) * p.N + n, acc[t][e]);
                }
        }
        __threadfence();
        __syncthreads();
        const int cidx = mb * p.tiles_n + tile;
        if (tid == 0)
            s_last = atomicAdd(p.cnt + cidx, 1) == p.splits - 1;
        __syncthreads();
        if (!s_last)
            return;
        __threadfence();
        if (active) {
#pragma unroll
            for (int t = 0; t < MT; t++)
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    int m = m0 + t * 8 + 2 * c + (e & 1), n = n0 + (e >> 1) * 8;
                    float sum = 0.f;
                    if (m < p.M)
                        for (int s = 0; s < p.splits; s++)
                            sum += __ldcg(p.ws + ((size_t)s * p.M + m) * p.N + n);
                    acc[t][e] = sum;
                }
        }
        if (tid == 0)
            p.cnt[cidx] = 0;
    }
    if (!active)
        return;
#pragma unroll
    for (int t = 0; t < MT; t++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            int m = m0 + t * 8 + 2 * c + (e & 1), n = n0 + (e >> 1) * 8;
            if (m >= p.M)
                continue;
            float v = acc[t][e];
            if (p.colscale)
                v *= __ldg(p.colscale + (size_t)n * p.colscale_stride);
            v = v * p.post1 * p.post2;
            if (p.bias)
                v += __bfloat162float(p.bias[n]);
            p.y[(size_t)m * p.N + n] = __float2bfloat16_rn(v);
        }
}

// ---- host side ----

int g_sms = 0;
float *g_ws = nullptr;
size_t g_ws_floats = 0;
int *g_cnt = nullptr;
size_t g_cnt_n = 0;

int device_sms(qs_err *err)
{
    if (!g_sms) {
        int dev;
        QS_CUDA_TRY(cudaGetDevice(&dev), err);
        QS_CUDA_TRY(cudaDeviceGetAttribute(&g_sms, cudaDevAttrMultiProcessorCount, dev), err);
    }
    return 0;
}

int ensure_workspace(size_t floats, size_t counters, qs_err *err)
{
    if (floats > g_ws_floats) {
        QS_CUDA_TRY(cudaDeviceSynchronize(), err);
        cudaFree(g_ws);
        g_ws = nullptr;
        g_ws_floats = 0;
        QS_CUDA_TRY(cudaMalloc(&g_ws, floats * sizeof(float)), err);
        g_ws_floats = floats;
    }
    if (counters > g_cnt_n) {
        QS_CUDA_TRY(cudaDeviceSynchronize(), err);
        cudaFree(g_cnt);
        g_cnt = nullptr;
        g_cnt_n = 0;
        QS_CUDA_TRY(cudaMalloc(&g_cnt, counters * sizeof(int)), err);
        QS_CUDA_TRY(cudaMemset(g_cnt, 0, counters * sizeof(int)), err);
        g_cnt_n = counters;
    }
    return 0;
}

// The most tokens one CTA covers, and the largest M that uses split-K.
constexpr int kMaxSplitM = 64;
constexpr int kMaxSplits = 16;

struct Plan {
    int mt, mblocks, tiles_n, splits, ksteps;
};

template <bool FP4, int MT, int STAGES, bool BLOCK> int launch(const Params &p0, const Plan &pl, cudaStream_t s, qs_err *err)
{
    using C = Cfg<FP4, MT, STAGES, BLOCK>;
    static bool attr_set = false;
    if (!attr_set) {
        QS_CUDA_TRY(cudaFuncSetAttribute(marlin_kernel<FP4, MT, STAGES, BLOCK>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, C::SMEM),
                    err);
        attr_set = true;
    }
    Params p = p0;
    p.mblocks = pl.mblocks;
    p.tiles_n = pl.tiles_n;
    p.splits = pl.splits;
    p.ksteps = pl.ksteps;
    unsigned grid = (unsigned)pl.mblocks * pl.tiles_n * pl.splits;
    marlin_kernel<FP4, MT, STAGES, BLOCK><<<grid, kThreads, C::SMEM, s>>>(p);
    QS_LAUNCH_CHECK(err);
    return 0;
}

// Occupancy of an instantiation (CTAs per SM), cached.
template <bool FP4, int MT, int STAGES, bool BLOCK> int occupancy()
{
    static int occ = 0;
    if (!occ) {
        using C = Cfg<FP4, MT, STAGES, BLOCK>;
        cudaFuncSetAttribute(marlin_kernel<FP4, MT, STAGES, BLOCK>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             C::SMEM);
        if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, marlin_kernel<FP4, MT, STAGES, BLOCK>, kThreads,
                                                          C::SMEM) != cudaSuccess ||
            occ < 1)
            occ = 1;
    }
    return occ;
}

template <bool FP4, bool BLOCK> int occupancy_for(int mt)
{
    constexpr int S4 = 4;
    switch (mt) {
    case 1: return occupancy<FP4, 1, S4, BLOCK>();
    case 2: return occupancy<FP4, 2, S4, BLOCK>();
    case 4: return occupancy<FP4, 4, S4, BLOCK>();
    default: return occupancy<FP4, 8, FP4 ? 3 : 4, BLOCK>();
    }
}

// Waves of resident CTAs the k split aims at (QSERVE_MARLIN_WAVES, for tuning; default 1).
int split_waves()
{
    static int w = 0;
    if (!w) {
        const char *e = getenv("QSERVE_MARLIN_WAVES");
        w = e && atoi(e) > 0 ? atoi(e) : 1;
    }
    return w;
}

Plan make_plan(const Layer &l, int64_t m)
{
    Plan pl;
    // NVFP4 stops at 32 tokens per CTA: 64 rows of 256 k of activations per stage would leave
    // one CTA per SM; more token blocks of the same weight tile run side by side and share L2.
    pl.mt = m <= 8 ? 1 : m <= 16 ? 2 : (m <= 32 || l.fp4) ? 4 : 8;
    pl.mblocks = (int)((m + pl.mt * 8 - 1) / (pl.mt * 8));
    pl.tiles_n = (int)((l.n / 16 + kWarps - 1) / kWarps);
    pl.ksteps = (int)(l.k / (l.fp4 ? kFp4StepK : kFp8StepK));
    pl.splits = 1;
    if (m <= kMaxSplitM) {
        int occ = l.fp4 ? (l.block ? 1 : occupancy_for<true, false>(pl.mt))
                        : (l.block ? occupancy_for<false, true>(pl.mt) : occupancy_for<false, false>(pl.mt));
        long slots = (long)g_sms * occ;
        long ctas = (long)pl.mblocks * pl.tiles_n;
        if (ctas < slots * 3 / 4) {
            // As many k slices as fit in one wave of resident CTAs (a second, partial wave would
            // leave most SMs idle at the end).
            int s = (int)(split_waves() * slots / ctas);
            s = std::min(s, kMaxSplits);
            s = std::min(s, std::max(1, pl.ksteps / 2));
            pl.splits = std::max(1, s);
        }
    }
    return pl;
}

template <bool FP4, bool BLOCK> int dispatch(const Params &p, const Plan &pl, cudaStream_t s, qs_err *err)
{
    switch (pl.mt) {
    case 1: return launch<FP4, 1, 4, BLOCK>(p, pl, s, err);
    case 2: return launch<FP4, 2, 4, BLOCK>(p, pl, s, err);
    case 4: return launch<FP4, 4, 4, BLOCK>(p, pl, s, err);
    default: return launch<FP4, 8, FP4 ? 3 : 4, BLOCK>(p, pl, s, err);
    }
}

} // namespace

int reserve_workspace(const Layer &l, int64_t m_max, qs_err *err)
{
    if (device_sms(err))
        return -1;
    int64_t m = std::min<int64_t>(m_max, kMaxSplitM);
    Plan worst = make_plan(l, 1);
    size_t floats = 0, counters = 0;
    for (int64_t mm = 1; mm <= m; mm = mm < 8 ? mm + 1 : mm + 8) {
        Plan pl = make_plan(l, mm);
        if (pl.splits > 1)
            floats = std::max(floats, (size_t)pl.splits * mm * l.n);
        counters = std::max(counters, (size_t)pl.mblocks * pl.tiles_n);
    }
    (void)worst;
    return ensure_workspace(floats, counters, err);
}

int gemm(const Layer &l, const __nv_bfloat16 *x, __nv_bfloat16 *y, int64_t m, cudaStream_t s, qs_err *err)
{
    if (m <= 0)
        return 0;
    if (device_sms(err))
        return -1;
    Plan pl = make_plan(l, m);
    if (pl.splits > 1 && ensure_workspace((size_t)pl.splits * m * l.n, (size_t)pl.mblocks * pl.tiles_n, err))
        return -1;
    Params p;
    p.w = l.w;
    p.sc = l.sc;
    p.colscale = l.colscale;
    p.colscale_stride = l.colscale_stride;
    p.blockscale = l.blockscale;
    p.kblocks = (int)(l.k / 128);
    p.post1 = l.post1;
    p.post2 = l.post2;
    p.bias = l.bias;
    p.x = x;
    p.y = y;
    p.ws = g_ws;
    p.cnt = g_cnt;
    p.M = (int)m;
    p.N = (int)l.n;
    p.K = (int)l.k;
    if (l.fp4)
        return dispatch<true, false>(p, pl, s, err);
    return l.block ? dispatch<false, true>(p, pl, s, err) : dispatch<false, false>(p, pl, s, err);
}

} // namespace qs_marlin
