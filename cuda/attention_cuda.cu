// attention_cuda.cu — paged-KV attention and KV writes for the CUDA ops (see src/core/ops.h).
// KV cache per layer: [block][kv_head][slot][head_dim] BF16 or FP8 E4M3 with per-layer K and V scales
// (kv_codec.cuh; the kernels are templated on the element codec), QS_KV_BLOCK_SIZE slots a block.
// attention: one CTA per (token, query head, KV split); its warps stride over the split's share
// of the positions the token may see (sliding window honoured), each keeping an online softmax
// (running max, sum and weighted V in FP32, one dimension slice per lane); the warps' results are
// merged in shared memory. Where the query heads group evenly over the KV heads (GQA, 1/2/4/8 a
// KV head) a grouped kernel serves a KV head's query heads from one K/V load instead
// (a dev build's QSERVE_ATTN_GROUPED=0: not). When there are too few CTAs to fill the GPU — decode of a few
// sequences — the positions are split across CTAs (split-KV) and a second kernel merges the
// splits' softmax states. Output rows go in the order o_proj's kernel reads (core/act_order.h).
// Runs of >= 16 tokens of one sequence (prefill chunks) go to the tensor-core kernel of
// attention_prefill.cu instead (a dev build's QSERVE_ATTN_PREFILL=0: not) when the cache is bf16; an FP8 cache's
// prefill runs here. KV writes skip negative slots: the dummy rows that pad a decode batch up to
// its graph's size, and quantize for an FP8 cache.
#include <cuda_bf16.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attention_prefill.h"
#include "cuda_check.h"
#include "kv_codec.cuh"
#include "kv_layout.cuh"
#include "lab_knob.h"
#include "launch_pdl.cuh"
#include "cuda_stream.h"
#include "scratch.h"
#include "device_query.h"
#include "qs_cuda_ops.h"

extern "C" {
#include "core/kv_layout.h"
}

namespace {

typedef __nv_bfloat16 bf16;
constexpr int kMaxHeadDim = 256;
constexpr int kPerLane = kMaxHeadDim / 32;
constexpr int kWarps = 4;

template <class Codec>
__global__ void kv_write_kernel(typename Codec::T *kc, typename Codec::T *vc, const bf16 *k, const bf16 *v,
                                const int32_t *slots, int64_t n_tokens, int n_kv, int head_dim, float k_inv,
                                float v_inv)
{
    int64_t per_token = (int64_t)n_kv * head_dim;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n_tokens * per_token;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t t = i / per_token, r = i % per_token;
        int kvh = (int)(r / head_dim), d = (int)(r % head_dim);
        int32_t slot = slots[t];
        if (slot < 0) // a dummy row padding a decode batch up to its graph's size
            continue;
        int64_t dst = qs_kv_slot_row(slot, n_kv, kvh, head_dim) + d;
        Codec::store(kc, dst, k[i], k_inv);
        Codec::store(vc, dst, v[i], v_inv);
    }
}

// The positions [begin, end) that split `split` of `splits` covers for token t: a contiguous
// share of [first, pos], first being where a sliding window starts (window > 0) or the token's
// chunk starts (window < 0: Llama 4's chunked attention of -window positions, see window_of).
__device__ __forceinline__ void split_positions(const int32_t *tok_pos, int t, int window, int split, int splits,
                                                int *begin, int *end)
{
    int pos = tok_pos[t];
    int first = window > 0 ? (pos + 1 > window ? pos + 1 - window : 0) : window < 0 ? pos / -window * -window : 0;
    int share = (pos + 1 - first + splits - 1) / splits;
    *begin = first + split * share;
    *end = min(pos + 1, *begin + share);
}

// The online-softmax states of a CTA's kW warps for its G heads, in shared memory: each warp's
// running max m, sum l and weighted V (dimensions up to DMAX), then the weights merge_warps finds.
template <int kW, int G, int DMAX> struct WarpStates {
    float m[kW][G], l[kW][G], acc[kW][G][DMAX];
    float weight[kW][G], total[G], max[G];
};

