// marlin_stream.cu — the `marlin` kernel on Hopper (sm_90a) for steps of 9-64 tokens: one
// persistent CTA per SM walks a stream-K share of the layer's (128-row group, 128-k stage) work,
// its weights arriving through a shared-memory ring that a producer thread fills with one tensor
// copy per stage, so that the consumers never wait on their own loads (the register-prefetching
// wgmma kernel, marlin_wgmma.cu, reads at ~37% of the copy rate there).
//
// Warps 0-7 (two warpgroups) consume: warp w owns strip w of the group (16 output rows); per stage
// it loads its 16 bytes per unit from the ring (the packed layout is the wgmma A fragment, as in
// the other kernels), expands them in registers and issues one wgmma group per stage against the
// activations (shared-memory B operand). The producer warpgroups (warps 8-15) hand their registers
// to the consumers (setmaxnreg) and feed them:
//   warp 8 (one thread) copies each stage's weights — a 3-D tensor map makes the 8 strips' stage
//     one box — and NVFP4's scale codes into the weight ring;
//   warp 9 (one thread) copies the stage's activations as they are (a 2-D tensor map over x:
//     tokens past M and k past the layer's read as zeros, 128-byte swizzle) into a staging ring;
//   warps 10-13 rewrite each staged stage into the activation ring in wgmma's K-major core-matrix
//     layout with the packer's k permutation undone (four 16-byte loads in, four stores out per
//     token and 32 k: a 4 x 4 transpose of 4-byte pairs in registers);
//   warp 15 publishes a split group's partial sums (below) so the consumers need not wait for it.
// Full / empty mbarriers pair every ring slot.
//
// A CTA's share is a contiguous run of work, in group-major order, so it covers the tail of one
// group, whole groups, and the head of another. Whole groups are stored at the group's end. A group
// split between CTAs is summed by the CTA that owns its first stage (for it, always the last
// segment of its share): the others store their partial sums (slot = their distance from it) and
// warp 15 releases a per-group count; the summing CTA waits for the count and adds the partials in
// slot order — deterministic run to run, and the consumers never stall on a fence. A summing CTA
// only ever waits for CTAs of higher index (the group's later stages), which publish at the start
// of their shares; with at most one CTA per SM and CTAs dispatched in index order, the wait cannot
// deadlock even when fewer SMs than CTAs are free.
//
// When it runs: the rows of marlin_plan.h's table (kMarlinRules) that name it. Measurements and the
// variants measured against it: docs/decisions.md.
#include <algorithm>
#include <cudaTypedefs.h> // CUtensorMap, PFN_cuTensorMapEncodeTiled

#include "marlin.h"
#include "marlin_device.cuh"
#include "marlin_hopper.cuh"
#include "marlin_stream_plan.h"
#include "marlin_stream_rewrite.h"

