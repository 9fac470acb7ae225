// attention_prefill.cu — tensor-core flash attention over the paged KV cache for the prefill runs
// of a batch (see attention_prefill.h; dispatched by qs_cuda_attention in attention_cuda.cu).
//
// Tiling: one CTA per (query head, 64 consecutive batch tokens), four warps of 16 query rows. The
// tiles are fixed slices of the batch, so no host-side sequence boundaries are needed: a tile can
// straddle sequences, and then the CTA makes one pass per segment (maximal row range of one
// sequence), the rows of other segments masked out. K/V tiles of 64 keys (four cache blocks of
// 16, fetched through the segment's block table) stream through two shared-memory stages with
// cp.async while the previous tile is multiplied: S = Q K^T and O += P V on mma.sync m16n8k16
// BF16 with FP32 accumulation, fragments loaded with ldmatrix from XOR-swizzled rows (conflict
// free), softmax online in FP32 in the exp2 domain. One query head per CTA rather than a kv head
// with its GQA group: with 64 rows per CTA either way each K/V byte read serves as many MMAs, and
// the row <-> (token, head) map stays trivial for every group size; grouping would only pay for
// short runs, which stay with the CUDA-core kernel. Causality and the sliding window are per-row
// key bounds [lo, hi]; whole tiles outside a warp's bounds are skipped, and only tiles that cut
// through some row's bounds pay for the element mask. Tiles are launched longest-first.
#include <climits>
#include <cuda_bf16.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attention_prefill.h"
#include "cuda_check.h"
#include "kv_layout.cuh"
#include "lab_knob.h"
#include "cuda_stream.h"
#include "scratch.h"

extern "C" {
#include "core/kv_layout.h"
}

namespace {

typedef __nv_bfloat16 bf16;

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kBlockM = 16 * kWarps; // query rows (consecutive batch tokens) per CTA
constexpr int kBlockN = 64;          // keys per K/V tile
constexpr int kMinRun = QS_ATTN_PREFILL_MIN_RUN;
static_assert(kBlockN % QS_KV_BLOCK_SIZE == 0, "a key tile covers whole cache blocks");
static_assert(kBlockM == kBlockN, "Q is staged through one K tile buffer");

// Two stages of a K tile and a V tile.
template <int D> constexpr size_t smem_bytes() { return (size_t)2 * 2 * kBlockN * D * sizeof(bf16); }

__device__ __forceinline__ uint32_t smem_u32(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

// 16 bytes global -> shared without touching registers; src-size 0 zero-fills (keys outside the
// segment's range, rows past the batch) and reads nothing.
__device__ __forceinline__ void cp_async16(uint32_t dst, const void *src, bool valid)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0)
                 : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void cp_async_wait()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

__device__ __forceinline__ void ldsm_x4(uint32_t addr, uint32_t (&r)[4])
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr)
                 : "memory");
}
__device__ __forceinline__ void ldsm_x4_trans(uint32_t addr, uint32_t (&r)[4])
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr)
                 : "memory");
}

// d += a (16x16, row) * b (16x8, col), BF16 in, FP32 accumulate.
__device__ __forceinline__ void mma_bf16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1)
{
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ float exp2_approx(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x)); // -inf -> +0
    return y;
}

__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi)
{
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi); // lo in the low half: the lower column
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    return u;
}

// Element offset of (row, 16-byte chunk) in a [rows][D] tile: the chunk index is XORed with
// row % 8, so the 8 rows one ldmatrix phase reads (same logical chunk) hit 8 different bank
// groups even though every row starts on the same bank (D * 2 bytes is a multiple of 128).
template <int D> __device__ __forceinline__ int swz(int row, int chunk)
{
    return row * D + ((chunk ^ (row & 7)) << 3);
}

