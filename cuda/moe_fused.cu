// moe_fused.cu — the `marlin` MoE kernel: FP8 (per-tensor, per-channel or 128x128-block scales)
// and NVFP4 experts run weight-only (BF16 activations, FP32 accumulation) in four launches per
// layer over every expert at once, routed on the device, so an MoE layer never waits for the host
// and a decode step with MoE layers is captured in a graph like a dense one.
//   1. align    one CTA counts the (token, slot) pairs per expert, lists the experts that got any
//               (ascending id) and sorts the pairs by expert.
//   2. gate_up  grid (tiles of the intermediate columns, active-expert slots): a CTA takes one expert
//               and streams the gate and up rows of its columns once per group of up to TOK of the
//               expert's tokens; SwiGLU is applied in the epilogue, h[pair] = silu(g) * u (BF16).
//   3. down     the same over the hidden rows of W2: ys[pair] = routing weight * (W2 h[pair]) (FP32).
//   4. combine  y[t] = sum over t's slots in slot order, in FP32, one rounding to BF16.
// Only the active experts' weights are read; a pair's value never depends on which other pairs
// share the batch (fixed per-lane k order, fixed warp reduction, fixed slot order).
// The expert weights stay in the checkpoint's row-major layout ([E][2*inter][hidden] for gate then up,
// [E][hidden][inter] for down): each lane reads 16-byte chunks along k, consecutive lanes consecutive
// chunks. Per-tensor scales are expanded to per-row scales at prepare time, so FP8 sees two scale
// grids only: one scale per row (bk = k) or one per 128x128 block.
#include <stdio.h>
#include <string.h>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "cuda_check.h"
#include "qs_cuda_kernels.h"
#include "scratch.h"
#include "weights_upload.h"

#include "core/scheme.h" // qs_scale_get

