// marlin_wgmma.cu — the `marlin` kernel on Hopper (sm_90a) for steps of a few dozen tokens, where
// the small-M kernel's per-token-tile work (an activation load and two mma.sync per 8 tokens and
// unit) stops scaling: warpgroup MMA (wgmma.mma_async) with the weights as the register A operand
// and the activations as the shared-memory B operand.
//
// A CTA is two warpgroups (8 warps) on 8 strips (128 output rows) and one block of up to 64
// tokens. Each warp loads its strip's packed units straight into registers and expands them with
// the small-M kernel's functions: a warp's expanded unit is exactly its 16 rows of the wgmma A
// fragment (the same per-warp layout as mma.m16n8k16). The activations are staged by all 256
// threads with cp.async into a 4-deep ring of 128-k stages laid out as wgmma's K-major core
// matrices (8 tokens x 16 bytes, no swizzle), shared by all 8 warps. The packed layout permutes k
// inside a unit (marlin_layout.h); wgmma reads B in its own k order, so the activations are first
// copied once per call into that permuted order (permute_activations, marlin_permute.cu: tokens x k,
// a few hundred KB).
// Partial k slices meet as in the other kernels (marlin_device.cuh), deterministically.
//
// When it runs: the rows of marlin_plan.h's table (kMarlinRules) that name it (measured:
// docs/decisions.md).
#include <algorithm>
#include <stdlib.h>

#include "marlin.h"
#include "marlin_device.cuh"
#include "marlin_hopper.cuh"

namespace qs_marlin {
namespace {

// Two warpgroups per CTA share each activation stage (one warpgroup, twice the CTAs per SM and
// twice the activation copies, measured slower at every shape: docs/marlin.md).
constexpr int kWarps = 8;
constexpr int kStageK = 128;  // k per shared-memory stage (4 FP8 units, 2 NVFP4 units)
constexpr int kStages = 4;    // ring depth
constexpr int kAhead = 2;     // stages requested ahead: one spare buffer, because the wgmma
                              // reading a stage may still run while the next stage starts

// A warp's packed weights of one stage (and, NVFP4, the scale codes of each unit).
template <bool FP4> struct StageWeights {
    static constexpr int UNITS = kStageK / (FP4 ? kFp4UnitK : kFp8UnitK);
    uint4 w[UNITS];
    uint32_t sc[FP4 ? UNITS : 1];
};

// NT: tokens per CTA (the wgmma N, 32 or 64).
template <bool FP4, int NT>
__global__ void __launch_bounds__(kWarps * 32, 2) marlin_wgmma_kernel(const Params p)
{
    constexpr int UNIT_K = FP4 ? kFp4UnitK : kFp8UnitK;
    constexpr int UNITS = StageWeights<FP4>::UNITS;
    constexpr int SLICES_PER_UNIT = UNIT_K / 16;
    constexpr int STAGE_BYTES = NT * kStageK * 2;
    constexpr int SLICE_BYTES = NT * 32;
#ifndef QS_WGMMA
    __trap(); // built for sm_90a only: the host launches it on compute capability 9.0 alone
#endif
    extern __shared__ __align__(128) uint8_t ring[];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, r = lane >> 2, c = lane & 3;
    const int mb = blockIdx.x, group = blockIdx.y, split = blockIdx.z, m0 = mb * NT;
    const int nstages = p.K / kStageK;
    const int s0 = split * nstages / p.splits, s1 = (split + 1) * nstages / p.splits;
    // A group past the last strip reads the last one again; its outputs are never stored.
    const int strip = min(group * kWarps + warp, p.strips - 1);
    const uint8_t *wp = p.w + (size_t)strip * p.units_k * kUnitBytes + lane * 16;
    const uint8_t *scp = FP4 ? p.sc + (size_t)strip * p.ksteps * kFp4ScaleStepBytes + fp4_scale_byte(lane, 0, 0) : nullptr;

    auto load_weights = [&](StageWeights<FP4> &sw, int stage) {
#pragma unroll
        for (int i = 0; i < UNITS; i++) {
            const unsigned u = (unsigned)(stage * UNITS + i);
            asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];\n"
                         : "=r"(sw.w[i].x), "=r"(sw.w[i].y), "=r"(sw.w[i].z), "=r"(sw.w[i].w)
                         : "l"(wp + (size_t)u * kUnitBytes));
            if (FP4)
                sw.sc[i] = __ldg((const unsigned short *)(scp + (u / 4) * kFp4ScaleStepBytes + fp4_scale_byte(0, u % 4, 0)));
        }
    };
    // Stage `stage` of the CTA's tokens into ring buffer b: 16-byte chunk (token n, k chunk kc)
    // goes to slice kc/2, token group n/8, core matrix kc%2, row n%8. Thread t copies chunks
    // q = t + 256 j: token n0 + 16 j, k chunk kc, the same kc for every j and stage, so a chunk's
    // addresses are fixed offsets from two per-thread bases (computing them per chunk and stage
    // was two thirds of the kernel's instructions: docs/marlin.md). Consecutive threads take
    // consecutive rows of a core matrix, so a warp writes four whole 128-byte rows (no bank
    // conflicts) and reads 64 contiguous bytes of each of 8 tokens. Tokens past M are not
    // copied: a column of the product depends on its own column of B alone, and those outputs
    // are dropped. (Copying row M-1 there instead made every CTA read the same few L2 lines:
    // M = 1 ran 4x slower than M = 32.)
    static_assert(NT * 16 % (kWarps * 32) == 0, "every thread copies whole chunks");
    constexpr int CHUNKS = NT * 16 / (kWarps * 32);
    const int real_tokens = min(NT, p.M - m0);
    const int fill_n0 = (threadIdx.x / 128) * 8 + threadIdx.x % 8, fill_kc = (threadIdx.x / 8) % 16;
    const uint32_t fill_dst = (uint32_t)__cvta_generic_to_shared(ring) + (fill_kc / 2) * SLICE_BYTES +
                              (fill_n0 / 8) * 256 + (fill_kc % 2) * 128 + (fill_n0 % 8) * 16;
    const __nv_bfloat16 *fill_src = p.x + (size_t)(m0 + fill_n0) * p.XS + fill_kc * 8;
    const size_t fill_token_step = (size_t)16 * p.XS;
    auto fill = [&](int stage, int b) {
        const uint32_t dst = fill_dst + b * STAGE_BYTES;
        const __nv_bfloat16 *src = fill_src + stage * kStageK;
        // predicated copies rather than branches: the addresses stay two adds per chunk
#pragma unroll
        for (int j = 0; j < CHUNKS; j++)
            asm volatile("{\n.reg .pred p;\nsetp.lt.s32 p, %2, %3;\n"
                         "@p cp.async.cg.shared.global [%0], [%1], 16;\n}\n" ::"r"(dst + j * 512),
                         "l"(src + j * fill_token_step), "r"(fill_n0 + 16 * j), "r"(real_tokens));
    };