// One key tile [k0, k0 + kBlockN) of K and V into a stage; keys outside [klo, khi] are zeros
// (their block-table entries are never read, so a table shorter than the tile is fine).
template <int D>
__device__ __forceinline__ void load_kv(uint32_t sk, uint32_t sv, int k0, int klo, int khi, const int32_t *table,
                                        const bf16 *kc, const bf16 *vc, int n_kv, int kvh, int tid)
{
    constexpr int kChunks = D / 8;
#pragma unroll
    for (int j = 0; j < kBlockN * kChunks / kThreads; j++) {
        int i = tid + j * kThreads;
        int r = i / kChunks, c = i % kChunks, p = k0 + r;
        bool valid = p >= klo && p <= khi;
        int64_t off = 0;
        if (valid)
            off = qs_kv_pos_row(table, p, n_kv, kvh, D) + c * 8;
        uint32_t dst = (uint32_t)swz<D>(r, c) * 2;
        cp_async16(sk + dst, kc + off, valid);
        cp_async16(sv + dst, vc + off, valid);
    }
}

template <int D>
__global__ void __launch_bounds__(kThreads)
    prefill_kernel(bf16 *__restrict__ out, const bf16 *__restrict__ q, const bf16 *__restrict__ kc,
                   const bf16 *__restrict__ vc, const int32_t *__restrict__ tok_seq, const int32_t *__restrict__ tok_pos,
                   const int32_t *__restrict__ is_prefill, const int32_t *__restrict__ block_tables, int max_blocks,
                   int64_t n_tokens, int n_heads, int n_kv, float scale_log2, int window, qs_act_order order)
{
    constexpr int kChunks = D / 8;
    constexpr int kTile = kBlockN * D; // elements of one stage of K (or V)
    extern __shared__ __align__(128) unsigned char smem_raw[];
    __shared__ int row_seq[kBlockM], row_lo[kBlockM], row_hi[kBlockM];
    __shared__ int seg_begin[kBlockM], seg_end[kBlockM], seg_lo[kBlockM], seg_hi[kBlockM];
    __shared__ int n_seg;

    const int h = blockIdx.x;
    const int64_t t0 = (int64_t)(gridDim.y - 1 - blockIdx.y) * kBlockM; // last tiles see most keys: start them first
    const int kvh = h / (n_heads / n_kv);
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const uint32_t sk_base = smem_u32(smem_raw), sv_base = sk_base + 2 * kTile * (uint32_t)sizeof(bf16);

    // Rows of this tile: their sequence (-1: not ours) and key bounds [lo, hi].
    if (tid < kBlockM) {
        int64_t t = t0 + tid;
        int seq = -1, lo = 0, hi = -1;
        if (t < n_tokens && (!is_prefill || is_prefill[t])) {
            seq = tok_seq[t];
            hi = tok_pos[t];
            lo = window > 0 ? (hi + 1 > window ? hi + 1 - window : 0) : window < 0 ? hi / -window * -window : 0;
        }
        row_seq[tid] = seq;
        row_lo[tid] = lo;
        row_hi[tid] = hi;
    }
    __syncthreads();
    if (tid == 0) {
        int n = 0;
        for (int r = 0; r < kBlockM; r++) {
            if (row_seq[r] < 0)
                continue;
            if (n > 0 && seg_end[n - 1] == r && row_seq[r - 1] == row_seq[r]) {
                seg_end[n - 1] = r + 1;
                seg_lo[n - 1] = min(seg_lo[n - 1], row_lo[r]);
                seg_hi[n - 1] = max(seg_hi[n - 1], row_hi[r]);
            } else {
                seg_begin[n] = r;
                seg_end[n] = r + 1;
                seg_lo[n] = row_lo[r];
                seg_hi[n] = row_hi[r];
                n++;
            }
        }
        n_seg = n;
    }
    __syncthreads();
    if (n_seg == 0)
        return;

    // Q passes through the first K stage once and then stays in registers as A fragments.
    for (int i = tid; i < kBlockM * kChunks; i += kThreads) {
        int r = i / kChunks, c = i % kChunks;
        bool valid = row_seq[r] >= 0;
        const bf16 *src = valid ? q + ((t0 + r) * n_heads + h) * (int64_t)D + c * 8 : q;
        cp_async16(sk_base + (uint32_t)swz<D>(r, c) * 2, src, valid);
    }
    cp_async_commit();
    cp_async_wait<0>();
    __syncthreads();
    uint32_t qf[D / 16][4];
#pragma unroll
    for (int kk = 0; kk < D / 16; kk++)
        ldsm_x4(sk_base + (uint32_t)swz<D>(warp * 16 + (lane & 7) + ((lane >> 3) & 1) * 8, kk * 2 + (lane >> 4)) * 2,
                qf[kk]);
    __syncthreads();

    // Accumulator fragments: this thread holds rows r0 (c[0], c[1]) and r1 = r0 + 8 (c[2], c[3]),
    // columns 2 * tig + {0, 1} of each 8-wide n tile.
    const int g = lane >> 2, tig = lane & 3;
    const int r0 = warp * 16 + g, r1 = r0 + 8;
    float o[D / 8][4];
#pragma unroll
    for (int dt = 0; dt < D / 8; dt++)
        o[dt][0] = o[dt][1] = o[dt][2] = o[dt][3] = 0.f;
    float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.f, l1 = 0.f;

    for (int si = 0; si < n_seg; si++) {
        const int sb = seg_begin[si], se = seg_end[si], klo = seg_lo[si], khi = seg_hi[si];
        const int32_t *table = block_tables + (int64_t)row_seq[sb] * max_blocks;
        // Rows outside this segment get an empty range, so every key is masked for them and
        // their running state passes through unchanged (factor 1, or 0 on an empty state).
        const bool in0 = r0 >= sb && r0 < se, in1 = r1 >= sb && r1 < se;
        const int lo0 = in0 ? row_lo[r0] : INT_MAX, hi0 = in0 ? row_hi[r0] : -1;
        const int lo1 = in1 ? row_lo[r1] : INT_MAX, hi1 = in1 ? row_hi[r1] : -1;
        // The warp's union of bounds (tiles outside it are skipped) and intersection (tiles
        // inside it need no element mask, when all 16 rows are in the segment).
        int w_lo = min(lo0, lo1), w_hi = max(hi0, hi1), w_lo_max = max(lo0, lo1), w_hi_min = min(hi0, hi1);
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) {
            w_lo = min(w_lo, __shfl_xor_sync(0xffffffffu, w_lo, off));
            w_hi = max(w_hi, __shfl_xor_sync(0xffffffffu, w_hi, off));
            w_lo_max = max(w_lo_max, __shfl_xor_sync(0xffffffffu, w_lo_max, off));
            w_hi_min = min(w_hi_min, __shfl_xor_sync(0xffffffffu, w_hi_min, off));
        }
        const bool all_in = warp * 16 >= sb && warp * 16 + 16 <= se;

        const int kt0 = klo / kBlockN, kt1 = khi / kBlockN;
        load_kv<D>(sk_base, sv_base, kt0 * kBlockN, klo, khi, table, kc, vc, n_kv, kvh, tid);
        cp_async_commit();
        for (int kt = kt0; kt <= kt1; kt++) {
            const int st = (kt - kt0) & 1;
            if (kt < kt1) // prefetch the next tile into the other stage while this one is used
                load_kv<D>(sk_base + (st ^ 1) * kTile * 2, sv_base + (st ^ 1) * kTile * 2, (kt + 1) * kBlockN, klo,
                           khi, table, kc, vc, n_kv, kvh, tid);
            cp_async_commit(); // possibly empty, so "all but the newest group" is always this tile
            cp_async_wait<1>();
            __syncthreads();
            const int k0 = kt * kBlockN;
            if (k0 <= w_hi && k0 + kBlockN - 1 >= w_lo) {
                const bool mask = !(all_in && k0 >= w_lo_max && k0 + kBlockN - 1 <= w_hi_min);
                const uint32_t kb = sk_base + st * kTile * 2, vb = sv_base + st * kTile * 2;
                // S = Q K^T: K rows are keys, so plain ldmatrix of K gives the col-major B operand.
                float s[kBlockN / 8][4];
#pragma unroll
                for (int nt = 0; nt < kBlockN / 8; nt++)
                    s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.f;
#pragma unroll
                for (int kk = 0; kk < D / 16; kk++) {
#pragma unroll
                    for (int nn = 0; nn < kBlockN / 16; nn++) {
                        uint32_t b[4];
                        ldsm_x4(kb + (uint32_t)swz<D>(nn * 16 + (lane & 7) + (lane >> 4) * 8, kk * 2 + ((lane >> 3) & 1)) *
                                         2,
                                b);
                        mma_bf16(s[2 * nn], qf[kk], b[0], b[1]);
                        mma_bf16(s[2 * nn + 1], qf[kk], b[2], b[3]);
                    }
                }
                // Online softmax in the exp2 domain (scale_log2 = scale * log2 e).
                float mx0 = -INFINITY, mx1 = -INFINITY;
#pragma unroll
                for (int nt = 0; nt < kBlockN / 8; nt++) {
#pragma unroll
                    for (int e = 0; e < 2; e++) {
                        float x0 = s[nt][e] * scale_log2, x1 = s[nt][2 + e] * scale_log2;
                        if (mask) {
                            int key = k0 + nt * 8 + 2 * tig + e;
                            if (key < lo0 || key > hi0)
                                x0 = -INFINITY;
                            if (key < lo1 || key > hi1)
                                x1 = -INFINITY;
                        }
                        s[nt][e] = x0;
                        s[nt][2 + e] = x1;
                        mx0 = fmaxf(mx0, x0);
                        mx1 = fmaxf(mx1, x1);
                    }
                }
                // A row lives in the 4 threads of a quad.
                mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 1));
                mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 2));
                mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 1));
                mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 2));
                const float mn0 = fmaxf(m0, mx0), mn1 = fmaxf(m1, mx1);
                // A row with nothing seen yet subtracts 0 instead of -inf (no inf - inf).
                const float mu0 = mn0 == -INFINITY ? 0.f : mn0, mu1 = mn1 == -INFINITY ? 0.f : mn1;
                const float c0 = exp2_approx(m0 - mu0), c1 = exp2_approx(m1 - mu1);
                m0 = mn0;
                m1 = mn1;
                l0 *= c0;
                l1 *= c1;