namespace {

typedef __nv_bfloat16 bf16;

constexpr int kWarps = 8;          // warps per CTA
constexpr int kThreads = kWarps * 32;
constexpr int kChunksPerPass = 4;  // 16-byte weight chunks a lane loads per row before computing
constexpr int kAlignThreads = 1024;

// One projection of every expert (gate and up together count as two parts of one projection).
struct Proj {
    const uint8_t *w;     // FP8 [E][rows][k] or NVFP4 [E][rows][k/2]
    const float *scale;   // FP8: [E][parts][nbr][nbk]
    const uint8_t *sc4;   // NVFP4: E4M3 [E][rows][k/16]
    const float *gscale;  // NVFP4: [E][parts] global scale x 2^14 (the code decode's factor)
    int rows, k;          // per expert
    int part_rows;        // rows of one part (gate_up: inter; down: hidden)
    int parts;
    int bn, bk, nbr, nbk; // FP8 scale grid of one part
};

struct Meta {             // views into the align kernel's int32 buffer
    int32_t *base;
    int E, P;
    __device__ int n_active() const { return base[0]; }
    __device__ int active(int s) const { return base[1 + s]; }
    __device__ int offset(int e) const { return base[1 + E + e]; }
    __device__ int count(int e) const { return base[1 + 2 * E + e]; }
    __device__ int sorted(int i) const { return base[1 + 3 * E + i]; }
};

size_t meta_ints(int E, int64_t P) { return (size_t)(1 + 3 * E + P); }

// The align kernel's scan packs a count and an active flag into one int (count in the low 16
// bits), so one pass sorts at most this many pairs.
constexpr int64_t kMaxPairs = (1 << 15) - 1;

// ---- 1. align -------------------------------------------------------------------------------

// Pairs whose expert id is out of range (only a corrupt router could make one) are left out:
// combine reads them as zero.
__global__ __launch_bounds__(kAlignThreads) void align_kernel(const int32_t *ids, int P, int E, int32_t *meta)
{
    extern __shared__ int sm[];      // [E] counts, then [E] cursors
    int *cnt = sm, *cursor = sm + E;
    __shared__ int warp_sum[kAlignThreads / 32];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    for (int e = tid; e < E; e += blockDim.x)
        cnt[e] = 0;
    __syncthreads();
    for (int p = tid; p < P; p += blockDim.x) {
        int e = ids[p];
        if (e >= 0 && e < E)
            atomicAdd(&cnt[e], 1);
    }
    __syncthreads();
    // Exclusive scan over experts of (count | active << 16), kAlignThreads experts per round.
    int carry = 0;
    for (int base = 0; base < E; base += blockDim.x) {
        int e = base + tid;
        int c = e < E ? cnt[e] : 0;
        int v = c | ((c > 0) << 16), incl = v;
        for (int d = 1; d < 32; d <<= 1) {
            int o = __shfl_up_sync(0xffffffffu, incl, d);
            if (lane >= d)
                incl += o;
        }
        if (lane == 31)
            warp_sum[warp] = incl;
        __syncthreads();
        if (warp == 0) {
            int w = lane < (int)(blockDim.x >> 5) ? warp_sum[lane] : 0, wi = w;
            for (int d = 1; d < 32; d <<= 1) {
                int o = __shfl_up_sync(0xffffffffu, wi, d);
                if (lane >= d)
                    wi += o;
            }
            warp_sum[lane] = wi - w; // exclusive prefix of the warps
        }
        __syncthreads();
        int excl = carry + warp_sum[warp] + incl - v;
        if (e < E) {
            int off = excl & 0xffff, slot = excl >> 16;
            meta[1 + E + e] = off;
            meta[1 + 2 * E + e] = c;
            cursor[e] = off;
            if (c > 0)
                meta[1 + slot] = e;
        }
        __syncthreads();
        if (tid == blockDim.x - 1)
            warp_sum[0] = excl + v; // this round's total, read by every thread below
        __syncthreads();
        carry = warp_sum[0];
        __syncthreads();
    }
    if (tid == 0)
        meta[0] = carry >> 16;
    __syncthreads();
    for (int p = tid; p < P; p += blockDim.x) {
        int e = ids[p];
        if (e >= 0 && e < E)
            meta[1 + 3 * E + atomicAdd(&cursor[e], 1)] = p;
    }
}

// ---- the weight-streaming core -------------------------------------------------------------

__device__ __forceinline__ float bf16_lo(uint32_t u) { return __uint_as_float(u << 16); }
__device__ __forceinline__ float bf16_hi(uint32_t u) { return __uint_as_float(u & 0xffff0000u); }

__device__ __forceinline__ float2 fp8x2_to_float2(uint32_t v)
{
    __half2_raw h = __nv_cvt_fp8x2_to_halfraw2((__nv_fp8x2_storage_t)(v & 0xffffu), __NV_E4M3);
    return __half22float2(*reinterpret_cast<__half2 *>(&h));
}

// Two E2M1 codes of one byte as half2 holding value * 2^-14 (sign to bit 15, exponent and
// mantissa bits to bits 11..9: a half with the code's bits there is exactly that value).
__device__ __forceinline__ float2 e2m1x2_to_float2(uint32_t b)
{
    uint32_t lo = ((b & 0x8u) << 12) | ((b & 0x7u) << 9);
    uint32_t hi = ((b & 0x80u) << 8) | ((b & 0x70u) << 5);
    uint32_t u = lo | (hi << 16);
    return __half22float2(*reinterpret_cast<__half2 *>(&u));
}

__device__ __forceinline__ float e4m3_to_float(uint32_t b)
{
    __half_raw h = __nv_cvt_fp8_to_halfraw((__nv_fp8_storage_t)(b & 0xffu), __NV_E4M3);
    return __half2float(*reinterpret_cast<__half *>(&h));
}

__device__ __forceinline__ uint4 load_stream(const uint8_t *p)
{
    return __ldg(reinterpret_cast<const uint4 *>(p));
}

// acc[t] += s * (wf . xs[t][kk..kk+16)) for every staged token: 16 weights against 16 BF16 inputs.
template <int TOK>
__device__ __forceinline__ void dot16_tokens(const float (&wf)[16], float s, const bf16 *xs, int k, int kk,
                                             float (&acc)[TOK])
{
#pragma unroll
    for (int t = 0; t < TOK; t++) {
        const uint4 *xp = reinterpret_cast<const uint4 *>(xs + (int64_t)t * k + kk);
        uint4 x0 = xp[0], x1 = xp[1];
        const uint32_t xq[8] = {x0.x, x0.y, x0.z, x0.w, x1.x, x1.y, x1.z, x1.w};
        float d = 0.f;
#pragma unroll
        for (int q = 0; q < 8; q++) {
            d = fmaf(wf[2 * q], bf16_lo(xq[q]), d);
            d = fmaf(wf[2 * q + 1], bf16_hi(xq[q]), d);
        }
        acc[t] = fmaf(s, d, acc[t]);
    }
}

// acc[r][t] += row r of this warp's rows (expert e) . xs[t], t < TOK, over all k.
// rows[r] < 0: a row past the end (its acc stays 0). FP8 chunk = 16 codes, NVFP4 chunk = 32.
template <bool FP4, int TOK, int R>
__device__ __forceinline__ void stream_rows(const Proj &pj, int e, const int (&rows)[R], const bf16 *xs,
                                            float (&acc)[R][TOK])
{
    const int lane = threadIdx.x & 31;
    constexpr int per = FP4 ? 32 : 16; // elements per 16-byte chunk
    const int k = pj.k, nchunks = k / per;
    const int64_t row_bytes = FP4 ? k / 2 : k;
    for (int c0 = 0; c0 < nchunks; c0 += 32 * kChunksPerPass) {
        // The scales are loaded with the weights, before any math: loaded where they are used,
        // each was a dependent round trip to L2 per chunk (ncu: 20% of DRAM bandwidth at m = 1).
        uint4 wv[R][kChunksPerPass];
        uint32_t sv[R][kChunksPerPass]; // FP8: the float scale's bits; NVFP4: two E4M3 scales
#pragma unroll
        for (int r = 0; r < R; r++)
#pragma unroll
            for (int u = 0; u < kChunksPerPass; u++) {
                int c = c0 + u * 32 + lane;
                wv[r][u] = make_uint4(0, 0, 0, 0);
                sv[r][u] = 0;
                if (rows[r] >= 0 && c < nchunks) {
                    wv[r][u] = load_stream(pj.w + ((int64_t)e * pj.rows + rows[r]) * row_bytes + (int64_t)c * 16);
                    const int kk = c * per;
                    if (!FP4) {
                        const int part = rows[r] / pj.part_rows, rr = rows[r] - part * pj.part_rows;
                        sv[r][u] = __float_as_uint(__ldg(
                            pj.scale + (((int64_t)e * pj.parts + part) * pj.nbr + rr / pj.bn) * pj.nbk + kk / pj.bk));
                    } else {
                        sv[r][u] = __ldg(reinterpret_cast<const uint16_t *>(
                            pj.sc4 + ((int64_t)e * pj.rows + rows[r]) * (k / 16) + kk / 16));
                    }
                }
            }
#pragma unroll
        for (int u = 0; u < kChunksPerPass; u++) {
            int c = c0 + u * 32 + lane;
            if (c >= nchunks)
                break;
            const int kk = c * per;
#pragma unroll
            for (int r = 0; r < R; r++) {
                if (rows[r] < 0)
                    continue;
                const uint32_t wq[4] = {wv[r][u].x, wv[r][u].y, wv[r][u].z, wv[r][u].w};
                if (!FP4) {
                    const float s = __uint_as_float(sv[r][u]);
                    float wf[16];
#pragma unroll
                    for (int q = 0; q < 4; q++) {
                        float2 a = fp8x2_to_float2(wq[q]), b = fp8x2_to_float2(wq[q] >> 16);
                        wf[4 * q] = a.x, wf[4 * q + 1] = a.y, wf[4 * q + 2] = b.x, wf[4 * q + 3] = b.y;
                    }
                    dot16_tokens<TOK>(wf, s, xs, k, kk, acc[r]);
                } else {
                    const uint32_t sc = sv[r][u];
                    const float s0 = e4m3_to_float(sc), s1 = e4m3_to_float(sc >> 8);
#pragma unroll
                    for (int half = 0; half < 2; half++) {
                        float wf[16];
#pragma unroll
                        for (int q = 0; q < 2; q++) {
                            uint32_t word = wq[2 * half + q];
#pragma unroll
                            for (int b = 0; b < 4; b++) {
                                float2 v = e2m1x2_to_float2(word >> (8 * b));
                                wf[8 * q + 2 * b] = v.x, wf[8 * q + 2 * b + 1] = v.y;
                            }
                        }
                        dot16_tokens<TOK>(wf, half ? s1 : s0, xs, k, kk + 16 * half, acc[r]);
                    }
                }
            }
        }
    }
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
        for (int t = 0; t < TOK; t++) {
            float v = acc[r][t];
#pragma unroll
            for (int o = 16; o > 0; o >>= 1)
                v += __shfl_xor_sync(0xffffffffu, v, o);
            acc[r][t] = v;
        }
}

// Copies the rows of `nt` pairs (sorted positions first..first+nt) into xs [TOK][k], zero-filling
// the rest. src_row(pair) picks the source row.
template <int TOK, typename RowOf>
__device__ __forceinline__ void stage_rows(bf16 *xs, const bf16 *src, int k, const Meta &mt, int first, int nt,
                                           RowOf row_of)
{
    const int vec = k / 8; // uint4 per row
    uint4 *dst = reinterpret_cast<uint4 *>(xs);
    for (int i = threadIdx.x; i < TOK * vec; i += blockDim.x) {
        int t = i / vec, c = i - t * vec;
        uint4 v = make_uint4(0, 0, 0, 0);
        if (t < nt)
            v = reinterpret_cast<const uint4 *>(src + (int64_t)row_of(mt.sorted(first + t)) * k)[c];
        dst[i] = v;
    }
}

__device__ __forceinline__ float proj_scale(const Proj &pj, int e, int row)
{
    return pj.gscale ? pj.gscale[(int64_t)e * pj.parts + row / pj.part_rows] : 1.f;
}

// ---- 2. gate_up + SwiGLU --------------------------------------------------------------------

template <bool FP4, int TOK, int J>
__global__ __launch_bounds__(kThreads) void gate_up_kernel(Proj pj, Meta mt, const bf16 *x, bf16 *h, int top_k)
{
    extern __shared__ uint4 smem_u4[];
    bf16 *xs = reinterpret_cast<bf16 *>(smem_u4);
    const int slot = blockIdx.y;
    if (slot >= mt.n_active())
        return;
    const int e = mt.active(slot), first = mt.offset(e), cnt = mt.count(e);
    const int inter = pj.part_rows, warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int j0 = (blockIdx.x * kWarps + warp) * J;
    int rows[2 * J];
#pragma unroll
    for (int jj = 0; jj < J; jj++) {
        bool ok = j0 + jj < inter;
        rows[jj] = ok ? j0 + jj : -1;
        rows[J + jj] = ok ? inter + j0 + jj : -1;
    }
    const float g_gate = FP4 ? proj_scale(pj, e, 0) : 1.f, g_up = FP4 ? proj_scale(pj, e, inter) : 1.f;
    for (int t0 = 0; t0 < cnt; t0 += TOK) {
        const int nt = min(TOK, cnt - t0);
        __syncthreads();
        stage_rows<TOK>(xs, x, pj.k, mt, first + t0, nt, [top_k](int p) { return p / top_k; });
        __syncthreads();
        float acc[2 * J][TOK] = {};
        stream_rows<FP4, TOK, 2 * J>(pj, e, rows, xs, acc);
        // lane (jj * TOK + t) writes one h value
#pragma unroll
        for (int jj = 0; jj < J; jj++)
#pragma unroll
            for (int t = 0; t < TOK; t++)
                if (lane == ((jj * TOK + t) & 31) && t < nt && rows[jj] >= 0) {
                    float g = acc[jj][t] * g_gate, u = acc[J + jj][t] * g_up;
                    float silu = g / (1.f + __expf(-g));
                    h[(int64_t)mt.sorted(first + t0 + t) * inter + j0 + jj] = __float2bfloat16_rn(silu * u);
                }
    }
}

// ---- 3. down, routing weight applied --------------------------------------------------------

template <bool FP4, int TOK, int J>
__global__ __launch_bounds__(kThreads) void down_kernel(Proj pj, Meta mt, const bf16 *h, const float *topk_w,
                                                        float *ys)
{
    extern __shared__ uint4 smem_u4[];
    bf16 *xs = reinterpret_cast<bf16 *>(smem_u4);
    const int slot = blockIdx.y;
    if (slot >= mt.n_active())
        return;
    const int e = mt.active(slot), first = mt.offset(e), cnt = mt.count(e);
    const int hidden = pj.rows, warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int n0 = (blockIdx.x * kWarps + warp) * J;
    int rows[J];
#pragma unroll
    for (int jj = 0; jj < J; jj++)
        rows[jj] = n0 + jj < hidden ? n0 + jj : -1;
    const float g = FP4 ? proj_scale(pj, e, 0) : 1.f;
    for (int t0 = 0; t0 < cnt; t0 += TOK) {
        const int nt = min(TOK, cnt - t0);
        __syncthreads();
        stage_rows<TOK>(xs, h, pj.k, mt, first + t0, nt, [](int p) { return p; });
        __syncthreads();
        float acc[J][TOK] = {};
        stream_rows<FP4, TOK, J>(pj, e, rows, xs, acc);
#pragma unroll
        for (int jj = 0; jj < J; jj++)
#pragma unroll
            for (int t = 0; t < TOK; t++)
                if (lane == ((jj * TOK + t) & 31) && t < nt && rows[jj] >= 0) {
                    int p = mt.sorted(first + t0 + t);
                    ys[(int64_t)p * hidden + n0 + jj] = topk_w[p] * (acc[jj][t] * g);
                }
    }
}

// ---- 4. combine -----------------------------------------------------------------------------

__global__ void combine_kernel(bf16 *y, const float *ys, const int32_t *ids, int64_t m, int top_k, int hidden,
                               int E)
{
    const int64_t n = m * hidden;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t t = i / hidden, c = i - t * hidden;
        float acc = 0.f;
        for (int j = 0; j < top_k; j++) {
            int64_t p = t * top_k + j;
            int e = ids[p];
            if (e >= 0 && e < E)
                acc += ys[p * hidden + c];
        }
        y[i] = __float2bfloat16_rn(acc);
    }
}

