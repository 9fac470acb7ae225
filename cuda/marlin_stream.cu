// marlin_stream.cu — the `marlin` kernel on Hopper (sm_90a) for steps of 17-64 tokens on the
// largest layers: one persistent CTA per SM walks a stream-K share of the layer's (128-row group,
// 128-k stage) work, its weights arriving through a shared-memory ring that a producer thread
// fills with one tensor copy per stage, so that the consumers never wait on their own loads (the
// register-prefetching wgmma kernel, marlin_wgmma.cu, reads at ~37% of the copy rate there).
//
// Warps 0-7 (two warpgroups) consume: warp w owns strip w of the group (16 output rows); per stage
// it loads its 16 bytes per unit from the ring (the packed layout is the wgmma A fragment, as in
// the other kernels), expands them in registers and issues one wgmma group per stage against the
// activations (shared-memory B operand). Warp 8 (one thread) copies each stage's weights — a 3-D
// tensor map makes the 8 strips' stage one box — and NVFP4's scale codes into the weight ring;
// warp 9 (one thread) copies the stage's activations into a ring of their own (they come from L2).
// Full / empty mbarriers pair every ring slot. The activations are first rewritten once per call
// into the exact shared-memory image of each stage (wgmma's K-major core matrices, the packer's k
// permutation undone, tokens past M zero), so one stage is one contiguous bulk copy. The producer
// warpgroup hands registers to the consumers (setmaxnreg).
//
// A CTA's share is a contiguous run of work, in group-major order, so it covers the tail of one
// group, whole groups, and the head of another; the consumers store each group's sum at the
// group's end, or, for a group split between CTAs, its partial sum, and the last CTA to finish
// a group (a ticket) adds the partials in CTA order: deterministic run to run.
//
// When it runs: stream_takes (measured rule). Measurements: docs/marlin.md, session 8.
#include <algorithm>
#include <cudaTypedefs.h> // CUtensorMap, PFN_cuTensorMapEncodeTiled

#include "marlin.h"
#include "marlin_device.cuh"
#include "marlin_hopper.cuh"