#pragma unroll
                for (int dt = 0; dt < D / 8; dt++) {
                    o[dt][0] *= c0;
                    o[dt][1] *= c0;
                    o[dt][2] *= c1;
                    o[dt][3] *= c1;
                }
                // P as BF16 A fragments: the C layout of two adjacent 8-key n tiles is the A
                // layout of one 16-key k step.
                uint32_t pa[kBlockN / 16][4];
#pragma unroll
                for (int nn = 0; nn < kBlockN / 16; nn++) {
                    float p[2][4];
#pragma unroll
                    for (int half = 0; half < 2; half++) {
                        p[half][0] = exp2_approx(s[2 * nn + half][0] - mu0);
                        p[half][1] = exp2_approx(s[2 * nn + half][1] - mu0);
                        p[half][2] = exp2_approx(s[2 * nn + half][2] - mu1);
                        p[half][3] = exp2_approx(s[2 * nn + half][3] - mu1);
                        l0 += p[half][0] + p[half][1];
                        l1 += p[half][2] + p[half][3];
                    }
                    pa[nn][0] = pack_bf16(p[0][0], p[0][1]);
                    pa[nn][1] = pack_bf16(p[0][2], p[0][3]);
                    pa[nn][2] = pack_bf16(p[1][0], p[1][1]);
                    pa[nn][3] = pack_bf16(p[1][2], p[1][3]);
                }
                // O += P V: V rows are keys (the k dimension), so ldmatrix.trans gives B.