// Merges the warps' states (filled, then a __syncthreads) of heads head0 .. head0 + G - 1 of token
// t: each warp's weight exp(m - the heads' max) once per (warp, head) — 0 for a warp that saw no
// position — then, per dimension, the weighted sum of the warps' V in warp order. With one split
// that is the output row (in o_proj's order); with several, this split's unnormalised partial
// state (max, sum, weighted V) for split_merge_kernel.
template <int kW, int G, int DMAX>
__device__ void merge_warps(WarpStates<kW, G, DMAX> &st, bf16 *out, float *part_ml, float *part_acc, int t, int head0,
                            int n_heads, int head_dim, int split, int splits, qs_act_order order)
{
    if (threadIdx.x < G) {
        const int g = threadIdx.x;
        float mx = -INFINITY, total = 0.f;
        for (int w = 0; w < kW; w++)
            mx = fmaxf(mx, st.m[w][g]);
        for (int w = 0; w < kW; w++) {
            const float f = st.m[w][g] == -INFINITY ? 0.f : __expf(st.m[w][g] - mx);
            st.weight[w][g] = f;
            total += st.l[w][g] * f;
        }
        st.max[g] = mx;
        st.total[g] = total;
    }
    __syncthreads();
    for (int i = threadIdx.x; i < G * head_dim; i += blockDim.x) {
        const int g = i / head_dim, d = i % head_dim, h = head0 + g;
        float v = 0.f;
        for (int w = 0; w < kW; w++)
            v += st.acc[w][g][d] * st.weight[w][g];
        if (splits == 1) {
            out[(int64_t)t * n_heads * head_dim + qs_act_position(order, (int64_t)h * head_dim + d)] =
                __float2bfloat16_rn(v / st.total[g]);
        } else {
            const int64_t slot = ((int64_t)t * n_heads + h) * splits + split;
            if (d == 0) {
                part_ml[2 * slot] = st.max[g];
                part_ml[2 * slot + 1] = st.total[g];
            }
            part_acc[slot * head_dim + d] = v;
        }
    }
}

// Split `split` of `splits` covers its share of the positions (split_positions).
template <class Codec>
__global__ void __launch_bounds__(kWarps * 32)
    attention_kernel(bf16 *out, float *part_ml, float *part_acc, const bf16 *q, const typename Codec::T *kc,
                     const typename Codec::T *vc, const int32_t *tok_seq, const int32_t *tok_pos,
                     const int32_t *block_tables, int max_blocks, int n_heads, int n_kv, int head_dim, float scale,
                     int window, qs_act_order order, float k_scale, float v_scale)
{
    qs_pdl_wait_then_release();
    int t = blockIdx.x, h = blockIdx.y, split = blockIdx.z, splits = gridDim.z;
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    int kvh = h / (n_heads / n_kv);
    int begin, end;
    split_positions(tok_pos, t, window, split, splits, &begin, &end);
    const int32_t *table = block_tables + (int64_t)tok_seq[t] * max_blocks;
    const bf16 *qrow = q + ((int64_t)t * n_heads + h) * head_dim;

    float qv[kPerLane], acc[kPerLane];
#pragma unroll
    for (int j = 0; j < kPerLane; j++) {
        int d = lane + 32 * j;
        qv[j] = d < head_dim ? __bfloat162float(qrow[d]) * scale : 0.f;
        acc[j] = 0.f;
    }
    float m = -INFINITY, l = 0.f;
    for (int p = begin + warp; p < end; p += kWarps) {
        int64_t base = qs_kv_pos_row(table, p, n_kv, kvh, head_dim);
        float s = 0.f;
#pragma unroll
        for (int j = 0; j < kPerLane; j++) {
            int d = lane + 32 * j;
            if (d < head_dim)
                s += qv[j] * Codec::load(kc, base + d, k_scale);
        }
        for (int o = 16; o > 0; o >>= 1)
            s += __shfl_xor_sync(0xffffffffu, s, o);
        float m_new = fmaxf(m, s);
        float corr = __expf(m - m_new), w = __expf(s - m_new);
        l = l * corr + w;
#pragma unroll
        for (int j = 0; j < kPerLane; j++) {
            int d = lane + 32 * j;
            float v = d < head_dim ? Codec::load(vc, base + d, v_scale) : 0.f;
            acc[j] = acc[j] * corr + w * v;
        }
        m = m_new;
    }
    __shared__ WarpStates<kWarps, 1, kMaxHeadDim> st;
    if (lane == 0) {
        st.m[warp][0] = m;
        st.l[warp][0] = l;
    }
#pragma unroll
    for (int j = 0; j < kPerLane; j++) {
        int d = lane + 32 * j;
        if (d < head_dim)
            st.acc[warp][0][d] = acc[j];
    }
    __syncthreads();
    merge_warps(st, out, part_ml, part_acc, t, h, n_heads, head_dim, split, splits, order);
}