// ---- host side ------------------------------------------------------------------------------

constexpr int kJGateUp = 2; // intermediate columns per warp (gate and up rows: 4 rows in flight)
constexpr int kJDown = 4;   // hidden rows per warp

struct FusedMoe {
    bool fp4;
    int E, top_k;
    int hidden, inter;
    Proj w13, w2;
    uint8_t *w13_dev, *w2_dev, *sc13_dev, *sc2_dev;
    float *s13_dev, *s2_dev, *g13_dev, *g2_dev;
};

void fused_release(void *state)
{
    FusedMoe *st = (FusedMoe *)state;
    if (!st)
        return;
    cudaFree(st->w13_dev);
    cudaFree(st->w2_dev);
    cudaFree(st->sc13_dev);
    cudaFree(st->sc2_dev);
    cudaFree(st->s13_dev);
    cudaFree(st->s2_dev);
    cudaFree(st->g13_dev);
    cudaFree(st->g2_dev);
    delete st;
}

int fused_supported(const qs_device_caps *dev, char *why, size_t cap)
{
    if (dev->platform != QS_PLATFORM_CUDA) {
        snprintf(why, cap, "marlin MoE runs on CUDA GPUs, and this device is a CPU.");
        return 0;
    }
    if (dev->cc_major < 8) {
        snprintf(why, cap, "marlin MoE needs compute capability 8.0 (BF16), this GPU is %d.%d.", dev->cc_major,
                 dev->cc_minor);
        return 0;
    }
    return 1;
}

