// marlin_small_m.cu — the `marlin` small-M kernel: steps of up to 64 tokens (decode), where the
// GEMM is nearly a matrix-vector product bound by reading the weights once.
//
// The pipelined kernel (marlin_gemm.cu) stages a CTA's weights through shared memory behind
// __syncthreads; at M <= 8 that measured slower (4096x4096: 11.8 us against 8.4 here). Here a CTA
// is 8 warps on 1, 2 or 4 16-row strips; each warp takes its share of the CTA's k units and loads
// its lanes' 16-byte pieces of packed weights (the packed layout puts each lane's mma fragments in
// its own 16 bytes) straight into registers, two batches in flight. The layout permutes k inside a
// unit (marlin_layout.h) so that a lane's activations for a unit are one 16-byte load (two for
// NVFP4) per token tile, read through L1 (every warp of the SM reads the same few KB). Warps'
// sums meet in shared memory; when one CTA per strip would not fill the GPU, k is also split
// across CTAs and their partials summed by the last one (marlin_device.cuh), deterministically.
#include <algorithm>
#include <type_traits>
#include <stdlib.h>

#include "marlin.h"
#include "marlin_device.cuh"

namespace qs_marlin {
namespace {

constexpr int kSmallMWarps = 8;
constexpr int kSmallMThreads = kSmallMWarps * 32;
// OCC: CTAs per SM the kernel is built for (__launch_bounds__), 2 or 3. Units per batch, two
// batches in flight per warp: 8 KB (FP8) / 4 KB (NVFP4, whose expansion needs more registers)
// per warp at OCC 2, half that at OCC 3 (fewer registers). (A variant streaming through per-warp
// cp.async rings in shared memory, more bytes in flight, measured slower: docs/marlin.md; so were
// NVFP4 batches of 6 units with one token tile, 124 registers: 4096x4096 M = 1 3.8 -> 4.8 us.)
template <bool FP4, int OCC> constexpr int kBatch = (FP4 ? 4 : 8) / (OCC == 3 ? 2 : 1);
// Eight or more strip-tiles of accumulators (32+ registers) with two batches in flight do not fit
// 128 registers without spilling: those are built for one CTA per SM.
template <int MT, int ST> constexpr int kOccupancy = MT * ST >= 8 ? 1 : 2;
constexpr int kBlockTokens = 32;  // tokens per CTA (four n8 tiles); more tokens: more token blocks
// The most tokens the kernel takes is the plan's (marlin_plan.h: at 64 it measured faster per
// decoder layer than the pipelined kernel, docs/marlin.md): two token blocks.
static_assert(QS_MARLIN_SMALL_M_MAX_TOKENS == 2 * kBlockTokens, "the small-M kernel runs up to two token blocks");
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

// One batch of a lane's weights in registers, B units of each of ST strips, and for NVFP4 their
// scale codes (rows r, r+8).
template <bool FP4, int ST, int B> struct Batch {
    uint4 w[ST][B];
    uint32_t sc[ST][FP4 ? B : 1];
};

// MT: n8 token tiles per CTA (1: up to 8 tokens, 2: up to 16, 4: 32 per token block). ST: 16-row
// strips per CTA; each warp runs all ST strips over its k units, so every activation load feeds
// ST strips' mma (above 8 tokens the activations, re-read per strip from L2, cost more than the
// weights: docs/marlin.md).
template <bool FP4, int MT, int ST, int OCC>
__global__ void __launch_bounds__(kSmallMThreads, OCC) marlin_small_m_kernel(const Params p)
{
    constexpr int B = kBatch<FP4, OCC> / ST > 0 ? kBatch<FP4, OCC> / ST : 1;
    constexpr int UNIT_K = FP4 ? kFp4UnitK : kFp8UnitK;
    constexpr int TILE_SLOTS = MT * 4;         // accumulators per lane and strip
    constexpr int SLOTS = ST * TILE_SLOTS;     // accumulators per lane
    constexpr int RED = SLOTS < 16 ? SLOTS : 16; // slots summed across warps per round
    __shared__ float red[kSmallMWarps][RED][32];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, r = lane >> 2, c = lane & 3;
    // Grid: x = the token block (the blocks of one strip group run side by side and share its
    // weights in L2), y = the group of ST strips, z = the k slice. 32-bit index arithmetic only:
    // with 16-unit warps a 64-bit division here was a noticeable share of the kernel's instructions.
    const int mb = blockIdx.x, group = blockIdx.y, split = blockIdx.z, m0 = mb * kBlockTokens;
    const int cta_u0 = split * p.units_k / p.splits;
    const int cta_n = (split + 1) * p.units_k / p.splits - cta_u0;
    const int u0 = cta_u0 + warp * cta_n / kSmallMWarps, u1 = cta_u0 + (warp + 1) * cta_n / kSmallMWarps;
    // A group past the last strip reads the last one again; its outputs are never stored.
    const uint8_t *wp[ST];
    const uint8_t *scp[ST];
#pragma unroll
    for (int s = 0; s < ST; s++) {
        const int strip = min(group * ST + s, p.strips - 1);
        wp[s] = p.w + (size_t)strip * p.units_k * kUnitBytes + lane * 16;
        // this lane's codes of the strip; per unit, its step and place in the step are added
        scp[s] = FP4 ? p.sc + ((size_t)strip * p.ksteps) * kFp4ScaleStepBytes + fp4_scale_byte(lane, 0, 0) : nullptr;
    }
    // The activation rows this lane feeds (token r of each tile), from its k chunk on. Rows past M
    // read row M-1 instead: they only feed accumulator columns that are never stored.
    const __nv_bfloat16 *xrow[MT];
#pragma unroll
    for (int t = 0; t < MT; t++)
        xrow[t] = p.x + (size_t)min(m0 + 8 * t + r, p.M - 1) * p.XS + (FP4 ? fp4_unit_k(c, 0, 0, 0) : fp8_unit_k(c, 0, 0, 0));

    // CHECKED: the batch may run past u1 (the warp's last, partial batch); else it is whole and
    // the loads and the loop need no per-unit test.
    auto load = [&](Batch<FP4, ST, B> &b, int j, auto checked) {
#pragma unroll
        for (int i = 0; i < B; i++) {
            const bool in = !decltype(checked)::value || j + i < u1;
            const unsigned u = (unsigned)(j + i);
#pragma unroll
            for (int s = 0; s < ST; s++) {
                b.w[s][i] = in ? ld_weights(wp[s] + (size_t)u * kUnitBytes) : make_uint4(0, 0, 0, 0);
                // codes of (row r, block c) and (row r+8, block c) of unit u in its 256-k step
                if (FP4)
                    b.sc[s][i] = in ? __ldg((const unsigned short *)(scp[s] + (u / 4) * kFp4ScaleStepBytes +
                                                                     fp4_scale_byte(0, u % 4, 0)))
                                    : 0u;
            }
        }
    };
    float acc[ST][MT][4];
#pragma unroll
    for (int s = 0; s < ST; s++)
#pragma unroll
        for (int t = 0; t < MT; t++)
#pragma unroll
            for (int e = 0; e < 4; e++)
                acc[s][t][e] = 0.f;
    auto compute = [&](const Batch<FP4, ST, B> &b, int j, auto checked) {
        const __nv_bfloat16 *xj[MT];
#pragma unroll
        for (int t = 0; t < MT; t++)
            xj[t] = xrow[t] + j * UNIT_K;
#pragma unroll
        for (int i = 0; i < B; i++) {
            if (decltype(checked)::value && j + i >= u1)
                break;
            if (!FP4) {
                // Several strips: every tile's activations loaded once, first. One strip: each
                // tile's loaded right before its two mma (loading them all first spilled
                // registers at four tiles and ran 10-20% slower).
                uint4 xa[ST > 1 ? MT : 1];
                if constexpr (ST > 1)
#pragma unroll
                    for (int t = 0; t < MT; t++)
                        xa[t] = __ldg((const uint4 *)(xj[t] + i * UNIT_K));
#pragma unroll
                for (int s = 0; s < ST; s++) {
                    uint32_t a[8];
                    expand_fp8_unit(b.w[s][i], a);
#pragma unroll
                    for (int t = 0; t < MT; t++) {
                        const uint4 x = ST > 1 ? xa[t] : __ldg((const uint4 *)(xj[t] + i * UNIT_K));
                        mma(acc[s][t], a, x.x, x.y);
                        mma(acc[s][t], a + 4, x.z, x.w);
                    }
                }
            } else {
                uint32_t xb[MT][8];
#pragma unroll
                for (int t = 0; t < MT; t++) {
                    const uint4 lo = __ldg((const uint4 *)(xj[t] + i * UNIT_K));
                    const uint4 hi = __ldg((const uint4 *)(xj[t] + i * UNIT_K + 8));
                    xb[t][0] = lo.x, xb[t][1] = lo.y, xb[t][2] = lo.z, xb[t][3] = lo.w;
                    xb[t][4] = hi.x, xb[t][5] = hi.y, xb[t][6] = hi.z, xb[t][7] = hi.w;
                }
#pragma unroll
                for (int s = 0; s < ST; s++) {
                    const uint4 v = b.w[s][i];
                    const uint32_t s_r = scale_bf16x2(b.sc[s][i], 0), s_r8 = scale_bf16x2(b.sc[s][i], 1);
                    const uint32_t words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
                    for (int q = 0; q < 4; q++) {
                        uint32_t a[4];
                        dequant_fp4(words[q], s_r, s_r8, a);
#pragma unroll
                        for (int t = 0; t < MT; t++)
                            mma(acc[s][t], a, xb[t][2 * q], xb[t][2 * q + 1]);
                    }
                }
            }
        }
    };
    const std::true_type checked;
    const std::false_type whole;

    // The weights do not depend on the previous kernel: the first batch is requested before
    // waiting for it (programmatic dependent launch); the activations are read after. Two
    // batches in flight: while one is expanded and multiplied, the next one's loads are out.
    Batch<FP4, ST, B> b0, b1;
    int j = u0;
    if (j + B <= u1)
        load(b0, j, whole);
    else
        load(b0, j, checked);
    wait_for_previous_grid();
    allow_next_grid();
    for (; j + 2 * B <= u1; j += 2 * B) {
        load(b1, j + B, whole);
        compute(b0, j, whole);
        if (j + 3 * B <= u1)
            load(b0, j + 2 * B, whole);
        else if (j + 2 * B < u1)
            load(b0, j + 2 * B, checked);
        compute(b1, j + B, whole);
    }
    if (j < u1) { // the tail: b0 holds batch j, at most two partial batches left
        if (j + B < u1)
            load(b1, j + B, checked);
        compute(b0, j, checked);
        if (j + B < u1)
            compute(b1, j + B, checked);
    }

    // Sum the warps, RED slots per round: in each round warp w owns slots w and w + 8 of every
    // lane. Slot q of the CTA is strip q / TILE_SLOTS, tile (q / 4) % MT, accumulator q % 4.
    constexpr int OWNED = (RED + kSmallMWarps - 1) / kSmallMWarps;
#pragma unroll
    for (int q0 = 0; q0 < SLOTS; q0 += RED) {
        if (q0 > 0)
            __syncthreads();
#pragma unroll
        for (int q = 0; q < RED; q++)
            red[warp][q][lane] = acc[(q0 + q) / TILE_SLOTS][((q0 + q) / 4) % MT][(q0 + q) & 3];
        __syncthreads();
        float v[OWNED];
        int m[OWNED], n[OWNED];
        bool owner[OWNED];
#pragma unroll
        for (int o = 0; o < OWNED; o++) {
            const int q = warp + o * kSmallMWarps, slot = q0 + q, e = slot & 3;
            const int strip = group * ST + slot / TILE_SLOTS;
            m[o] = m0 + ((slot / 4) % MT) * 8 + 2 * c + (e & 1);
            n[o] = strip * 16 + r + (e >> 1) * 8;
            owner[o] = q < RED && m[o] < p.M && strip < p.strips;
            v[o] = 0.f;
            if (q < RED)
#pragma unroll
                for (int w = 0; w < kSmallMWarps; w++)
                    v[o] += red[w][q][lane];
        }
        if (p.splits > 1) {
#pragma unroll
            for (int o = 0; o < OWNED; o++)
                if (owner[o])
                    __stcg(partial_at(p, split, m[o], n[o]), v[o]);
        }
        if (p.splits == 1)
#pragma unroll
            for (int o = 0; o < OWNED; o++)
                if (owner[o])
                    store_output(p, v[o], m[o], n[o]);
    }
    if (p.splits == 1 || !last_of_tile(p, group * p.mblocks + mb))
        return;
    // The last k slice of this tile: sum every slice's partials, in slice order.
    for (int q = threadIdx.x; q < SLOTS * 32; q += kSmallMThreads) {
        const int slot = q / 32, ln = q % 32, e = slot & 3, strip = group * ST + slot / TILE_SLOTS;
        const int m = m0 + ((slot / 4) % MT) * 8 + 2 * (ln & 3) + (e & 1), n = strip * 16 + (ln >> 2) + (e >> 1) * 8;
        if (m < p.M && strip < p.strips)
            store_output(p, sum_partials(p, m, n), m, n);
    }
}

// k slices in 1..16: the range both the rule and the forced count keep to.
int64_t clamp_splits(int64_t n) { return std::max<int64_t>(1, std::min<int64_t>(16, n)); }

// k slices per strip group (CTAs = token blocks x strip groups x slices). Time goes as the number of waves
// of resident CTAs over the slices, each slice 1/s of a strip's work: the s in 1..16 with the
// fewest waves per slice, the smallest on ties, keeping at least kMinUnitsPerWarp units per warp.
// Few strips split to fill one wave (4096 rows at M = 1: 256 strips on 264 slots stay whole; the
// 1024-row k/v projections of a GQA model split).
// QSERVE_MARLIN_GEMV_SPLITS=N forces N slices where k has room for them (for measurements; more
// slices than the rule's measured slower on every Llama-3.1-8B shape, session 13).
int small_m_splits(const Layer &l, int64_t ctas, int sms, int resident)
{
    static const int forced = std::max(0, knob("QSERVE_MARLIN_GEMV_SPLITS", 0));
    const int64_t units_k = l.k_pad / (l.fp4 ? kFp4UnitK : kFp8UnitK);
    const int64_t most = units_k / (kSmallMWarps * kMinUnitsPerWarp);
    if (forced)
        return (int)clamp_splits(std::min<int64_t>(forced, most));
    return split_by_waves(ctas, (int64_t)sms * resident, most);
}

int64_t token_blocks(int64_t m) { return (m + kBlockTokens - 1) / kBlockTokens; }

// CTAs per SM to build for. Measured (docs/decisions.md): when the CTAs do not
// fit one wave at two per SM, three per SM (half batches, 80 registers) is faster — 6144x4096 FP8
// at M = 1 15.5 -> 7.4 us, 28672x4096 32.9 -> 30.7 — and when they fit, two per SM with twice the
// bytes in flight per warp is (4096x14336 17.7 against 19.1). Three exists up to 16 tokens (two
// tiles) and one strip per CTA. QSERVE_MARLIN_GEMV_OCC=2 or 3 forces one (for measurements).
int occupancy_for(int64_t m, int st, int64_t ctas, int sms)
{
    static const int forced = [] {
        const int v = knob("QSERVE_MARLIN_GEMV_OCC", 0);
        return v == 2 || v == 3 ? v : 0;
    }();
    if (m > 16 || st > 1)
        return 2;
    if (forced)
        return forced;
    return ctas > (int64_t)sms * 2 ? 3 : 2;
}

// Strips per CTA, from the per-decoder-layer sums measured in session 6 (docs/decisions.md):
// FP8 one up to 32 tokens and two above (M = 64: 215 against 238 us); NVFP4, whose expansion costs
// more per activation load it shares, one up to 8 tokens, two up to 32 and four above (M = 64:
// 152 against 177 us). QSERVE_MARLIN_GEMV_STRIPS=1, 2 or 4 forces one (for measurements).
int strips_for(bool fp4, int64_t m)
{
    static const int forced = [] {
        const int v = knob("QSERVE_MARLIN_GEMV_STRIPS", 0);
        return v == 1 || v == 2 || v == 4 ? v : 0;
    }();
    if (forced)
        return forced;
    if (!fp4)
        return m <= 32 ? 1 : 2;
    return m <= 8 ? 1 : m <= 32 ? 2 : 4;
}

// The split-K partials (one per k slice, token and padded output) and tickets (one per token
// block and strip).
void workspace_for(const Layer &l, int splits, int64_t m, size_t *floats, size_t *counters)
{
    *floats = splits > 1 ? (size_t)splits * m * l.n_pad : 0;
    *counters = splits > 1 ? (size_t)(l.n_pad / 16 * token_blocks(m)) : 0;
}

using SmallMKernel = void (*)(const Params);

// The kernel instance for a step: token tiles from M, strips per CTA, CTAs per SM built for.
template <bool FP4, int MT, int ST> SmallMKernel kernel_for_occupancy(int occ)
{
    if constexpr (MT <= 2 && ST == 1)
        if (occ == 3)
            return marlin_small_m_kernel<FP4, MT, ST, 3>;
    return marlin_small_m_kernel<FP4, MT, ST, kOccupancy<MT, ST>>;
}

template <bool FP4, int MT> SmallMKernel kernel_for_strips(int st, int occ)
{
    return st == 4 ? kernel_for_occupancy<FP4, MT, 4>(occ)
         : st == 2 ? kernel_for_occupancy<FP4, MT, 2>(occ)
                   : kernel_for_occupancy<FP4, MT, 1>(occ);
}

template <bool FP4> SmallMKernel kernel_for_tokens(int64_t m, int st, int occ)
{
    return m <= 8 ? kernel_for_strips<FP4, 1>(st, occ)
         : m <= 16 ? kernel_for_strips<FP4, 2>(st, occ)
                   : kernel_for_strips<FP4, 4>(st, occ);
}

SmallMKernel small_m_kernel(bool fp4, int64_t m, int st, int occ)
{
    return fp4 ? kernel_for_tokens<true>(m, st, occ) : kernel_for_tokens<false>(m, st, occ);
}

} // namespace

int split_by_waves(int64_t ctas, int64_t wave, int64_t most)
{
    most = clamp_splits(most);
    int best = 1;
    double best_cost = 1e30;
    for (int s = 1; s <= most; s++) {
        const double cost = (double)((ctas * s + wave - 1) / wave) / s;
        if (cost < best_cost - 1e-9) {
            best_cost = cost;
            best = s;
        }
    }
    return best;
}

namespace {
// How a step of m tokens runs: token blocks, strips per CTA, the kernel instance, k slices.
struct SmallMPlan {
    int mblocks, st, groups, splits;
    SmallMKernel kernel;
};
int plan_small_m(const Layer &l, int64_t m, int sms, SmallMPlan *g, qs_err *err)
{
    g->mblocks = (int)token_blocks(m);
    g->st = strips_for(l.fp4, m);
    g->groups = (int)((l.n_pad / 16 + g->st - 1) / g->st);
    const int64_t ctas = (int64_t)g->groups * g->mblocks;
    g->kernel = small_m_kernel(l.fp4, m, g->st, occupancy_for(m, g->st, ctas, sms));
    // The slots of a wave are what the built kernel really gets (builds for one CTA per SM use
    // more than 128 registers), not what occupancy_for chose between.
    const int resident = ctas_per_sm((const void *)g->kernel, kSmallMThreads, 0, err);
    if (resident < 0)
        return -1;
    g->splits = small_m_splits(l, ctas, sms, resident);
    return 0;
}
} // namespace

int small_m_workspace(const Layer &l, int64_t m, int sms, size_t *floats, size_t *counters, qs_err *err)
{
    SmallMPlan g;
    if (plan_small_m(l, m, sms, &g, err))
        return -1;
    workspace_for(l, g.splits, m, floats, counters);
    return 0;
}

int small_m(const Layer &l, Params &p, const Runtime &rt, cudaStream_t s, qs_err *err)
{
    SmallMPlan g;
    if (plan_small_m(l, p.M, rt.sms, &g, err))
        return -1;
    p.mblocks = g.mblocks;
    p.splits = g.splits;
    size_t floats, counters;
    workspace_for(l, p.splits, p.M, &floats, &counters);
    if (p.splits > 1 && split_workspace(floats, counters, p, err))
        return -1;
    if (g.groups > 65535)
        return qs_errf(err, "marlin: %lld output rows are more than the small-M kernel's grid takes (%d)",
                       (long long)l.n, 65535 * 16 * g.st);
    const dim3 grid((unsigned)p.mblocks, (unsigned)g.groups, (unsigned)p.splits);
    return launch_kernel(g.kernel, grid, kSmallMThreads, 0, rt.pdl, s, p, err);
}

} // namespace qs_marlin