// Warps of a grouped CTA (below): 8, or 4 where G * chunks >= 8 to keep its merge's shared memory
// within 32 KB.
constexpr int grouped_warps(int g, int chunks) { return g * chunks >= 8 ? 4 : 8; }

// The same attention with one CTA per (token, KV head, KV split) for the G query heads that share
// the KV head (GQA): each K and V row is loaded once for all G instead of once per query head, the
// grid is G times smaller (Llama-3.1-8B at 56 tokens: 448 CTAs, not 1792, one wave), and each warp
// loads the rows of two positions before it reduces either, so two loads are in flight. The
// splits' states go to the same partial buffers as attention_kernel's (rows t * n_heads + h).
// kChunks: 128-dimension chunks of a head (1: head_dim <= 128, 2: <= 256), so that a head of 128
// holds no registers for dimensions it lacks; kW warps: grouped_warps.
template <class Codec, int G, int kChunks, int kW = grouped_warps(G, kChunks)>
__global__ void __launch_bounds__(kW * 32)
    attention_grouped_kernel(bf16 *out, float *part_ml, float *part_acc, const bf16 *q,
                             const typename Codec::T *kc, const typename Codec::T *vc, const int32_t *tok_seq,
                             const int32_t *tok_pos, const int32_t *block_tables, int max_blocks, int n_heads,
                             int n_kv, int head_dim, float scale, int window, qs_act_order order, float k_scale,
                             float v_scale)
{
    qs_pdl_wait_then_release();
    int t = blockIdx.x, kvh = blockIdx.y, split = blockIdx.z, splits = gridDim.z;
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    int begin, end;
    split_positions(tok_pos, t, window, split, splits, &begin, &end);
    const int32_t *table = block_tables + (int64_t)tok_seq[t] * max_blocks;

    // Lane `lane` holds dimensions 4 * lane + 128 * j + e (e < 4): one 8-byte load per K or V row
    // and chunk j, where a dimension per lane took four 2-byte loads.
    float qv[G][kChunks][4], acc[G][kChunks][4], m[G], l[G];
#pragma unroll
    for (int g = 0; g < G; g++) {
        const bf16 *qrow = q + ((int64_t)t * n_heads + kvh * G + g) * head_dim;
#pragma unroll
        for (int j = 0; j < kChunks; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                int d = 4 * lane + 128 * j + e;
                qv[g][j][e] = d < head_dim ? __bfloat162float(qrow[d]) * scale : 0.f;
                acc[g][j][e] = 0.f;
            }
        m[g] = -INFINITY;
        l[g] = 0.f;
    }
    auto row_base = [&](int p) { return qs_kv_pos_row(table, p, n_kv, kvh, head_dim); };
    auto load4 = [&](const typename Codec::T *cache, int64_t base, int j, float cache_scale, float out4[4]) {
        int d = 4 * lane + 128 * j;
        if (d < head_dim) {
            Codec::load4(cache, base + d, cache_scale, out4);
        } else {
            out4[0] = out4[1] = out4[2] = out4[3] = 0.f;
        }
    };
    for (int p0 = begin + warp; p0 < end; p0 += 2 * kW) {
        const int p1 = p0 + kW;
        const bool has1 = p1 < end;
        const int64_t base0 = row_base(p0), base1 = has1 ? row_base(p1) : base0;
        float k0[kChunks][4], k1[kChunks][4], v0[kChunks][4], v1[kChunks][4];
#pragma unroll
        for (int j = 0; j < kChunks; j++) {
            load4(kc, base0, j, k_scale, k0[j]);
            load4(kc, base1, j, k_scale, k1[j]);
            load4(vc, base0, j, v_scale, v0[j]);
            load4(vc, base1, j, v_scale, v1[j]);
        }
#pragma unroll
        for (int g = 0; g < G; g++) {
            float s0 = 0.f, s1 = 0.f;
#pragma unroll
            for (int j = 0; j < kChunks; j++)
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    s0 += qv[g][j][e] * k0[j][e];
                    s1 += qv[g][j][e] * k1[j][e];
                }
            for (int o = 16; o > 0; o >>= 1) {
                s0 += __shfl_xor_sync(0xffffffffu, s0, o);
                s1 += __shfl_xor_sync(0xffffffffu, s1, o);
            }
            if (!has1)
                s1 = -INFINITY;
            float m_new = fmaxf(m[g], fmaxf(s0, s1));
            float corr = __expf(m[g] - m_new), w0 = __expf(s0 - m_new), w1 = __expf(s1 - m_new);
            l[g] = l[g] * corr + w0 + w1;
#pragma unroll
            for (int j = 0; j < kChunks; j++)
#pragma unroll
                for (int e = 0; e < 4; e++)
                    acc[g][j][e] = acc[g][j][e] * corr + w0 * v0[j][e] + w1 * v1[j][e];
            m[g] = m_new;
        }
    }
    __shared__ WarpStates<kW, G, kChunks * 128> st;