int check_proj(const qs_linear_desc *p, bool fp4, const qs_linear_desc *first, char *why, size_t cap)
{
    if (p->scheme != first->scheme || p->wscale != first->wscale) {
        snprintf(why, cap, "marlin MoE needs one scheme and scale layout for every expert, and %s differs from %s.",
                 p->name, first->name);
        return 0;
    }
    if (!p->weight || (fp4 ? p->weight->dtype != QS_DT_U8 : p->weight->dtype != QS_DT_F8_E4M3)) {
        snprintf(why, cap, "marlin MoE needs %s weights, and %s stores %s.", fp4 ? "packed U8 NVFP4" : "F8_E4M3",
                 p->name, p->weight ? qs_dtype_name(p->weight->dtype) : "none");
        return 0;
    }
    if (!p->weight_scale) {
        snprintf(why, cap, "marlin MoE needs weight scales, and %s has none.", p->name);
        return 0;
    }
    if (p->bias) {
        snprintf(why, cap, "marlin MoE serves experts without biases, and %s has one.", p->name);
        return 0;
    }
    if (fp4 && p->wscale != QS_WSCALE_NVFP4) {
        snprintf(why, cap, "marlin MoE NVFP4 needs E4M3 scales per 16 inputs, and %s has %s scales.", p->name,
                 qs_weight_scale_layout_name(p->wscale));
        return 0;
    }
    if (!fp4 && p->wscale != QS_WSCALE_TENSOR && p->wscale != QS_WSCALE_CHANNEL &&
        !(p->wscale == QS_WSCALE_BLOCK && p->block_n == 128 && p->block_k == 128)) {
        snprintf(why, cap, "marlin MoE FP8 needs per-tensor, per-channel or 128x128 block scales, and %s has %s.",
                 p->name, qs_weight_scale_layout_name(p->wscale));
        return 0;
    }
    return 1;
}