#pragma unroll
                for (int kk = 0; kk < kBlockN / 16; kk++) {
#pragma unroll
                    for (int dd = 0; dd < D / 16; dd++) {
                        uint32_t b[4];
                        ldsm_x4_trans(
                            vb + (uint32_t)swz<D>(kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8, dd * 2 + (lane >> 4)) * 2,
                            b);
                        mma_bf16(o[2 * dd], pa[kk], b[0], b[1]);
                        mma_bf16(o[2 * dd + 1], pa[kk], b[2], b[3]);
                    }
                }
            }
            __syncthreads(); // this stage is refilled by the next iteration's prefetch
        }
    }

    // l was summed per thread; the row's total is over its quad.
    l0 += __shfl_xor_sync(0xffffffffu, l0, 1);
    l0 += __shfl_xor_sync(0xffffffffu, l0, 2);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 1);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 2);
    // A row of ours always saw its own position, so l >= 1.
    // Each thread stores pairs (d even, d + 1), which the activation orders keep together.
    if (row_seq[r0] >= 0) {
        bf16 *orow = out + (t0 + r0) * n_heads * (int64_t)D;
        const float inv = 1.f / l0;
#pragma unroll
        for (int dt = 0; dt < D / 8; dt++)
            *reinterpret_cast<__nv_bfloat162 *>(orow + qs_act_position(order, (int64_t)h * D + dt * 8 + 2 * tig)) =
                __floats2bfloat162_rn(o[dt][0] * inv, o[dt][1] * inv);
    }
    if (row_seq[r1] >= 0) {
        bf16 *orow = out + (t0 + r1) * n_heads * (int64_t)D;
        const float inv = 1.f / l1;
#pragma unroll
        for (int dt = 0; dt < D / 8; dt++)
            *reinterpret_cast<__nv_bfloat162 *>(orow + qs_act_position(order, (int64_t)h * D + dt * 8 + 2 * tig)) =
                __floats2bfloat162_rn(o[dt][2] * inv, o[dt][3] * inv);
    }
}