#pragma unroll
    for (int g = 0; g < G; g++) {
        if (lane == 0) {
            st.m[warp][g] = m[g];
            st.l[warp][g] = l[g];
        }
#pragma unroll
        for (int j = 0; j < kChunks; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                int d = 4 * lane + 128 * j + e;
                if (d < head_dim)
                    st.acc[warp][g][d] = acc[g][j][e];
            }
    }
    __syncthreads();
    merge_warps(st, out, part_ml, part_acc, t, kvh * G, n_heads, head_dim, split, splits, order);
}

// One CTA per (token, head): merges the splits' states (at most 32). The first warp weighs the
// splits, one lane each, so the serial part is a warp reduction rather than a walk over the splits;
// the threads then sum their dimension's partials, whose loads are independent.
__global__ void split_merge_kernel(bf16 *out, const float *part_ml, const float *part_acc, int splits, int n_heads,
                                   int head_dim, qs_act_order order)
{
    qs_pdl_wait_then_release();
    __shared__ float sm_weight[32], sm_total;
    int64_t row = blockIdx.x;
    int64_t t = row / n_heads, h = row % n_heads;
    const float *ml = part_ml + 2 * row * splits, *acc = part_acc + row * splits * head_dim;
    if (threadIdx.x < 32) {
        int s = threadIdx.x;
        float m = -INFINITY, l = 0.f;
        if (s < splits) {
            m = ml[2 * s];
            l = ml[2 * s + 1];
        }
        if (!(l > 0.f)) // a split with no positions
            m = -INFINITY;
        float mx = m;
        for (int o = 16; o > 0; o >>= 1)
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
        float w = l > 0.f ? __expf(m - mx) : 0.f, total = l * w;
        for (int o = 16; o > 0; o >>= 1)
            total += __shfl_xor_sync(0xffffffffu, total, o);
        sm_weight[s] = w;
        if (s == 0)
            sm_total = total;
    }
    __syncthreads();
    for (int d = threadIdx.x; d < head_dim; d += blockDim.x) {
        float v = 0.f;
#pragma unroll 8
        for (int s = 0; s < splits; s++)
            v += acc[s * head_dim + d] * sm_weight[s];
        out[t * n_heads * head_dim + qs_act_position(order, h * head_dim + d)] = __float2bfloat16_rn(v / sm_total);
    }
}

} // namespace