int fused_can(const qs_moe_desc *d, char *why, size_t cap)
{
    bool fp4 = qs_scheme_is_nvfp4(d->scheme);
    if (!fp4 && !qs_scheme_is_fp8(d->scheme)) {
        snprintf(why, cap, "marlin MoE serves FP8 and NVFP4 experts, and %s is %s.", d->name,
                 qs_scheme_name(d->scheme));
        return 0;
    }
    // 16-byte chunks: 16 FP8 or 32 NVFP4 codes; BF16 rows staged 8 at a time.
    int step = fp4 ? 32 : 16;
    if (d->hidden % step || d->inter % step) {
        snprintf(why, cap,
                 "marlin MoE reads 16-byte weight chunks, so hidden and intermediate sizes must be multiples of %d, "
                 "and %s is %lld / %lld.",
                 step, d->name, (long long)d->hidden, (long long)d->inter);
        return 0;
    }
    if (d->num_experts <= 0 || d->num_experts > 4096 || d->top_k <= 0 || d->top_k > d->num_experts) {
        snprintf(why, cap, "marlin MoE handles 1-4096 experts with 1 <= top-k <= experts, and %s has %d, top-k %d.",
                 d->name, d->num_experts, d->top_k);
        return 0;
    }
    if (d->hidden > 16384 || d->inter > 16384) {
        snprintf(why, cap, "marlin MoE stages up to 16384 inputs a row in shared memory, and %s is %lld / %lld.",
                 d->name, (long long)d->hidden, (long long)d->inter);
        return 0;
    }
    for (int e = 0; e < d->num_experts; e++) {
        const qs_linear_desc *parts[3] = {&d->gate[e], &d->up[e], &d->down[e]};
        for (const qs_linear_desc *p : parts)
            if (!check_proj(p, fp4, &d->gate[0], why, cap))
                return 0;
        if (d->gate[e].n != d->inter || d->gate[e].k != d->hidden || d->up[e].n != d->inter ||
            d->up[e].k != d->hidden || d->down[e].n != d->hidden || d->down[e].k != d->inter) {
            snprintf(why, cap, "MoE layer %s: expert %d shapes do not match hidden %lld / intermediate %lld", d->name,
                     e, (long long)d->hidden, (long long)d->inter);
            return 0;
        }
    }
    return 1;
}