    float acc[NT / 2];
#pragma unroll
    for (int i = 0; i < NT / 2; i++)
        acc[i] = 0.f;

    // The CTAs of a slice walk its stages from different starts (group mod stages), so that CTAs
    // running together read different activations rather than all the same L2 lines.
    const int n_st = s1 - s0, rot = n_st > 0 ? group % n_st : 0;
    // i + rot + 2 < 2 n_st + 2 for the look-ahead of at most two: two conditional subtractions
    // (a runtime division here was a noticeable share of the loop's instructions).
    auto stage_at = [&](int i) {
        int v = i + rot;
        v -= v >= n_st ? n_st : 0;
        v -= v >= n_st ? n_st : 0;
        return s0 + v;
    };
    // Weights: three stage buffers in registers, used in rotation with static names (a copy
    // from one to another would wait for its loads to land), requested two stages ahead.
    StageWeights<FP4> w0, w1, w2;
    if (n_st > 0)
        load_weights(w0, stage_at(0));
    if (n_st > 1)
        load_weights(w1, stage_at(1));
    wait_for_previous_grid();
    allow_next_grid();
#pragma unroll
    for (int i = 0; i < kAhead; i++) {
        if (i < n_st)
            fill(stage_at(i), i);
        cp_async_commit();
    }
    // Two A buffers: unit i's wgmma may still read its registers while unit i+1 is expanded.
    uint32_t a[2][SLICES_PER_UNIT][4];
    const uint64_t ring_desc = slice_descriptor(ring);
    auto run_stage = [&](int i, const StageWeights<FP4> &cur, StageWeights<FP4> &later) {
        if (i + 2 < n_st)
            load_weights(later, stage_at(i + 2));
        cp_async_wait<kAhead - 1>();
        fence_async_shared();
        __syncthreads();
        if (i + kAhead < n_st)
            fill(stage_at(i + kAhead), (i + kAhead) % kStages);
        cp_async_commit();
        const uint64_t stage_desc = ring_desc + (uint64_t)((i % kStages) * STAGE_BYTES >> 4);
#pragma unroll
        for (int u = 0; u < UNITS; u++) {
            uint32_t(&au)[SLICES_PER_UNIT][4] = a[u & 1];
            const uint4 v = cur.w[u];
            if constexpr (!FP4) {
                expand_fp8_unit(v, &au[0][0]);
            } else {
                const uint32_t s_r = scale_bf16x2(cur.sc[u], 0), s_r8 = scale_bf16x2(cur.sc[u], 1);
                dequant_fp4(v.x, s_r, s_r8, au[0]);
                dequant_fp4(v.y, s_r, s_r8, au[1]);
                dequant_fp4(v.z, s_r, s_r8, au[2]);
                dequant_fp4(v.w, s_r, s_r8, au[3]);
            }
            wgmma_fence();
#pragma unroll
            for (int t = 0; t < SLICES_PER_UNIT; t++)
                wgmma_acc<NT>(acc, au[t], stage_desc + (uint64_t)((u * SLICES_PER_UNIT + t) * SLICE_BYTES >> 4));
            wgmma_commit();
            wgmma_wait<1>();
        }
    };
    for (int i = 0; i < n_st; i += 3) {
        run_stage(i, w0, w2);
        if (i + 1 < n_st)
            run_stage(i + 1, w1, w0);
        if (i + 2 < n_st)
            run_stage(i + 2, w2, w1);
    }
    wgmma_wait<0>();
    cp_async_wait<0>();