int qs_cuda_kv_write(void *k_cache, void *v_cache, const void *k, const void *v, const qs_attn_batch *b,
                     int n_kv_heads, int head_dim, qs_err *err)
{
    int64_t count = b->n_tokens * n_kv_heads * head_dim;
    if (count == 0)
        return 0;
    int64_t grid = (count + 255) / 256;
    unsigned blocks = (unsigned)(grid > 1048576 ? 1048576 : grid);
    if (b->kv_dtype == QS_KV_FP8_E4M3)
        kv_write_kernel<KvFp8><<<blocks, 256, 0, qs_cuda_stream()>>>(
            (__nv_fp8_e4m3 *)k_cache, (__nv_fp8_e4m3 *)v_cache, (const bf16 *)k, (const bf16 *)v, b->slot_mapping,
            b->n_tokens, n_kv_heads, head_dim, 1.0f / b->k_scale, 1.0f / b->v_scale);
    else
        kv_write_kernel<KvBf16><<<blocks, 256, 0, qs_cuda_stream()>>>((bf16 *)k_cache, (bf16 *)v_cache, (const bf16 *)k,
                                                                     (const bf16 *)v, b->slot_mapping, b->n_tokens,
                                                                     n_kv_heads, head_dim, 1.0f, 1.0f);
    QS_LAUNCH_CHECK(err);
    return 0;
}

// The CUDA-core kernel (plus the split merge) over every token of b, reading the cache through Codec.
template <class Codec>
static int attention_cuda_cores_as(void *out, const void *q, const void *k_cache, const void *v_cache,
                                   const qs_attn_batch *b, int n_heads, int n_kv_heads, int head_dim, float scale,
                                   qs_act_order order, qs_err *err)
{
    typedef typename Codec::T KT;
    const float k_scale = b->k_scale, v_scale = b->v_scale;
    // Enough (token, head, split) CTAs for about 16 warps an SM; splits only help when there are
    // few (token, head) pairs, i.e. decode of a handful of sequences (their merge is a kernel more).
    int sm_count = qs_cuda_sm_count();
    if (sm_count <= 0)
        sm_count = 80;
    int64_t pairs = b->n_tokens * n_heads;
    // QSERVE_ATTN_GROUPED=0 (a lab switch, dev builds only: lab_knob.h): one CTA per query head
    // (attention_kernel) even where the grouped kernel serves the head grouping (read at every
    // call, so a test can switch).
    const int group = n_heads / n_kv_heads;
    const bool grouped = qs_lab_knob("QSERVE_ATTN_GROUPED", 1) != 0 &&
                         (group == 1 || group == 2 || group == 4 || group == 8) && head_dim % 4 == 0;
    const int chunks = head_dim <= 128 ? 1 : 2, warps = grouped ? grouped_warps(group, chunks) : kWarps;
    // (token, head) CTAs before splits, and their warps: split the positions until ~16 warps an SM
    const int64_t ctas = grouped ? b->n_tokens * n_kv_heads : pairs;
    const int64_t target_ctas = (int64_t)4 * sm_count * kWarps / warps;
    int splits = 1;
    if (ctas < target_ctas)
        splits = (int)((target_ctas + ctas - 1) / ctas);
    splits = splits > 32 ? 32 : splits;
    float *part_ml = nullptr, *part_acc = nullptr;
    if (splits > 1) {
        void *buf;
        size_t bytes = (size_t)(pairs * splits) * (2 + head_dim) * sizeof(float);
        if (qs_scratch_get(QS_SCRATCH_ATTN_SPLIT, bytes, &buf, err))
            return -1;
        part_ml = (float *)buf;
        part_acc = part_ml + 2 * pairs * splits;
    }
    cudaStream_t s = qs_cuda_stream();
    if (grouped) {
        dim3 grid((unsigned)b->n_tokens, (unsigned)n_kv_heads, (unsigned)splits);
        auto launch = [&](auto kernel) {
            return qs_launch_pdl(kernel, grid, dim3(warps * 32), 0, s, qs_ops_pdl(), (bf16 *)out, part_ml, part_acc,
                                 (const bf16 *)q, (const KT *)k_cache, (const KT *)v_cache, b->tok_seq, b->tok_pos,
                                 b->block_tables, b->max_blocks, n_heads, n_kv_heads, head_dim, scale,
                                 qs_cuda_attn_window(b), order, k_scale, v_scale);
        };
        cudaError_t rc;
        switch (group * 10 + chunks) {
        case 11: rc = launch(attention_grouped_kernel<Codec, 1, 1>); break;
        case 21: rc = launch(attention_grouped_kernel<Codec, 2, 1>); break;
        case 41: rc = launch(attention_grouped_kernel<Codec, 4, 1>); break;
        case 81: rc = launch(attention_grouped_kernel<Codec, 8, 1>); break;
        case 12: rc = launch(attention_grouped_kernel<Codec, 1, 2>); break;
        case 22: rc = launch(attention_grouped_kernel<Codec, 2, 2>); break;
        case 42: rc = launch(attention_grouped_kernel<Codec, 4, 2>); break;
        default: rc = launch(attention_grouped_kernel<Codec, 8, 2>); break;
        }
        QS_CUDA_TRY(rc, err);
    } else {
        dim3 grid((unsigned)b->n_tokens, (unsigned)n_heads, (unsigned)splits);
        QS_CUDA_TRY(qs_launch_pdl(attention_kernel<Codec>, grid, dim3(kWarps * 32), 0, s, qs_ops_pdl(), (bf16 *)out,
                                  part_ml, part_acc, (const bf16 *)q, (const KT *)k_cache, (const KT *)v_cache,
                                  b->tok_seq, b->tok_pos, b->block_tables, b->max_blocks, n_heads, n_kv_heads, head_dim,
                                  scale, qs_cuda_attn_window(b), order, k_scale, v_scale),
                    err);
    }
    if (splits > 1)
        QS_CUDA_TRY(qs_launch_pdl(split_merge_kernel, dim3((unsigned)pairs), dim3(128), 0, s, qs_ops_pdl(), (bf16 *)out,
                                  (const float *)part_ml, (const float *)part_acc, splits, n_heads, head_dim, order),
                    err);
    return 0;
}