namespace qs_marlin {
namespace {

constexpr int kStrips = 8;                      // strips (consumer warps) per group: 128 rows
constexpr int kThreads = (kStrips + 4) * 32;    // + a producer warpgroup (warps 8 and 9 copy weights and activations)
constexpr int kStageK = 128;                    // k per stage (4 FP8 / 2 NVFP4 units)
constexpr int kActStages = 4;                   // activation ring depth
constexpr int kSmemBytes = 227 * 1024;          // the most dynamic shared memory a CTA may take on sm_90
constexpr int kBarrierBytes = 1024;             // the mbarriers and a flag, then the rings
constexpr int kMaxWeightStages = 24;         // mbarrier slots reserved (the ring depth is a launch parameter)
constexpr int kMaxTokens = 64;

template <bool FP4> constexpr int kUnits = kStageK / (FP4 ? kFp4UnitK : kFp8UnitK);
template <bool FP4> constexpr int kStripStageBytes = kUnits<FP4> * kUnitBytes;
// One weight stage: 8 strips' units, then (NVFP4) each strip's scale codes of the 256-k step the
// stage is in (the codes are stored per 256-k step; a 128-k stage copies the whole step).
template <bool FP4>
constexpr int kWeightStageBytes = kStrips * kStripStageBytes<FP4> + (FP4 ? kStrips * kFp4ScaleStepBytes : 0);
template <int NT> constexpr int kActStageBytes = NT * kStageK * 2;
template <int NT> constexpr int kSliceBytes = NT * 32; // one k16 slice of an activation stage
template <bool FP4, int NT>
constexpr int kWeightStages =
    std::min(kMaxWeightStages, (kSmemBytes - kBarrierBytes - kActStages * kActStageBytes<NT>) / kWeightStageBytes<FP4>);

// The ring slot and phase parity of a walk through a ring of `depth` slots.
struct RingPos {
    int slot = 0;
    uint32_t phase = 0;
    __device__ void next(int depth)
    {
        if (++slot == depth) {
            slot = 0;
            phase ^= 1;
        }
    }
};

// The CTA whose share holds work item w of T shared by C CTAs (CTA c: [c T / C, (c+1) T / C)).
__device__ __forceinline__ int owner_of(int64_t w, int64_t T, int C) { return (int)(((w + 1) * C - 1) / T); }

__device__ __forceinline__ void consumers_sync() { asm volatile("bar.sync 1, %0;\n" ::"n"(kStrips * 32) : "memory"); }

// weight_map: the packed weights as (stage bytes / 8, k stage, strip) 64-bit words, one box = one
// stage of 8 strips; scale_map (NVFP4): the scale codes as (256 bytes / 8, 256-k step, strip).
template <bool FP4, int NT>
__global__ void __launch_bounds__(kThreads, 1)
    marlin_stream_kernel(const Params p, const __grid_constant__ CUtensorMap weight_map,
                         const __grid_constant__ CUtensorMap scale_map)
{
    constexpr int UNITS = kUnits<FP4>;
    constexpr int SLICES_PER_UNIT = (FP4 ? kFp4UnitK : kFp8UnitK) / 16;
    constexpr int STRIP_BYTES = kStripStageBytes<FP4>;
    constexpr int WSTAGE = kWeightStageBytes<FP4>;
    constexpr int ASTAGE = kActStageBytes<NT>;
#ifndef QS_WGMMA
    __trap(); // built for sm_90a only: the host launches it on compute capability 9.0 alone
#endif
    extern __shared__ __align__(128) uint8_t smem[];
    // (no static shared memory: the rings take all a CTA may have)
    int &s_last = *(int *)(smem + 32 * kMaxWeightStages + 16 * kActStages);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int depth = p.ring; // weight stages (<= kWeightStages: the host checks)
    const uint32_t base = (uint32_t)__cvta_generic_to_shared(smem);
    const uint32_t w_full = base, w_empty = base + 8 * kMaxWeightStages;
    const uint32_t a_full = base + 16 * kMaxWeightStages, a_empty = a_full + 8 * kActStages;
    const uint32_t act_ring = base + kBarrierBytes, weight_ring = act_ring + kActStages * ASTAGE;

    const int nst = p.K / kStageK, groups = (p.strips + kStrips - 1) / kStrips;
    const int64_t T = (int64_t)groups * nst;
    const int C = gridDim.x;
    const int64_t lo = blockIdx.x * T / C, hi = (blockIdx.x + 1) * T / C;

    if (threadIdx.x == 0) {
        for (int i = 0; i < depth; i++) {
            mbar_init(w_full + 8 * i, 1);
            mbar_init(w_empty + 8 * i, kStrips);
        }
        for (int i = 0; i < kActStages; i++) {
            mbar_init(a_full + 8 * i, 1);
            mbar_init(a_empty + 8 * i, kStrips);
        }
        mbar_init_fence();
    }
    __syncthreads();

    if (warp >= kStrips) {
        // The producers: one thread each, walking the share with a (group, stage) counter.
        release_registers<40>();
        if (lane != 0 || warp > kStrips + 1)
            return;
        int group = (int)(lo / nst), st = (int)(lo % nst);
        RingPos pos;
        if (warp == kStrips) {
            // Weights: one tensor copy per stage brings the group's 8 strips (strips past the
            // layer's last read as zeros), one more NVFP4's scale codes. Weights are written by no
            // kernel, so this starts before the previous kernel on the stream has finished
            // (programmatic dependent launch).
            allow_next_grid();
            for (int64_t i = 0; i < hi - lo; i++) {
                if (i >= depth)
                    mbar_wait(w_empty + 8 * pos.slot, pos.phase ^ 1);
                const uint32_t full = w_full + 8 * pos.slot, dst = weight_ring + pos.slot * WSTAGE;
                mbar_arrive_expect(full, WSTAGE);
                tensor_copy_3d(dst, &weight_map, 0, st, group * kStrips, full);
                if (FP4)
                    tensor_copy_3d(dst + kStrips * STRIP_BYTES, &scale_map, 0, st / 2, group * kStrips, full);
                pos.next(depth);
                if (++st == nst)
                    st = 0, group++;
            }
            return;
        }
        // Activations: the stage's image (stream() rewrote the activations stage by stage).
        wait_for_previous_grid();
        allow_next_grid();
        for (int64_t i = 0; i < hi - lo; i++) {
            if (i >= kActStages)
                mbar_wait(a_empty + 8 * pos.slot, pos.phase ^ 1);
            const uint32_t full = a_full + 8 * pos.slot;
            mbar_arrive_expect(full, ASTAGE);
            bulk_copy(act_ring + pos.slot * ASTAGE, (const uint8_t *)p.x + (size_t)st * ASTAGE, ASTAGE, full);
            pos.next(kActStages);
            if (++st == nst)
                st = 0;
        }
        return;
    }
    claim_registers<232>();
    wait_for_previous_grid();
    allow_next_grid();

    // Consumers.
    const int r = lane >> 2, c = lane & 3;
    const uint64_t act_desc = slice_descriptor(smem + kBarrierBytes);
    RingPos wpos, apos;
    int pending_act = -1; // the activation slot whose wgmma group may still run
    float acc[NT / 2];
    uint32_t a0[UNITS][SLICES_PER_UNIT][4], a1[UNITS][SLICES_PER_UNIT][4];
    // One stage: the warp's units from the ring into registers (the slot is free once they are
    // loaded), expanded into a, then one wgmma group against the stage's activations; the group
    // before it is then complete, so its activation slot is handed back.
    auto run_stage = [&](uint32_t(&a)[UNITS][SLICES_PER_UNIT][4], int st) {
        mbar_wait(w_full + 8 * wpos.slot, wpos.phase);
        const uint8_t *ws = smem + (kBarrierBytes + kActStages * ASTAGE) + wpos.slot * WSTAGE;
        uint4 v[UNITS];
#pragma unroll
        for (int u = 0; u < UNITS; u++)
            v[u] = *(const uint4 *)(ws + warp * STRIP_BYTES + u * kUnitBytes + lane * 16);
        uint32_t sc[UNITS];
        if constexpr (FP4) {
#pragma unroll
            for (int u = 0; u < UNITS; u++)
                sc[u] = *(const unsigned short *)(ws + kStrips * STRIP_BYTES + warp * kFp4ScaleStepBytes +
                                                  fp4_scale_byte(lane, (st & 1) * UNITS + u, 0));
        }
        __syncwarp();
        if (lane == 0)
            mbar_arrive(w_empty + 8 * wpos.slot);
        wpos.next(depth);
#pragma unroll
        for (int u = 0; u < UNITS; u++) {
            if constexpr (!FP4) {
                expand_fp8_unit(v[u], &a[u][0][0]);
            } else {
                const uint32_t s_r = scale_bf16x2(sc[u], 0), s_r8 = scale_bf16x2(sc[u], 1);
                dequant_fp4(v[u].x, s_r, s_r8, a[u][0]);
                dequant_fp4(v[u].y, s_r, s_r8, a[u][1]);
                dequant_fp4(v[u].z, s_r, s_r8, a[u][2]);
                dequant_fp4(v[u].w, s_r, s_r8, a[u][3]);
            }
        }
        mbar_wait(a_full + 8 * apos.slot, apos.phase);
        const uint64_t desc = act_desc + (uint64_t)(apos.slot * ASTAGE >> 4);
        wgmma_fence();
#pragma unroll
        for (int u = 0; u < UNITS; u++)
#pragma unroll
            for (int t = 0; t < SLICES_PER_UNIT; t++)
                wgmma_acc<NT>(acc, a[u][t], desc + (uint64_t)((u * SLICES_PER_UNIT + t) * kSliceBytes<NT> >> 4));
        wgmma_commit();
        wgmma_wait<1>();
        __syncwarp();
        if (pending_act >= 0 && lane == 0)
            mbar_arrive(a_empty + 8 * pending_act);
        pending_act = apos.slot;
        apos.next(kActStages);
    };

    // Accumulator 4i+e of lane (r, c): row r + 8 (e / 2) of the warp's strip, token 8i + 2c + e % 2.
    auto token_of = [&](int idx) { return 8 * (idx / 4) + 2 * c + (idx & 1); };
    int64_t w = lo;
    while (w < hi) {
        const int group = (int)(w / nst);
        const int64_t group_end = (int64_t)(group + 1) * nst, seg_end = hi < group_end ? hi : group_end;
        const bool whole = w == (int64_t)group * nst && seg_end == group_end;
#pragma unroll
        for (int i = 0; i < NT / 2; i++)
            acc[i] = 0.f;
        // Whole pairs, then a lone stage: a loop that could run a0 twice in a row would let the
        // compiler see a0 rewritten under its own pending wgmma, and it then serializes them all.
        int st = (int)(w % nst);
        for (; w + 1 < seg_end; w += 2, st += 2) {
            run_stage(a0, st);
            run_stage(a1, st + 1);
        }
        if (w < seg_end)
            run_stage(a0, st);
        w = seg_end;
        wgmma_wait<0>();
        __syncwarp();
        if (lane == 0)
            mbar_arrive(a_empty + 8 * pending_act);
        pending_act = -1;

        const int strip = group * kStrips + warp;
        const bool real_strip = strip < p.strips;
        auto row_of = [&](int idx) { return strip * 16 + r + 8 * ((idx & 3) >> 1); };
        if (!whole) {
            // A group split between CTAs: CTA first + j stores its partial sum in slot j.
            const int first = owner_of((int64_t)group * nst, T, C), last = owner_of(group_end - 1, T, C);
#pragma unroll
            for (int idx = 0; idx < NT / 2; idx++)
                if (real_strip && token_of(idx) < p.M)
                    __stcg(partial_at(p, blockIdx.x - first, token_of(idx), row_of(idx)), acc[idx]);
            __threadfence();
            consumers_sync();
            if (threadIdx.x == 0)
                s_last = atomicAdd(p.cnt + group, 1) == last - first;
            consumers_sync();
            if (!s_last)
                continue;
            __threadfence();
            if (threadIdx.x == 0)
                p.cnt[group] = 0;
#pragma unroll
            for (int idx = 0; idx < NT / 2; idx++)
                acc[idx] = 0.f;
            for (int j = 0; j <= last - first; j++)
#pragma unroll
                for (int idx = 0; idx < NT / 2; idx++)
                    if (real_strip && token_of(idx) < p.M)
                        acc[idx] += __ldcg(partial_at(p, j, token_of(idx), row_of(idx)));
        }
#pragma unroll
        for (int idx = 0; idx < NT / 2; idx++)
            if (real_strip && token_of(idx) < p.M)
                store_output(p, acc[idx], token_of(idx), row_of(idx));
    }
}

// The activations as the kernel's stage images: stage s (k [128 s, 128 s + 128)) at s * NT * 256
// bytes; inside it, 16-byte chunk (token n, k chunk kc) at slice kc / 2, token group n / 8, core
// matrix kc % 2, row n % 8 — wgmma's K-major layout without swizzle (marlin_hopper.cuh's
// descriptor). Tokens m .. NT-1 are zeros.
template <bool FP4, int NT>
__global__ void stage_images_kernel(const __nv_bfloat16 *x, int xs, uint8_t *img, int m, int k, int k_pad)
{
    allow_next_grid(); // the GEMM's weight producer may start now
    const int chunks = k_pad / 8;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (int64_t)NT * chunks;
         i += (int64_t)gridDim.x * blockDim.x) {
        const int n = (int)(i % NT), j = (int)(i / NT); // consecutive threads: consecutive tokens
        const int st = j / 16, kc = j % 16;
        const uint4 v = n < m ? permuted_chunk<FP4>(x + (size_t)n * xs, j * 8, k) : make_uint4(0, 0, 0, 0);
        *(uint4 *)(img + (size_t)st * kActStageBytes<NT> + (kc / 2) * kSliceBytes<NT> + (n / 8) * 256 + (kc % 2) * 128 +
                   (n % 8) * 16) = v;
    }
}

template <bool FP4, int NT> constexpr size_t kSmemOf = kBarrierBytes + (size_t)kActStages * kActStageBytes<NT>;

// Calls f.template operator()<FP4, NT>() for the layer's format and the step's token tile.
template <typename F> int with_tile(bool fp4, int nt, F &&f)
{
    if (fp4)
        return nt == 16 ? f.template operator()<true, 16>()
                        : nt == 32 ? f.template operator()<true, 32>() : f.template operator()<true, 64>();
    return nt == 16 ? f.template operator()<false, 16>()
                    : nt == 32 ? f.template operator()<false, 32>() : f.template operator()<false, 64>();
}

// The weight ring depth: 4 stages (QSERVE_MARLIN_STREAM_DEPTH=N: N, up to what shared memory
// holds, for measurements). Measured (docs/marlin.md, session 8): 3-6 within a few percent, 2
// slower on the largest layer, the deepest ring (10 FP8 / 16 NVFP4 stages at 64 tokens) slower
// by ~4 us a call: every CTA requests its whole ring at the start, so the first stages land late.
struct Depth {
    template <bool FP4, int NT> int operator()()
    {
        static const int cap = env_int("QSERVE_MARLIN_STREAM_DEPTH", 4);
        return std::max(2, std::min(cap, kWeightStages<FP4, NT>));
    }
};

// The driver's tensor-map encoder (found once through the runtime: no link against libcuda).
PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder(qs_err *err)
{
    static PFN_cuTensorMapEncodeTiled_v12000 fn = nullptr;
    if (!fn) {
        void *f = nullptr;
        cudaDriverEntryPointQueryResult found;
        const cudaError_t e =
            cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault, &found);
        if (e != cudaSuccess || found != cudaDriverEntryPointSuccess || !f) {
            qs_errf(err, "marlin: the CUDA driver has no cuTensorMapEncodeTiled (%s)", cudaGetErrorString(e));
            return nullptr;
        }
        fn = (PFN_cuTensorMapEncodeTiled_v12000)f;
    }
    return fn;
}