    // Accumulator 4i+e of lane (r, c): row r + 8 (e / 2) of the warp's strip, token 8i + 2c + e % 2.
    const bool real_strip = group * kWarps + warp < p.strips;
    auto token_of = [&](int idx) { return m0 + 8 * (idx / 4) + 2 * c + (idx & 1); };
    auto row_of = [&](int idx) { return strip * 16 + r + 8 * ((idx & 3) >> 1); };
    if (p.splits > 1) {
#pragma unroll
        for (int idx = 0; idx < NT / 2; idx++)
            if (real_strip && token_of(idx) < p.M)
                __stcg(partial_at(p, split, token_of(idx), row_of(idx)), acc[idx]);
        if (!last_of_tile(p, group * p.mblocks + mb))
            return;
        // The slices' partials in slice order (as sum_partials), all of a thread's outputs per
        // slice at once: one output at a time left the last CTA waiting on L2 latency per output.
#pragma unroll
        for (int idx = 0; idx < NT / 2; idx++)
            acc[idx] = 0.f;
        for (int sp = 0; sp < p.splits; sp++)
#pragma unroll
            for (int idx = 0; idx < NT / 2; idx++)
                if (real_strip && token_of(idx) < p.M)
                    acc[idx] += __ldcg(partial_at(p, sp, token_of(idx), row_of(idx)));
    }
#pragma unroll
    for (int idx = 0; idx < NT / 2; idx++)
        if (real_strip && token_of(idx) < p.M)
            store_output(p, acc[idx], token_of(idx), row_of(idx));
}

// Writes whether this device's build of the kernels has the wgmma code (an sm_90a build; a build
// for plain sm_90 would run the trap above instead).
__global__ void wgmma_built_kernel(int *out)
{
#ifdef QS_WGMMA
    *out = 1;
#else
    *out = 0;
#endif
}

template <int NT> constexpr size_t kRingBytes = (size_t)kStages * NT * kStageK * 2;

// CTAs of the kernel resident per SM (registers and shared memory); also raises its shared-memory
// limit to the ring's size, which the launch needs.
template <bool FP4, int NT> int resident_ctas(qs_err *err)
{
    return ctas_per_sm((const void *)marlin_wgmma_kernel<FP4, NT>, kWarps * 32, kRingBytes<NT>, err);
}

// Calls f.template operator()<FP4, NT>() for the layer's format and the step's token tile.
template <typename F> int with_config(bool fp4, int nt, F &&f)
{
    if (fp4)
        return nt == 32 ? f.template operator()<true, 32>() : f.template operator()<true, 64>();
    return nt == 32 ? f.template operator()<false, 32>() : f.template operator()<false, 64>();
}