// is_prefill[t] = token t sits in a run of >= kMinRun consecutive batch tokens of one sequence
// (looking at most kMinRun - 1 tokens either way); rest_pos[t] = 0 for those, else tok_pos[t].
__global__ void mark_kernel(int32_t *is_prefill, int32_t *rest_pos, const int32_t *tok_seq, const int32_t *tok_pos,
                            int64_t n_tokens)
{
    for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < n_tokens; t += (int64_t)gridDim.x * blockDim.x) {
        int32_t s = tok_seq[t];
        int run = 1;
        for (int64_t u = t - 1; u >= 0 && run < kMinRun && tok_seq[u] == s; u--)
            run++;
        for (int64_t u = t + 1; u < n_tokens && run < kMinRun && tok_seq[u] == s; u++)
            run++;
        bool pre = run >= kMinRun;
        is_prefill[t] = pre;
        rest_pos[t] = pre ? 0 : tok_pos[t];
    }
}

template <int D>
int launch(void *out, const void *q, const void *k_cache, const void *v_cache, const qs_attn_batch *b,
           const qs_attn_prefill_plan *plan, int n_heads, int n_kv_heads, float scale, qs_act_order order, qs_err *err)
{
    constexpr size_t smem = smem_bytes<D>();
    static bool smem_set = false; // the opt-in above 48 KB, once per instantiation
    if (!smem_set) {
        QS_CUDA_TRY(cudaFuncSetAttribute(prefill_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem),
                    err);
        smem_set = true;
    }
    int64_t tiles = (b->n_tokens + kBlockM - 1) / kBlockM;
    dim3 grid((unsigned)n_heads, (unsigned)tiles);
    prefill_kernel<D><<<grid, kThreads, smem, qs_cuda_stream()>>>(
        (bf16 *)out, (const bf16 *)q, (const bf16 *)k_cache, (const bf16 *)v_cache, b->tok_seq, b->tok_pos,
        plan->is_prefill, b->block_tables, b->max_blocks, b->n_tokens, n_heads, n_kv_heads,
        scale * 1.4426950408889634f, qs_cuda_attn_window(b), order);
    QS_LAUNCH_CHECK(err);
    return 0;
}