// A (chunk bytes, steps, strips) view of per-strip data where each strip holds `steps` chunks
// back to back and strips follow each other: one box is one chunk of kStrips strips, laid out in
// shared memory strip after strip.
int strip_map(CUtensorMap *map, const void *base, int chunk_bytes, int64_t steps, int64_t strips, qs_err *err)
{
    PFN_cuTensorMapEncodeTiled_v12000 encode = tensor_map_encoder(err);
    if (!encode)
        return -1;
    const cuuint64_t dims[3] = {(cuuint64_t)chunk_bytes / 8, (cuuint64_t)steps, (cuuint64_t)strips};
    const cuuint64_t strides[2] = {(cuuint64_t)chunk_bytes, (cuuint64_t)chunk_bytes * steps}; // bytes, dims 1 and 2
    const cuuint32_t box[3] = {(cuuint32_t)chunk_bytes / 8, 1, kStrips}, unit[3] = {1, 1, 1};
    const CUresult r = encode(map, CU_TENSOR_MAP_DATA_TYPE_UINT64, 3, const_cast<void *>(base), dims, strides, box, unit,
                              CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                              CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS)
        return qs_errf(err, "marlin: cuTensorMapEncodeTiled failed (%d) for a %d-byte x %lld x %lld view", (int)r,
                       chunk_bytes, (long long)steps, (long long)strips);
    return 0;
}