struct ResidentCtas {
    qs_err *err;
    template <bool FP4, int NT> int operator()() { return resident_ctas<FP4, NT>(err); }
};

struct Launch {
    const Params &p;
    dim3 grid;
    bool pdl;
    cudaStream_t s;
    qs_err *err;
    template <bool FP4, int NT> int operator()()
    {
        if (resident_ctas<FP4, NT>(err) < 0)
            return -1;
        return launch_kernel(marlin_wgmma_kernel<FP4, NT>, grid, kWarps * 32, kRingBytes<NT>, pdl, s, p, err);
    }
};

struct WgmmaPlan {
    int nt, mblocks, groups, splits;
};

int plan_wgmma(const Layer &l, int64_t m, int sms, WgmmaPlan *g, qs_err *err)
{
    g->nt = m <= 32 ? 32 : 64;
    g->mblocks = (int)((m + g->nt - 1) / g->nt);
    g->groups = (int)((l.n_pad / 16 + kWarps - 1) / kWarps);
    const int per_sm = with_config(l.fp4, g->nt, ResidentCtas{err});
    if (per_sm < 0)
        return -1;
    // k slices only to fill one wave of resident CTAs, at least 4 stages (512 k) each: more
    // slices of short CTAs measured slower (28672 rows at 32 tokens: 7 slices, each CTA paying
    // its pipeline start, and 7 x 32 x 28672 FP32 partials).
    const int64_t ctas = (int64_t)g->groups * g->mblocks, wave = (int64_t)sms * per_sm;
    const int64_t most = std::max<int64_t>(1, std::min<int64_t>(16, l.k_pad / kStageK / 4));
    g->splits = (int)std::max<int64_t>(1, std::min<int64_t>(most, wave / ctas));
    return 0;
}


} // namespace

int wgmma_built(bool *built, qs_err *err)
{
    int *d = nullptr, h = 0;
    QS_CUDA_TRY(cudaMalloc(&d, sizeof(int)), err);
    wgmma_built_kernel<<<1, 1>>>(d);
    const cudaError_t e = cudaMemcpy(&h, d, sizeof(int), cudaMemcpyDeviceToHost);
    cudaFree(d);
    QS_CUDA_TRY(e, err);
    *built = h == 1;
    return 0;
}

namespace {
void workspace_of(const WgmmaPlan &g, const Layer &l, int64_t m, size_t *floats, size_t *counters, size_t *permuted)
{
    *floats = g.splits > 1 ? (size_t)g.splits * m * l.n_pad : 0;
    *counters = g.splits > 1 ? (size_t)g.groups * g.mblocks : 0;
    *permuted = (size_t)m * l.k_pad;
}
} // namespace

int wgmma_workspace(const Layer &l, int64_t m, int sms, size_t *floats, size_t *counters, size_t *permuted,
                    qs_err *err)
{
    WgmmaPlan g;
    if (plan_wgmma(l, m, sms, &g, err))
        return -1;
    workspace_of(g, l, m, floats, counters, permuted);
    return 0;
}

int wgmma(const Layer &l, Params &p, const __nv_bfloat16 *x, int64_t xs, const Runtime &rt, cudaStream_t s,
          qs_err *err)
{
    WgmmaPlan g;
    if (plan_wgmma(l, p.M, rt.sms, &g, err))
        return -1;
    size_t floats, counters, permuted;
    workspace_of(g, l, p.M, &floats, &counters, &permuted);
    __nv_bfloat16 *xp = permuted_activations(permuted, err);
    if (!xp || permute_activations(l, x, xs, p.M, xp, s, err))
        return -1;
    p.x = xp;
    p.XS = (int)l.k_pad;
    p.mblocks = g.mblocks;
    p.splits = g.splits;
    if (p.splits > 1 && split_workspace(floats, counters, p, err))
        return -1;
    if (g.groups > 65535 || g.mblocks > 65535)
        return qs_errf(err, "marlin: a %lld x %lld step is more than the wgmma kernel's grid takes", (long long)p.M,
                       (long long)l.n);
    const dim3 grid((unsigned)g.mblocks, (unsigned)g.groups, (unsigned)g.splits);
    return with_config(l.fp4, g.nt, Launch{p, grid, rt.pdl, s, err});
}

} // namespace qs_marlin