bool aligned16(const void *p) { return ((uintptr_t)p & 15) == 0; }

} // namespace

extern "C" bool qs_cuda_attn_prefill_wanted(const void *out, const void *q, const void *k_cache, const void *v_cache,
                                            const qs_attn_batch *b, int n_heads, int n_kv_heads, int head_dim)
{
    if (qs_lab_knob("QSERVE_ATTN_PREFILL", 1) == 0) // a lab switch (dev builds only: lab_knob.h)
        return false;
    if (head_dim != 64 && head_dim != 128)
        return false;
    if (n_kv_heads <= 0 || n_heads % n_kv_heads != 0 || n_heads > 65535)
        return false;
    if (!aligned16(q) || !aligned16(k_cache) || !aligned16(v_cache) || !aligned16(out))
        return false;
    // The longest run a batch can hold: its tokens minus one for every other sequence.
    int64_t others = b->n_seqs > 1 ? b->n_seqs - 1 : 0;
    if (b->n_tokens - others < kMinRun)
        return false;
    return (b->n_tokens + kBlockM - 1) / kBlockM <= 65535;
}

extern "C" int qs_cuda_attn_prefill_plan(const qs_attn_batch *b, qs_attn_prefill_plan *plan, qs_err *err)
{
    plan->is_prefill = nullptr;
    plan->rest_pos = nullptr;
    if (b->n_seqs <= 1 && b->n_tokens >= kMinRun) // one sequence: all of it is one long run
        return 0;
    if (b->n_tokens == 0)
        return 0;
    void *buf;
    if (qs_scratch_get(QS_SCRATCH_ATTN_PREFILL, sizeof(int32_t) * 2 * (size_t)b->n_tokens, &buf, err))
        return -1;
    int32_t *flags = (int32_t *)buf, *rest = flags + b->n_tokens;
    int64_t grid = (b->n_tokens + 255) / 256;
    mark_kernel<<<(unsigned)(grid > 65535 ? 65535 : grid), 256, 0, qs_cuda_stream()>>>(flags, rest, b->tok_seq,
                                                                                      b->tok_pos, b->n_tokens);
    QS_LAUNCH_CHECK(err);
    plan->is_prefill = flags;
    plan->rest_pos = rest;
    return 0;
}

extern "C" int qs_cuda_attn_prefill_run(void *out, const void *q, const void *k_cache, const void *v_cache,
                                        const qs_attn_batch *b, const qs_attn_prefill_plan *plan, int n_heads,
                                        int n_kv_heads, int head_dim, float scale, qs_act_order order,
                                        qs_err *err)
{
    if (b->n_tokens == 0)
        return 0;
    if (n_kv_heads <= 0 || n_heads % n_kv_heads != 0)
        return qs_errf(err, "prefill attention: %d query heads do not group over %d kv heads", n_heads, n_kv_heads);
    if (qs_act_order_check(order, (int64_t)n_heads * head_dim, "prefill attention", err))
        return -1;
    // cp.async moves 16-byte chunks: rows of 64 or 128 BF16 keep them aligned if the bases are.
    if (!aligned16(q) || !aligned16(k_cache) || !aligned16(v_cache) || !aligned16(out))
        return qs_errf(err, "prefill attention: q, out and the KV cache must be 16-byte aligned");
    if ((b->n_tokens + kBlockM - 1) / kBlockM > 65535 || n_heads > 65535)
        return qs_errf(err, "prefill attention: %lld tokens x %d heads is too large a grid", (long long)b->n_tokens,
                       n_heads);
    switch (head_dim) {
    case 64:
        return launch<64>(out, q, k_cache, v_cache, b, plan, n_heads, n_kv_heads, scale, order, err);
    case 128:
        return launch<128>(out, q, k_cache, v_cache, b, plan, n_heads, n_kv_heads, scale, order, err);
    default:
        return qs_errf(err, "prefill attention supports head_dim 64 and 128, not %d", head_dim);
    }
}