static int attention_cuda_cores(void *out, const void *q, const void *k_cache, const void *v_cache,
                                const qs_attn_batch *b, int n_heads, int n_kv_heads, int head_dim, float scale,
                                qs_act_order order, qs_err *err)
{
    if (b->kv_dtype == QS_KV_FP8_E4M3)
        return attention_cuda_cores_as<KvFp8>(out, q, k_cache, v_cache, b, n_heads, n_kv_heads, head_dim, scale, order,
                                              err);
    return attention_cuda_cores_as<KvBf16>(out, q, k_cache, v_cache, b, n_heads, n_kv_heads, head_dim, scale, order,
                                           err);
}

int qs_cuda_attention(void *out, const void *q, const void *k_cache, const void *v_cache, const qs_attn_batch *b,
                      int n_heads, int n_kv_heads, int head_dim, float scale, qs_act_order order, qs_err *err)
{
    if (qs_act_order_check(order, (int64_t)n_heads * head_dim, "attention", err))
        return -1;
    if (head_dim > kMaxHeadDim)
        return qs_errf(err, "CUDA attention supports head_dim up to %d, the model has %d", kMaxHeadDim, head_dim);
    if (b->n_tokens == 0)
        return 0;
    if (b->n_tokens > 2147483647LL || n_heads > 65535)
        return qs_errf(err, "CUDA attention: %lld tokens x %d heads is too large a grid", (long long)b->n_tokens,
                       n_heads);
    // The tensor-core prefill kernel reads bf16 K/V tiles; an FP8 cache's prefill runs on the CUDA cores.
    if (b->kv_dtype == QS_KV_FP8_E4M3 ||
        !qs_cuda_attn_prefill_wanted(out, q, k_cache, v_cache, b, n_heads, n_kv_heads, head_dim))
        return attention_cuda_cores(out, q, k_cache, v_cache, b, n_heads, n_kv_heads, head_dim, scale, order, err);
    // Runs of >= QS_ATTN_PREFILL_MIN_RUN tokens of one sequence go to the tensor-core kernel. The
    // host does not know where they are, so the CUDA-core kernel runs over the whole batch with
    // those tokens moved to position 0 (one key each), and the tensor-core kernel, queued after
    // it, overwrites their rows.
    qs_attn_prefill_plan plan;
    if (qs_cuda_attn_prefill_plan(b, &plan, err))
        return -1;
    if (plan.rest_pos) {
        qs_attn_batch rest = *b;
        rest.tok_pos = plan.rest_pos;
        if (attention_cuda_cores(out, q, k_cache, v_cache, &rest, n_heads, n_kv_heads, head_dim, scale, order, err))
            return -1;
    }
    return qs_cuda_attn_prefill_run(out, q, k_cache, v_cache, b, &plan, n_heads, n_kv_heads, head_dim, scale, order,
                                    err);
}