int copy_rows(uint8_t *dst, const qs_linear_desc *p, size_t bytes, qs_err *err)
{
    if (!p->weight->data || p->weight->nbytes < bytes)
        return qs_errf(err, "%s: weight tensor holds %zu bytes, %zu needed (or the checkpoint was opened headers-only)",
                       p->name, p->weight->nbytes, bytes);
    QS_CUDA_TRY(cudaMemcpy(dst, p->weight->data, bytes, cudaMemcpyHostToDevice), err);
    return 0;
}

// FP8 scales of one part of one expert into its grid (row scales: nbr = rows, nbk = 1).
int fp8_scales(const qs_linear_desc *p, int nbr, int nbk, float *out, qs_err *err)
{
    const qs_tensor *t = p->weight_scale;
    if (!t->data)
        return qs_errf(err, "%s: marlin MoE needs the weight scales' data", p->name);
    int64_t need = p->wscale == QS_WSCALE_TENSOR ? 1 : (int64_t)nbr * nbk;
    if (t->numel < need)
        return qs_errf(err, "%s: weight scale has %lld values, %lld needed", p->name, (long long)t->numel,
                       (long long)need);
    for (int64_t i = 0; i < (int64_t)nbr * nbk; i++)
        out[i] = qs_scale_get(t, p->wscale == QS_WSCALE_TENSOR ? 0 : i);
    return 0;
}

template <typename T> int upload_vec(const std::vector<T> &v, T **dev, qs_err *err)
{
    QS_CUDA_TRY(cudaMalloc((void **)dev, v.size() * sizeof(T)), err);
    QS_CUDA_TRY(cudaMemcpy(*dev, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice), err);
    return 0;
}

// Fills one projection (parts: 2 for gate+up, 1 for down) of every expert.
int prepare_proj(const qs_moe_desc *d, bool fp4, int parts, Proj *pj, uint8_t **w_dev, uint8_t **sc_dev,
                 float **s_dev, float **g_dev, qs_err *err)
{
    const qs_linear_desc *first = parts == 2 ? &d->gate[0] : &d->down[0];
    const int rows_part = (int)first->n, k = (int)first->k, E = d->num_experts;
    memset(pj, 0, sizeof *pj);
    pj->rows = rows_part * parts;
    pj->k = k;
    pj->part_rows = rows_part;
    pj->parts = parts;
    const size_t row_bytes = fp4 ? (size_t)k / 2 : (size_t)k;
    const size_t part_bytes = (size_t)rows_part * row_bytes;
    QS_CUDA_TRY(cudaMalloc((void **)w_dev, (size_t)E * parts * part_bytes), err);
    for (int e = 0; e < E; e++)
        for (int q = 0; q < parts; q++) {
            const qs_linear_desc *p = parts == 2 ? (q ? &d->up[e] : &d->gate[e]) : &d->down[e];
            if (copy_rows(*w_dev + ((size_t)e * parts + q) * part_bytes, p, part_bytes, err))
                return -1;
        }
    pj->w = *w_dev;
    if (fp4) {
        const size_t sc_bytes = (size_t)rows_part * (k / 16);
        std::vector<float> g((size_t)E * parts);
        QS_CUDA_TRY(cudaMalloc((void **)sc_dev, (size_t)E * parts * sc_bytes), err);
        for (int e = 0; e < E; e++)
            for (int q = 0; q < parts; q++) {
                const qs_linear_desc *p = parts == 2 ? (q ? &d->up[e] : &d->gate[e]) : &d->down[e];
                if (!p->weight_scale->data || p->weight_scale->nbytes < sc_bytes)
                    return qs_errf(err, "%s: NVFP4 scale tensor is smaller than %d x %d needs", p->name, rows_part,
                                   k / 16);
                QS_CUDA_TRY(cudaMemcpy(*sc_dev + ((size_t)e * parts + q) * sc_bytes, p->weight_scale->data, sc_bytes,
                                       cudaMemcpyHostToDevice),
                            err);
                g[(size_t)e * parts + q] = p->weight_global_scale * 16384.f; // the code decode's 2^-14
            }
        pj->sc4 = *sc_dev;
        if (upload_vec(g, g_dev, err))
            return -1;
        pj->gscale = *g_dev;
        return 0;
    }
    const bool block = first->wscale == QS_WSCALE_BLOCK;
    pj->bn = block ? 128 : 1;
    pj->bk = block ? 128 : k;
    pj->nbr = block ? (rows_part + 127) / 128 : rows_part;
    pj->nbk = block ? (k + 127) / 128 : 1;
    const size_t grid = (size_t)pj->nbr * pj->nbk;
    std::vector<float> s((size_t)E * parts * grid);
    for (int e = 0; e < E; e++)
        for (int q = 0; q < parts; q++) {
            const qs_linear_desc *p = parts == 2 ? (q ? &d->up[e] : &d->gate[e]) : &d->down[e];
            if (fp8_scales(p, pj->nbr, pj->nbk, &s[((size_t)e * parts + q) * grid], err))
                return -1;
        }
    if (upload_vec(s, s_dev, err))
        return -1;
    pj->scale = *s_dev;
    return 0;
}