struct Launch {
    const Layer &l;
    const Params &p;
    unsigned ctas;
    const Runtime &rt;
    cudaStream_t s;
    const __nv_bfloat16 *x;
    int64_t xs;
    uint8_t *img;
    qs_err *err;
    template <bool FP4, int NT> int operator()()
    {
        CUtensorMap weight_map, scale_map;
        if (strip_map(&weight_map, l.w, kStripStageBytes<FP4>, l.k_pad / kStageK, p.strips, err))
            return -1;
        if (!FP4)
            scale_map = weight_map; // an FP8 kernel never reads it
        else if (strip_map(&scale_map, l.sc, kFp4ScaleStepBytes, p.ksteps, p.strips, err))
            return -1;
        const int64_t chunks = NT * (p.K / 8);
        stage_images_kernel<FP4, NT><<<(unsigned)std::min<int64_t>((chunks + 255) / 256, 4096), 256, 0, s>>>(
            x, (int)xs, img, p.M, (int)l.k, p.K);
        QS_LAUNCH_CHECK(err);
        Params q = p;
        q.x = (const __nv_bfloat16 *)img;
        const size_t smem = kSmemOf<FP4, NT> + (size_t)q.ring * kWeightStageBytes<FP4>;
        if (ctas_per_sm((const void *)marlin_stream_kernel<FP4, NT>, kThreads, kSmemBytes, err) < 0)
            return -1;
        return launch_kernel(marlin_stream_kernel<FP4, NT>, dim3(ctas), kThreads, smem, rt.pdl, s, q, err, weight_map,
                             scale_map);
    }
};