namespace qs_marlin {
namespace {

constexpr int kStrips = 8;                      // strips (consumer warps) per group: 128 rows
constexpr int kConsumers = kStrips * 32;
constexpr int kThreads = (kStrips + 8) * 32;    // + two producer warpgroups
constexpr int kPermuteWarp0 = kStrips + 2, kPermuteWarps = 4;
constexpr int kPublishWarp = kStrips + 7;
constexpr int kStageK = 128;                    // k per stage (4 FP8 / 2 NVFP4 units)
constexpr int kActStages = 4;                   // activation ring depth (the rewritten stages)
constexpr int kStagedStages = 4;                // staging ring depth (the copied stages)
constexpr int kSmemBytes = 227 * 1024;          // the most dynamic shared memory a CTA may take on sm_90
constexpr int kAlign = 1024;                    // the 128-byte swizzle's period: the staging ring's alignment
constexpr int kBarrierBytes = 1024;             // the mbarriers, then the rings
constexpr int kMaxWeightStages = 24;         // mbarrier slots reserved (the ring depth is a launch parameter)
constexpr int kConsumerBarrier = 1;                                     // named barriers (0: __syncthreads)
constexpr int kPublishBarrier = 2, kPublishThreads = kConsumers + 32; // consumers + warp 15

template <bool FP4> constexpr int kUnits = kStageK / (FP4 ? kFp4UnitK : kFp8UnitK);
template <bool FP4> constexpr int kStripStageBytes = kUnits<FP4> * kUnitBytes;
// One weight stage: 8 strips' units, then (NVFP4) each strip's scale codes of the 256-k step the
// stage is in (the codes are stored per 256-k step; a 128-k stage copies the whole step).
template <bool FP4>
constexpr int kWeightStageBytes = kStrips * kStripStageBytes<FP4> + (FP4 ? kStrips * kFp4ScaleStepBytes : 0);
template <int NT> constexpr int kActStageBytes = NT * kStageK * 2; // a rewritten or a staged stage
// Each consumer warp's outputs of a segment, (token, 16 rows) BF16, on their way to 16-byte stores:
// static shared memory (an address known at link time, so no value lives across the stream loop
// for it: such values cost the loop its uniform datapath, session 12), beside the dynamic rings.
template <int NT> constexpr int kOutTileBytes = kStrips * NT * 16 * 2;
// The rewrite-free variant (XP) has no staging ring: its activations go straight into the
// activation ring.
template <int NT, bool XP = false>
constexpr int kFixedSmem = kAlign + kBarrierBytes + (kActStages + (XP ? 0 : kStagedStages)) * kActStageBytes<NT>;
template <bool FP4, int NT, bool XP>
constexpr int kWeightStages =
    std::min(kMaxWeightStages, (kSmemBytes - kOutTileBytes<NT> - kFixedSmem<NT, XP>) / kWeightStageBytes<FP4>);
static_assert(16 * (kMaxWeightStages + kActStages + kStagedStages) <= kBarrierBytes, "the mbarriers fit their region");

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

// One producer thread's walk through its share [lo, hi) of (group, stage) items: per item, waits
// for ring slot `slot` (mbarriers full / empty + 8 * slot) to be free, announces `bytes` on its full
// barrier and has copy(full, slot, group, stage) issue the copies that complete on it.
template <typename Copy>
__device__ __forceinline__ void fill_ring(uint32_t full, uint32_t empty, int depth, uint32_t bytes, int64_t lo,
                                          int64_t hi, int nst, Copy &&copy)
{
    int group = (int)(lo / nst), st = (int)(lo % nst);
    RingPos pos;
    for (int64_t i = 0; i < hi - lo; i++) {
        if (i >= depth)
            mbar_wait(empty + 8 * pos.slot, pos.phase ^ 1);
        mbar_arrive_expect(full + 8 * pos.slot, bytes);
        copy(full + 8 * pos.slot, pos.slot, group, st, i);
        pos.next(depth);
        if (++st == nst)
            st = 0, group++;
    }
}

// Rewrites one staged stage into wgmma's K-major image (marlin_stream_rewrite.h), item by item;
// consecutive threads take consecutive tokens (no bank conflicts).
// The whole tile, even where the copy brought fewer rows (Params::x_rows): the later rows are stale
// values that reach only accumulators of tokens past M, never stored. (Walking only the copied
// rows, a division by their run-time count, made every stage slower: session 15 call 1.)
template <bool FP4, int NT> __device__ __forceinline__ void rewrite_stage(const uint8_t *staged, uint8_t *act, int tid)
{
#pragma unroll 1
    for (int i = tid; i < 4 * NT; i += kPermuteWarps * 32)
        rewrite_item<FP4, NT>(staged, act, i % NT, i / NT);
}

// Byte offset of k16 slice s of a stage in the activation ring: the rewritten image's slices one
// after another, or (XP) 32 bytes along a swizzled 128-byte row, the second 64 k in the second box.
template <int NT, bool XP> __device__ __forceinline__ int slice_offset(int s)
{
    return XP ? (s >> 2) * staged_half_bytes(NT) + (s & 3) * 32 : s * image_slice_bytes(NT);
}

// weight_map: the packed weights as (stage bytes / 8, k stage, strip) 64-bit words, one box = one
// stage of 8 strips; scale_map (NVFP4): the scale codes as (256 bytes / 8, 256-k step, strip);
// x_map: the activations as (k, token) BF16, one box = 64 k of p.x_rows tokens (at most the tile's
// NT), 128-byte swizzle.
template <bool FP4, int NT, bool XP>
__global__ void __launch_bounds__(kThreads, 1)
    marlin_stream_kernel(const Params p, const __grid_constant__ CUtensorMap weight_map,
                         const __grid_constant__ CUtensorMap scale_map, const __grid_constant__ CUtensorMap x_map)
{
    constexpr int UNITS = kUnits<FP4>;
    constexpr int SLICES_PER_UNIT = (FP4 ? kFp4UnitK : kFp8UnitK) / 16;
    constexpr int STRIP_BYTES = kStripStageBytes<FP4>;
    constexpr int WSTAGE = kWeightStageBytes<FP4>;
    constexpr int ASTAGE = kActStageBytes<NT>;
#ifndef QS_WGMMA
    __trap(); // built for sm_90a only: the host launches it on compute capability 9.0 alone
#endif
    extern __shared__ __align__(128) uint8_t smem_raw[];
    const uint32_t raw = (uint32_t)__cvta_generic_to_shared(smem_raw);
    uint8_t *smem = smem_raw + ((kAlign - (raw & (kAlign - 1))) & (kAlign - 1));
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int depth = p.ring; // weight stages (<= kWeightStages)
    const uint32_t base = (uint32_t)__cvta_generic_to_shared(smem);
    const uint32_t w_full = base, w_empty = base + 8 * kMaxWeightStages;
    const uint32_t a_full = base + 16 * kMaxWeightStages, a_empty = a_full + 8 * kActStages;
    const uint32_t x_full = a_empty + 8 * kActStages, x_empty = x_full + 8 * kStagedStages;
    uint8_t *const staged_ring = smem + kBarrierBytes;
    uint8_t *const act_ring = staged_ring + (XP ? 0 : kStagedStages) * ASTAGE;
    uint8_t *const weight_ring = act_ring + kActStages * ASTAGE;

    const int nst = p.K / kStageK, groups = (p.strips + kStrips - 1) / kStrips;
    const int64_t T = (int64_t)groups * nst;
    const int C = gridDim.x;
    const int64_t lo = share_begin(blockIdx.x, T, C), hi = share_begin(blockIdx.x + 1, T, C);

    if (threadIdx.x == 0) {
        for (int i = 0; i < depth; i++) {
            mbar_init(w_full + 8 * i, 1);
            mbar_init(w_empty + 8 * i, kStrips);
        }
        for (int i = 0; i < kActStages; i++) {
            mbar_init(a_full + 8 * i, XP ? 1 : kPermuteWarps);
            mbar_init(a_empty + 8 * i, kStrips);
        }
        for (int i = 0; i < (XP ? 0 : kStagedStages); i++) {
            mbar_init(x_full + 8 * i, 1);
            mbar_init(x_empty + 8 * i, kPermuteWarps);
        }
        mbar_init_fence();
    }
    __syncthreads();

    if (warp >= kStrips) {
        release_registers<48>();
        if (warp == kStrips) {
            // Weights: one tensor copy per stage brings the group's 8 strips (strips past the
            // layer's last read as zeros), one more NVFP4's scale codes. Weights are written by no
            // kernel, so this starts before the previous kernel on the stream has finished
            // (programmatic dependent launch).
            allow_next_grid();
            if (lane != 0)
                return;
            fill_ring(w_full, w_empty, depth, WSTAGE, lo, hi, nst, [&](uint32_t full, int slot, int group, int st, int64_t i) {
                const uint32_t dst = (uint32_t)__cvta_generic_to_shared(weight_ring + slot * WSTAGE);
                tensor_copy_3d(dst, &weight_map, 0, st, group * kStrips, full);
                if (FP4)
                    tensor_copy_3d(dst + kStrips * STRIP_BYTES, &scale_map, 0, st / 2, group * kStrips, full);
            });
        } else if (warp == kStrips + 1) {
            // Activations: the stage's 128 k of p.x_rows tokens as two 64-k boxes.
            const uint32_t act_bytes = (uint32_t)p.x_rows * kStageK * 2;
            wait_for_previous_grid();
            allow_next_grid();
            if (lane != 0)
                return;
            if constexpr (XP) {
                // x already in the packer's k order (permute_activations): straight into the
                // activation ring, whose 128-byte swizzle the consumers' descriptors read as is
                fill_ring(a_full, a_empty, kActStages, act_bytes, lo, hi, nst, [&](uint32_t full, int slot, int, int st, int64_t i) {
                    const uint32_t dst = (uint32_t)__cvta_generic_to_shared(act_ring + slot * ASTAGE);
                    tensor_copy_2d(dst, &x_map, st * kStageK, 0, full);
                    tensor_copy_2d(dst + staged_half_bytes(NT), &x_map, st * kStageK + 64, 0, full);
                });
                return;
            }
            fill_ring(x_full, x_empty, kStagedStages, act_bytes, lo, hi, nst, [&](uint32_t full, int slot, int, int st, int64_t i) {
                const uint32_t dst = (uint32_t)__cvta_generic_to_shared(staged_ring + slot * ASTAGE);
                tensor_copy_2d(dst, &x_map, st * kStageK, 0, full);
                tensor_copy_2d(dst + staged_half_bytes(NT), &x_map, st * kStageK + 64, 0, full);
            });
        } else if (warp < kPermuteWarp0 + kPermuteWarps) {
            allow_next_grid();
            if (XP)
                return;
            const int tid = threadIdx.x - kPermuteWarp0 * 32;
            RingPos xpos, apos;
            for (int64_t i = 0; i < hi - lo; i++) {
                mbar_wait(x_full + 8 * xpos.slot, xpos.phase);
                if (i >= kActStages)
                    mbar_wait(a_empty + 8 * apos.slot, apos.phase ^ 1);
                rewrite_stage<FP4, NT>(staged_ring + xpos.slot * ASTAGE, act_ring + apos.slot * ASTAGE, tid);
                fence_async_shared(); // the generic-proxy stores, before wgmma reads them
                __syncwarp();
                if (lane == 0) {
                    mbar_arrive(x_empty + 8 * xpos.slot);
                    mbar_arrive(a_full + 8 * apos.slot);
                }
                xpos.next(kStagedStages);
                apos.next(kActStages);
            }
        } else if (warp == kPublishWarp) {
            wait_for_previous_grid(); // the counts are the previous kernel's until it ends
            allow_next_grid();
            if (lo % nst != 0) {
                // A share that starts inside a group starts with a partial segment (consumers
                // below): once its partials are stored, count them in for the group's summing CTA.
                named_sync<kPublishBarrier, kPublishThreads>();
                if (lane == 0) {
                    __threadfence();
                    atomicAdd(p.cnt + lo / nst, 1);
                }
            }
        } else {
            allow_next_grid();
        }
        return;
    }
    claim_registers<208>();
    wait_for_previous_grid();
    allow_next_grid();

    // Consumers.
    const int r = lane >> 2, c = lane & 3;
    const uint64_t act_desc = XP ? swizzled_descriptor(act_ring) : slice_descriptor(act_ring);
    RingPos wpos, apos;
    int pending_act = -1; // the activation slot whose wgmma group may still run
    float acc[NT / 2];
    uint32_t a0[UNITS][SLICES_PER_UNIT][4], a1[UNITS][SLICES_PER_UNIT][4];
    // One stage: the warp's units from the ring into registers (the slot is free once they are
    // loaded), expanded into a, then one wgmma group against the stage's activations; the group
    // before it is then complete, so its activation slot is handed back.
    auto run_stage = [&](uint32_t(&a)[UNITS][SLICES_PER_UNIT][4], int st) {
        mbar_wait(w_full + 8 * wpos.slot, wpos.phase);
        const uint8_t *ws = weight_ring + wpos.slot * WSTAGE;
        uint4 v[UNITS] = {};
#pragma unroll
        for (int u = 0; u < UNITS; u++)
            v[u] = *(const uint4 *)(ws + warp * STRIP_BYTES + u * kUnitBytes + lane * 16);
        uint32_t sc[UNITS] = {};
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
                wgmma_acc<NT>(acc, a[u][t], desc + (uint64_t)(slice_offset<NT, XP>(u * SLICES_PER_UNIT + t) >> 4));
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
        const int64_t group_start = (int64_t)group * nst, group_end = group_start + nst;
        const int64_t seg_end = hi < group_end ? hi : group_end;
        const bool has_first = w == group_start; // this segment holds the group's first stage
        const int strip = group * kStrips + warp, row0 = strip * 16 + r;
        // the epilogue's row factors, loaded now so the stores at the end do not wait for them
        const OutRow o0 = out_row(p, row0), o8 = out_row(p, row0 + 8);
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

        if (seg_end != group_end || !has_first) {
            // A group split between CTAs; the CTA with its first stage sums it. Partials are kept
            // in the consumers' register order (slot j of the group: float4 i of thread t at
            // (i * 256 + t) * 4), so each thread stores and loads whole 16-byte runs.
            const int first = owner_of(group_start, T, C), last = owner_of(group_end - 1, T, C);
            float4 *const slots = (float4 *)p.ws + (size_t)group * p.splits * (NT / 8) * kConsumers + threadIdx.x;
            constexpr size_t SLOT = (size_t)(NT / 8) * kConsumers; // float4 per slot
            if (!has_first) {
                // (the share's first segment) partials to slot (this CTA - first); warp 15
                // publishes them, the consumers go on
                float4 *const mine = slots + (blockIdx.x - first) * SLOT;
#pragma unroll
                for (int i = 0; i < NT / 8; i++)
                    __stcg(mine + i * kConsumers, make_float4(acc[4 * i], acc[4 * i + 1], acc[4 * i + 2], acc[4 * i + 3]));
                named_arrive<kPublishBarrier, kPublishThreads>();
                continue;
            }
            // (the share's last segment) the other owners published theirs at their shares'
            // starts: the wait is normally over at once
            if (threadIdx.x == 0) {
                while (load_acquire(p.cnt + group) < last - first) {
                }
                p.cnt[group] = 0; // no one else reads or writes it in this call
            }
            named_sync<kConsumerBarrier, kConsumers>();
            // Slots 1..n onto acc (slot 0), two slots' loads in flight at a time, added in slot
            // order (deterministic).
            const int n = last - first;
            for (int j = 1; j <= n; j += 2) {
                float4 v0[NT / 8], v1[NT / 8];
#pragma unroll
                for (int i = 0; i < NT / 8; i++) {
                    v0[i] = __ldcg(slots + j * SLOT + i * kConsumers);
                    v1[i] = j < n ? __ldcg(slots + (j + 1) * SLOT + i * kConsumers) : make_float4(0.f, 0.f, 0.f, 0.f);
                }
#pragma unroll
                for (int i = 0; i < NT / 8; i++) {
                    acc[4 * i] += v0[i].x, acc[4 * i + 1] += v0[i].y, acc[4 * i + 2] += v0[i].z, acc[4 * i + 3] += v0[i].w;
                    acc[4 * i] += v1[i].x, acc[4 * i + 1] += v1[i].y, acc[4 * i + 2] += v1[i].z, acc[4 * i + 3] += v1[i].w;
                }
            }
        }
        // The outputs through the warp's tile, so that each lane stores 16-byte runs of y (8 rows of
        // one token; stream_takes and stream_fits keep rows a multiple of 8 and y 16-byte aligned).
        // The one barrier is unconditional: a __syncwarp inside the strip test below takes the
        // stream loop off the uniform datapath (session 13); the tile's previous reads are behind
        // the __syncwarp at the end of this segment's stream.
        __shared__ __align__(16) __nv_bfloat16 out_tiles[kStrips][NT * 16];
        __nv_bfloat16 *const out_tile = out_tiles[warp];
        if (strip < p.strips) {
#pragma unroll
            for (int idx = 0; idx < NT / 2; idx++)
                out_tile[token_of(idx) * 16 + r + 8 * ((idx & 3) >> 1)] = out_value(p, (idx & 2) ? o8 : o0, acc[idx]);
        }
        __syncwarp();
        if (strip < p.strips) {
#pragma unroll
            for (int k = 0; k < (NT + 15) / 16; k++) {
                const int q = lane + 32 * k, t = q >> 1, n = strip * 16 + 8 * (q & 1);
                if (t < p.M && n < p.N) // (t < M <= NT)
                    *(uint4 *)(p.y + (size_t)t * p.N + n) = *(const uint4 *)(out_tile + q * 8);
            }
        }
    }
}

// Calls f.template operator()<FP4, NT>() for the layer's format and the step's token tile (every
// multiple of 8 from 16 to 64: plan_stream).
template <bool FP4, typename F> int with_tile_of(int nt, F &&f)
{
    switch (nt) {
    case 16: return f.template operator()<FP4, 16>();
    case 24: return f.template operator()<FP4, 24>();
    case 32: return f.template operator()<FP4, 32>();
    case 40: return f.template operator()<FP4, 40>();
    case 48: return f.template operator()<FP4, 48>();
    case 56: return f.template operator()<FP4, 56>();
    default: return f.template operator()<FP4, 64>();
    }
}

template <typename F> int with_tile(bool fp4, int nt, F &&f)
{
    return fp4 ? with_tile_of<true>(nt, f) : with_tile_of<false>(nt, f);
}

// The weight ring depth: 4 stages (QSERVE_MARLIN_STREAM_DEPTH=N: N, up to what shared memory
// holds, for measurements). Measured (docs/decisions.md): 3-6 within a few
// percent, 2 slower on the largest layer, the deepest ring (10 FP8 / 16 NVFP4 stages at 64
// tokens) slower by ~4 us a call: every CTA requests its whole ring at the start, so the first
// stages land late.
struct Depth {
    bool xp; // the rewrite-free variant: no staging ring, more room for weights
    template <bool FP4, int NT> int operator()()
    {
        static const int cap = knob("QSERVE_MARLIN_STREAM_DEPTH", 4);
        return std::max(2, std::min(cap, xp ? kWeightStages<FP4, NT, true> : kWeightStages<FP4, NT, false>));
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

// A tiled tensor map of `rank` dims (innermost first; strides in bytes for dims 1..rank-1);
// out-of-range elements read as zeros.
int encode_map(CUtensorMap *map, CUtensorMapDataType type, int rank, const void *base, const cuuint64_t *dims,
               const cuuint64_t *strides, const cuuint32_t *box, CUtensorMapSwizzle swizzle, const char *what,
               qs_err *err)
{
    PFN_cuTensorMapEncodeTiled_v12000 encode = tensor_map_encoder(err);
    if (!encode)
        return -1;
    const cuuint32_t unit[3] = {1, 1, 1};
    const CUresult r = encode(map, type, (cuuint32_t)rank, const_cast<void *>(base), dims, strides, box, unit,
                              CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                              CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS)
        return qs_errf(err, "marlin: cuTensorMapEncodeTiled failed (%d) for the %s (%llu x %llu)", (int)r, what,
                       (unsigned long long)dims[0], (unsigned long long)dims[1]);
    return 0;
}

// A (chunk bytes, steps, strips) view of per-strip data where each strip holds `steps` chunks
// back to back and strips follow each other: one box is one chunk of kStrips strips, laid out in
// shared memory strip after strip.
int strip_map(CUtensorMap *map, const void *base, int chunk_bytes, int64_t steps, int64_t strips, const char *what,
              qs_err *err)
{
    const cuuint64_t dims[3] = {(cuuint64_t)chunk_bytes / 8, (cuuint64_t)steps, (cuuint64_t)strips};
    const cuuint64_t strides[2] = {(cuuint64_t)chunk_bytes, (cuuint64_t)chunk_bytes * steps};
    const cuuint32_t box[3] = {(cuuint32_t)chunk_bytes / 8, 1, kStrips};
    return encode_map(map, CU_TENSOR_MAP_DATA_TYPE_UINT64, 3, base, dims, strides, box, CU_TENSOR_MAP_SWIZZLE_NONE,
                      what, err);
}

// The activations (m rows of k BF16, row stride xs): one box is 64 k of `rows` rows (rows past m
// and k past k read as zeros), each 128-byte row swizzled (rewrite_stage undoes it).
int activation_map(CUtensorMap *map, const __nv_bfloat16 *x, int64_t m, int64_t k, int64_t xs, int rows, qs_err *err)
{
    const cuuint64_t dims[2] = {(cuuint64_t)k, (cuuint64_t)m};
    const cuuint64_t strides[1] = {(cuuint64_t)xs * 2};
    const cuuint32_t box[2] = {64, (cuuint32_t)rows};
    return encode_map(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, x, dims, strides, box, CU_TENSOR_MAP_SWIZZLE_128B,
                      "activations", err);
}

struct Launch {
    const Layer &l;
    const Params &p;
    unsigned ctas;
    const Runtime &rt;
    cudaStream_t s;
    const __nv_bfloat16 *x;
    int64_t xs;
    bool xp; // x is the permuted copy (k_pad wide)
    qs_err *err;
    template <bool FP4, int NT> int operator()()
    {
        CUtensorMap weight_map, scale_map, x_map;
        if (strip_map(&weight_map, l.w, kStripStageBytes<FP4>, l.k_pad / kStageK, p.strips, "packed weights", err))
            return -1;
        if (!FP4)
            scale_map = weight_map; // an FP8 kernel never reads it
        else if (strip_map(&scale_map, l.sc, kFp4ScaleStepBytes, p.ksteps, p.strips, "scale codes", err))
            return -1;
        if (activation_map(&x_map, x, p.M, xp ? l.k_pad : l.k, xs, p.x_rows, err))
            return -1;
        return xp ? run<FP4, NT, true>(weight_map, scale_map, x_map) : run<FP4, NT, false>(weight_map, scale_map, x_map);
    }
    template <bool FP4, int NT, bool XP>
    int run(const CUtensorMap &weight_map, const CUtensorMap &scale_map, const CUtensorMap &x_map)
    {
        const size_t smem = (size_t)kFixedSmem<NT, XP> + (size_t)p.ring * kWeightStageBytes<FP4>;
        if (ctas_per_sm((const void *)marlin_stream_kernel<FP4, NT, XP>, kThreads, kSmemBytes - kOutTileBytes<NT>, err) < 0)
            return -1;
        return launch_kernel(marlin_stream_kernel<FP4, NT, XP>, dim3(ctas), kThreads, smem, rt.pdl, s, p, err,
                             weight_map, scale_map, x_map);
    }
};

struct StreamPlan {
    int nt, ring;
    int x_rows;                       // token rows per activation copy: M rounded up to 8, at most nt
    bool permuted;                    // x copied into the packer's k order first (no rewrite)
    int64_t ctas, groups, max_shares; // max_shares: the most CTAs one group is split between
};

// Stages of work per SM (128 rows x 128 k each): 4096x4096 8, 6144x4096 12, 4096x14336 27,
// 28672x4096 54 for Llama-3.1-8B on the H200.
int64_t stages_per_sm(const Layer &l, int sms)
{
    const qs_marlin_shape shape = {l.fp4, l.block, l.n, l.k, l.n_pad, l.k_pad};
    static_assert(kStrips == 8 && kStageK == QS_MARLIN_STAGE_K, "marlin_plan.h counts stages of 128 rows x 128 k");
    return qs_marlin_stages_per_sm(&shape, sms);
}

// Steps of 9-16 tokens the stream kernel takes only with x already in the packed order: NVFP4
// layers of 40+ stages per SM, where the rewrite-free path without a permute kernel beat the
// small-M kernel (session 17 call 1: 28672x4096 at 9 / 12 / 16 tokens 24.4 / 24.7 / 25.3 ->
// 23.7 / 23.8 / 23.9 us). 4096x14336 (27) did not gain (14.0 -> 14.4 at 9), nor did FP8's large
// layers, which the stream kernel takes at 9-16 tokens in any order (32.6 us either way).
bool ordered_small_step(const Layer &l, int64_t m, int sms)
{
    return l.fp4 && m >= 9 && m <= 16 && stages_per_sm(l, sms) >= 40;
}

// CTAs for `total` stages of work: even_share_ctas (marlin_stream_plan.h). Measured (session 19,
// calls 4-5): 128 CTAs on every Llama-3.1-8B layer, 8 / 12 / 28 / 56 stages each, against 132 of
// 7-8 / 11-12 / 27-28 / 54-55: FP8 per decoder layer 68.3 / 72.0 / 83.7 -> 67.4 / 69.8 / 80.7 us at
// 16 / 32 / 64 tokens, NVFP4 64.1 -> 62.8 at 48; 120, 124, 126 or 130 CTAs were no better.
// QSERVE_MARLIN_STREAM_CTAS=N: N (for measurements).
int64_t stream_ctas(int64_t total, int sms)
{
    static const int64_t forced = knob("QSERVE_MARLIN_STREAM_CTAS", 0);
    if (forced > 0)
        return std::min<int64_t>(std::min<int64_t>(forced, sms), total);
    return even_share_ctas(total, sms);
}

StreamPlan plan_stream(const Layer &l, int64_t m, int sms, bool ordered = false)
{
    StreamPlan g;
    // The token tile: M rounded up to 8 (from 16). Tensor-core work and the activations' shared-memory
    // traffic grow with it: 48-token tiles for 33-48 tokens instead of 64 took 28672x4096 NVFP4
    // 34.5 -> 30.7 us, 4096x4096 FP8 12.2 -> 11.1 (session 15 call 5); the 56-token tile for 49-56
    // tokens took a Llama-3.1-8B decoder layer at 56 tokens from FP8 92.0 to 89.0 us and NVFP4 83.9
    // to 78.2 (session 16 call 1). QSERVE_MARLIN_STREAM_TILES=16: tiles of 16, 32 and 64 tokens only
    // (for measurements).
    static const bool coarse = knob("QSERVE_MARLIN_STREAM_TILES", 8) == 16;
    const int rounded = (int)std::max<int64_t>(16, (m + 7) / 8 * 8);
    g.nt = coarse ? (m <= 16 ? 16 : m <= 32 ? 32 : 64) : rounded;
    // Each activation copy brings M rounded up to 8 rows (the 128-byte swizzle's period), not the
    // whole tile: a box whose rows past M read as zeros was slow — 28672x4096 at 33 tokens FP8
    // 46.7 -> 38.6 us, NVFP4 38.6 -> 34.1 with the rewrite-free path (session 15 call 1).
    g.x_rows = std::min(g.nt, (int)(m + 7) / 8 * 8);
    g.groups = (l.n_pad / 16 + kStrips - 1) / kStrips;
    const int64_t nst = l.k_pad / kStageK, total = g.groups * nst;
    g.ctas = stream_ctas(total, sms);
    g.max_shares = max_shares(nst, total, g.ctas);
    // The rewrite-free path (permute_activations, then the tensor copy straight into the
    // activation ring) where it measured faster, the permute kernel included (session 15 call 2,
    // with trimmed activation copies): layers of 20+ stages per SM from 33 tokens (28672x4096 FP8
    // 46.8 / 40.3 / 46.3 -> 38.7 / 38.9 / 41.1 us at 33 / 40 / 64 tokens, NVFP4 38.9 -> 34.3 at
    // 33-40; 4096x14336 FP8 25.0 -> 24.1-24.7, NVFP4 23.5 -> 21.5 at 33-40), and NVFP4 ones from 17
    // (28672x4096 28.6 -> 27.6). The permute kernel costs ~2.7-3 us a call (session 16 call 3): more
    // than the path saves on smaller layers and on FP8 steps of 17-32 tokens (where the kernel
    // itself is 7-13% faster per stage without the rewrite). Where the op that produces x writes it
    // in the packed order (ordered: input_order), the path costs nothing extra and takes every step
    // from 17 tokens: without the permute kernel it was never slower there, and faster from 24 on
    // every layer (session 16 call 3: 28672x4096 NVFP4 27.4 -> 24.7 us at 24 tokens, FP8 39.5 ->
    // 35.6 at 64; 4096x4096 FP8 12.5 -> 11.1 at 64), and ordered_small_step's steps below 17.
    // QSERVE_MARLIN_STREAM_XP=0|1: never / always.
    static const int forced = knob("QSERVE_MARLIN_STREAM_XP", -1);
    g.permuted = forced >= 0 ? forced != 0
                 : ordered   ? m > 16 || ordered_small_step(l, m, sms)
                             : stages_per_sm(l, sms) >= 20 && (m > 32 || (l.fp4 && m > 16));
    g.ring = with_tile(l.fp4, g.nt, Depth{g.permuted});
    return g;
}

} // namespace

bool stream_fits(const __nv_bfloat16 *x, const __nv_bfloat16 *y) { return (((uintptr_t)x | (uintptr_t)y) & 15) == 0; }

namespace {
// A plan's split-group workspace: max_shares slots per group, each the consumers' accumulators,
// and one count per group.
void workspace_of(const StreamPlan &g, size_t *floats, size_t *counters)
{
    *floats = (size_t)g.max_shares * g.groups * kConsumers * (g.nt / 2);
    *counters = (size_t)g.groups;
}
} // namespace

void stream_workspace(const Layer &l, int64_t m, int sms, size_t *floats, size_t *counters, size_t *permuted)
{
    const StreamPlan g = plan_stream(l, m, sms);
    workspace_of(g, floats, counters);
    *permuted = g.permuted ? (size_t)m * l.k_pad : 0;
}

bool stream_permutes(const Layer &l, int64_t m, int sms, bool ordered) { return plan_stream(l, m, sms, ordered).permuted; }

int stream(const Layer &l, Params &p, const __nv_bfloat16 *x, int64_t xs, const Runtime &rt, cudaStream_t s,
           qs_err *err, bool ordered)
{
    const StreamPlan g = plan_stream(l, p.M, rt.sms, ordered); // (ordered: gemm checked input_order)
    size_t floats, counters;
    workspace_of(g, &floats, &counters);
    if (g.max_shares > 1 && split_workspace(floats, counters, p, err))
        return -1;
    p.ring = g.ring;
    p.x_rows = g.x_rows;
    p.splits = (int)g.max_shares; // partial slots per group
    if (g.permuted && !ordered) {
        __nv_bfloat16 *xp = permuted_activations((size_t)p.M * l.k_pad, err);
        if (!xp || permute_activations(l, x, xs, p.M, xp, s, err))
            return -1;
        x = xp;
        xs = l.k_pad;
    }
    return with_tile(l.fp4, g.nt, Launch{l, p, (unsigned)g.ctas, rt, s, x, xs, g.permuted, err});
}

} // namespace qs_marlin