// Token groups per CTA by batch: the largest group a CTA may need is m tokens (every token on one
// expert); beyond 8 a CTA loops over groups, re-reading its weight tile from L2.
// Tokens staged per weight pass, by the pairs an active expert gets on average: at decode batch
// 16 of a 128-expert top-8 model most experts get one or two tokens, and the 8-token instances
// (178 registers, one CTA an SM) ran 20x slower there than the 1- and 2-token ones (ncu, H200).
int tok_for(int64_t pairs, int experts)
{
    const int64_t active = pairs < experts ? pairs : experts;
    const int64_t per = (pairs + active - 1) / active;
    return per <= 1 ? 1 : per <= 2 ? 2 : per <= 4 ? 4 : 8;
}

template <bool FP4, int TOK> int set_smem_limits(const FusedMoe *st, qs_err *err)
{
    int gu = TOK * st->hidden * 2, dn = TOK * st->inter * 2;
    QS_CUDA_TRY(cudaFuncSetAttribute(gate_up_kernel<FP4, TOK, kJGateUp>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     gu),
                err);
    QS_CUDA_TRY(cudaFuncSetAttribute(down_kernel<FP4, TOK, kJDown>, cudaFuncAttributeMaxDynamicSharedMemorySize, dn),
                err);
    return 0;
}

template <bool FP4> int set_all_smem_limits(const FusedMoe *st, qs_err *err)
{
    return set_smem_limits<FP4, 1>(st, err) || set_smem_limits<FP4, 2>(st, err) || set_smem_limits<FP4, 4>(st, err) ||
           set_smem_limits<FP4, 8>(st, err);
}

int fused_prepare(const qs_moe_desc *d, void **state, qs_err *err)
{
    FusedMoe *st = new FusedMoe();
    memset(st, 0, sizeof *st);
    st->fp4 = qs_scheme_is_nvfp4(d->scheme);
    st->E = d->num_experts;
    st->top_k = d->top_k;
    st->hidden = (int)d->hidden;
    st->inter = (int)d->inter;
    if (prepare_proj(d, st->fp4, 2, &st->w13, &st->w13_dev, &st->sc13_dev, &st->s13_dev, &st->g13_dev, err) ||
        prepare_proj(d, st->fp4, 1, &st->w2, &st->w2_dev, &st->sc2_dev, &st->s2_dev, &st->g2_dev, err) ||
        (st->fp4 ? set_all_smem_limits<true>(st, err) : set_all_smem_limits<false>(st, err))) {
        fused_release(st);
        return qs_err_prefix(err, "%s: ", d->name);
    }
    *state = st;
    return 0;
}