struct StreamPlan {
    int nt, ring;
    int64_t ctas, groups, max_shares; // max_shares: the most CTAs one group is split between
};

StreamPlan plan_stream(const Layer &l, int64_t m, int sms)
{
    StreamPlan g;
    g.nt = m <= 16 ? 16 : m <= 32 ? 32 : 64;
    g.ring = with_tile(l.fp4, g.nt, Depth{});
    g.groups = (l.n_pad / 16 + kStrips - 1) / kStrips;
    const int64_t nst = l.k_pad / kStageK, total = g.groups * nst;
    g.ctas = std::min<int64_t>(sms, total); // every CTA gets at least one stage
    const int64_t least = total / g.ctas;   // stages of the shortest share
    g.max_shares = std::min<int64_t>(g.ctas, (nst + least - 1) / least + 1);
    return g;
}

void workspace_of(const StreamPlan &g, const Layer &l, int64_t m, size_t *floats, size_t *counters, size_t *images)
{
    *floats = (size_t)g.max_shares * m * l.n_pad;
    *counters = (size_t)g.groups;
    *images = (size_t)g.nt * l.k_pad; // BF16
}

} // namespace

// QSERVE_MARLIN_STREAM=0 turns it off, =2 takes every step from QSERVE_MARLIN_STREAM_MIN (17) to
// QSERVE_MARLIN_STREAM_MAX (64) tokens, whatever the layer (for measurements).
bool stream_takes(const Layer &l, int64_t m, const Runtime &rt)
{
    static const int mode = env_int("QSERVE_MARLIN_STREAM", 1);
    static const int lo = env_int("QSERVE_MARLIN_STREAM_MIN", 17);
    static const int hi = std::min(env_int("QSERVE_MARLIN_STREAM_MAX", kMaxTokens), kMaxTokens);
    if (!mode || !rt.sm90 || l.block || m < lo || m > hi || l.k_pad % kStageK != 0)
        return false;
    // Layers with at least 40 stages of work per SM (28672x4096: 54 on the H200): below that the
    // kernel's fixed cost (the activation images, the start of the ring, the split groups' sums)
    // outweighs what it gains — measured slower on 4096x14336 (27 stages per SM) and every smaller
    // Llama-3.1-8B layer (docs/marlin.md, session 8). Smaller layers keep the small-M kernel.
    return mode == 2 || (l.n_pad / 128) * (l.k_pad / kStageK) >= 40 * (int64_t)rt.sms;
}

void stream_workspace(const Layer &l, int64_t m, int sms, size_t *floats, size_t *counters, size_t *images)
{
    workspace_of(plan_stream(l, m, sms), l, m, floats, counters, images);
}

int stream(const Layer &l, Params &p, const __nv_bfloat16 *x, int64_t xs, const Runtime &rt, cudaStream_t s,
           qs_err *err)
{
    const StreamPlan g = plan_stream(l, p.M, rt.sms);
    size_t floats, counters, images;
    workspace_of(g, l, p.M, &floats, &counters, &images);
    __nv_bfloat16 *img = permuted_activations(images, err);
    if (!img)
        return -1;
    if (g.max_shares > 1 && split_workspace(floats, counters, p, err))
        return -1;
    p.ring = g.ring;
    return with_tile(l.fp4, g.nt, Launch{l, p, (unsigned)g.ctas, rt, s, x, xs, (uint8_t *)img, err});
}

} // namespace qs_marlin