template <bool FP4, int TOK>
int launch(const FusedMoe *st, const Meta &mt, const bf16 *x, bf16 *hbuf, const float *w, float *ys, int slots,
           cudaStream_t s, qs_err *err)
{
    dim3 g1((st->inter + kWarps * kJGateUp - 1) / (kWarps * kJGateUp), slots);
    gate_up_kernel<FP4, TOK, kJGateUp><<<g1, kThreads, TOK * st->hidden * 2, s>>>(st->w13, mt, x, hbuf, st->top_k);
    QS_LAUNCH_CHECK(err);
    dim3 g2((st->hidden + kWarps * kJDown - 1) / (kWarps * kJDown), slots);
    down_kernel<FP4, TOK, kJDown><<<g2, kThreads, TOK * st->inter * 2, s>>>(st->w2, mt, hbuf, w, ys);
    QS_LAUNCH_CHECK(err);
    return 0;
}

template <bool FP4>
int launch_tok(int tok, const FusedMoe *st, const Meta &mt, const bf16 *x, bf16 *hbuf, const float *w, float *ys,
               int slots, cudaStream_t s, qs_err *err)
{
    switch (tok) {
    case 1: return launch<FP4, 1>(st, mt, x, hbuf, w, ys, slots, s, err);
    case 2: return launch<FP4, 2>(st, mt, x, hbuf, w, ys, slots, s, err);
    case 4: return launch<FP4, 4>(st, mt, x, hbuf, w, ys, slots, s, err);
    default: return launch<FP4, 8>(st, mt, x, hbuf, w, ys, slots, s, err);
    }
}

// One pass of the four kernels over m tokens whose pairs fit the align kernel's int16-sized
// sorted list (fused_apply splits longer steps).
int fused_apply_chunk(const FusedMoe *st, const bf16 *x, const int32_t *topk_ids, const float *topk_weights, bf16 *y,
                      int64_t m, cudaStream_t s, qs_err *err)
{
    const int64_t P = m * st->top_k;
    void *meta, *hbuf, *ys;
    if (qs_scratch_get(QS_SCRATCH_MOE_INDEX, meta_ints(st->E, P) * sizeof(int32_t), &meta, err) ||
        qs_scratch_get(QS_SCRATCH_MOE_GATE, (size_t)P * st->inter * sizeof(bf16), &hbuf, err) ||
        qs_scratch_get(QS_SCRATCH_MOE_Y, (size_t)P * st->hidden * sizeof(float), &ys, err))
        return -1;
    Meta mt{(int32_t *)meta, st->E, (int)P};
    align_kernel<<<1, kAlignThreads, 2 * st->E * sizeof(int), s>>>(topk_ids, (int)P, st->E, (int32_t *)meta);
    QS_LAUNCH_CHECK(err);
    const int slots = (int)(P < st->E ? P : st->E);
    const int tok = tok_for(P, st->E);
    if ((st->fp4 ? launch_tok<true> : launch_tok<false>)(tok, st, mt, x, (bf16 *)hbuf, topk_weights, (float *)ys,
                                                          slots, s, err))
        return -1;
    int64_t n = m * st->hidden;
    int blocks = (int)((n + 255) / 256 < 4096 ? (n + 255) / 256 : 4096);
    combine_kernel<<<blocks, 256, 0, s>>>(y, (const float *)ys, topk_ids, m, st->top_k, st->hidden, st->E);
    QS_LAUNCH_CHECK(err);
    return 0;
}

int fused_apply(const void *state, const void *x, const int32_t *topk_ids, const float *topk_weights, void *y,
                int64_t m, void *stream, qs_err *err)
{
    const FusedMoe *st = (const FusedMoe *)state;
    const int64_t chunk = kMaxPairs / st->top_k;
    for (int64_t t0 = 0; t0 < m; t0 += chunk) {
        const int64_t n = m - t0 < chunk ? m - t0 : chunk;
        if (fused_apply_chunk(st, (const bf16 *)x + t0 * st->hidden, topk_ids + t0 * st->top_k,
                              topk_weights + t0 * st->top_k, (bf16 *)y + t0 * st->hidden, n, (cudaStream_t)stream,
                              err))
            return -1;
    }
    return 0;
}

} // namespace

// Weight-only mixed precision over all experts at once, as vLLM's fused Marlin MoE; a step with
// more than kMaxPairs (token, expert) pairs runs as several passes over token chunks.
extern "C" const qs_kernel qs_kernel_marlin_moe = {
    "marlin", QS_PLATFORM_CUDA, QS_KIND_MOE,
    (1u << QS_SCHEME_FP8_W8A8) | (1u << QS_SCHEME_FP8_BLOCK_W8A8) | (1u << QS_SCHEME_W8A16_FP8) |
        (1u << QS_SCHEME_NVFP4_W4A4) | (1u << QS_SCHEME_NVFP4_W4A16),
    false, fused_supported, nullptr, fused_can, nullptr, nullptr, fused_prepare, fused_apply, fused_release,
    nullptr, nullptr,
    true, // routed on the device: no host sync, capturable in decode graphs
};
