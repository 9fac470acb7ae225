// sample_cuda.cu — the sampling op of the CUDA ops table (ops.h: sample; the algorithm is defined
// in src/core/sample.h, the reference is src/cpu/sample_cpu.c): one CTA per row of BF16 logits
// writes that row's token id. No sort: after one pass for the largest logit (the whole answer when
// greedy), the top-k and top-p thresholds are radix selects over the keys (12, 12 and 8 bits, a
// pass each, histograms in shared memory), then the draw sums each warp's contiguous segment of
// ids, finds the segment holding the target and scans it with the whole block. Every sum is an
// integer sum (64-bit weights, histogram bins as two 32-bit counters with exact carries), so the
// result does not depend on the order threads add in and the run is reproducible. Nothing is
// allocated, copied or waited on: a decode-step graph records the one launch.
#include <cuda_bf16.h>
#include <stdint.h>

#include "cuda_check.h"
#include "cuda_stream.h"
#include "qs_cuda_ops.h"

namespace {

typedef __nv_bfloat16 bf16;
typedef unsigned long long u64;

constexpr int kHistBins = 4096; // the widest digit (12 bits)
constexpr unsigned kFull = 0xffffffffu;

struct SampleSmem {
    uint32_t hlo[kHistBins]; // a bin's weight = hhi * 2^32 + hlo
    uint32_t hhi[kHistBins];
    u64 warp_tot[32];
    int32_t banned[QS_SAMPLE_MAX_BANNED];
    u64 res_above;
    uint32_t res_bin;
    int res_seg;
    u64 res_target;
    int res_token;
};

__device__ __forceinline__ float to_float(bf16 v) { return __bfloat162float(v); }

// The key of a raw logit for the greedy choice: NaN as -inf, -0 as +0, +inf kept.
__device__ __forceinline__ uint32_t greedy_key(float x)
{
    if (x != x)
        x = -INFINITY;
    return qs_sample_key(x == 0.0f ? 0.0f : x);
}

__device__ __forceinline__ float key_to_float(uint32_t k)
{
    uint32_t u = (k & 0x80000000u) ? (k & 0x7fffffffu) : ~k;
    return __uint_as_float(u);
}

__device__ __forceinline__ u64 warp_max(u64 v)
{
    for (int o = 16; o > 0; o >>= 1) {
        u64 t = __shfl_xor_sync(kFull, v, o);
        v = t > v ? t : v;
    }
    return v;
}

__device__ __forceinline__ u64 warp_sum(u64 v)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(kFull, v, o);
    return v;
}

__device__ __forceinline__ u64 warp_incl_scan(u64 v, int lane)
{
    for (int o = 1; o < 32; o <<= 1) {
        u64 t = __shfl_up_sync(kFull, v, o);
        if (lane >= o)
            v += t;
    }
    return v;
}

// Block-wide reduction of one value a thread with a warp reduction (warp_max or warp_sum);
// every thread gets the result.
template <int NT, u64 (*WARP_REDUCE)(u64)> __device__ u64 block_reduce(u64 v, SampleSmem &s)
{
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = WARP_REDUCE(v);
    if (lane == 0)
        s.warp_tot[warp] = v;
    __syncthreads();
    u64 r = lane < NT / 32 ? s.warp_tot[lane] : 0;
    r = WARP_REDUCE(r);
    __syncthreads();
    return r;
}
template <int NT> __device__ u64 block_max(u64 v, SampleSmem &s) { return block_reduce<NT, warp_max>(v, s); }
template <int NT> __device__ u64 block_sum(u64 v, SampleSmem &s) { return block_reduce<NT, warp_sum>(v, s); }

template <int NT> __device__ u64 block_excl_scan(u64 v, u64 *total, SampleSmem &s)
{
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    u64 incl = warp_incl_scan(v, lane);
    if (lane == 31)
        s.warp_tot[warp] = incl;
    __syncthreads();
    u64 t = lane < NT / 32 ? s.warp_tot[lane] : 0;
    t = warp_incl_scan(t, lane);            // every warp scans the warp totals itself
    u64 base = __shfl_sync(kFull, t, (warp + 31) & 31);
    *total = __shfl_sync(kFull, t, NT / 32 - 1);
    __syncthreads();
    return (warp ? base : 0) + incl - v;
}

// Adds w to bin b exactly: a wrap of the low counter carries one into the high one.
__device__ __forceinline__ void hist_add(SampleSmem &s, uint32_t b, u64 w)
{
    uint32_t lo = (uint32_t)w, hi = (uint32_t)(w >> 32);
    uint32_t old = atomicAdd(&s.hlo[b], lo);
    if (old + lo < old)
        hi++;
    if (hi)
        atomicAdd(&s.hhi[b], hi);
}

// What every pass knows about the row.
struct Row {
    const bf16 *x;
    int V;
    int nb;               // banned ids (in shared memory)
    float inv_t, zmax, log_min_p;
    uint32_t kth;         // top-k threshold key (0: none)
    uint32_t tp;          // top-p threshold key (0: none)
};

__device__ __forceinline__ bool banned(const SampleSmem &s, const Row &r, int i)
{
    for (int j = 0; j < r.nb; j++)
        if (s.banned[j] == i)
            return true;
    return false;
}

// Element i: allowed, and its z and key.
__device__ __forceinline__ bool element(const SampleSmem &s, const Row &r, int i, float *z, uint32_t *key)
{
    if (r.nb && banned(s, r, i))
        return false;
    *z = qs_sample_z(to_float(r.x[i]), r.inv_t);
    *key = qs_sample_key(*z);
    return true;
}

__device__ __forceinline__ bool kept1(const Row &r, float z, uint32_t key)
{
    return key >= r.kth && qs_sample_min_p_ok(z, r.zmax, r.log_min_p);
}

// The largest key t such that the candidates with key >= t weigh at least need: candidates are
// the allowed ids (mass == false: weight 1 each; the top-k threshold) or the ids of K1 (mass ==
// true: their weights; the top-p threshold).
template <int NT> __device__ uint32_t select_key(SampleSmem &s, const Row &r, bool mass, u64 need)
{
    constexpr int BPT = kHistBins / NT; // bins a thread scans
    const int shift[3] = {20, 8, 0}, bits[3] = {12, 12, 8};
    uint32_t prefix = 0;
    u64 above = 0;
#pragma unroll
    for (int l = 0; l < 3; l++) {
        const int nbins = 1 << bits[l], hi = shift[l] + bits[l];
        for (int b = threadIdx.x; b < nbins; b += NT)
            s.hlo[b] = s.hhi[b] = 0;
        if (threadIdx.x == 0) {
            s.res_bin = 0;
            s.res_above = above;
        }
        __syncthreads();
#pragma unroll 4
        for (int i = threadIdx.x; i < r.V; i += NT) {
            float z;
            uint32_t key;
            if (!element(s, r, i, &z, &key))
                continue;
            if (hi < 32 && (key >> hi) != (prefix >> hi))
                continue;
            u64 w = 1;
            if (mass) {
                if (!kept1(r, z, key))
                    continue;
                w = qs_sample_weight(z, r.zmax);
                if (!w)
                    continue;
            }
            hist_add(s, (key >> shift[l]) & (uint32_t)(nbins - 1), w);
        }
        __syncthreads();
        // thread t scans bins nbins-1 - (t*BPT + j), from the top down
        u64 own[BPT], sum = 0;
#pragma unroll
        for (int j = 0; j < BPT; j++) {
            int b = nbins - 1 - (int)(threadIdx.x * BPT + j);
            own[j] = b >= 0 ? ((u64)s.hhi[b] << 32) + s.hlo[b] : 0;
            sum += own[j];
        }
        u64 total;
        u64 acc = above + block_excl_scan<NT>(sum, &total, s);
        if (acc < need && acc + sum >= need) {
#pragma unroll
            for (int j = 0; j < BPT; j++) {
                if (acc + own[j] >= need) {
                    s.res_bin = (uint32_t)(nbins - 1 - (int)(threadIdx.x * BPT + j));
                    s.res_above = acc;
                    break;
                }
                acc += own[j];
            }
        }
        __syncthreads();
        prefix |= s.res_bin << shift[l];
        above = s.res_above;
        __syncthreads(); // the next level clears the histogram
    }
    return prefix;
}

// The greedy choice: the allowed id with the largest raw logit, ties to the lowest id.
template <int NT> __device__ int greedy_choice(SampleSmem &s, const Row &r)
{
    u64 best = 0;
#pragma unroll 4
    for (int i = threadIdx.x; i < r.V; i += NT) {
        if (r.nb && banned(s, r, i))
            continue;
        u64 pk = ((u64)greedy_key(to_float(r.x[i])) << 32) | (u64)(0xffffffffu - (uint32_t)i);
        best = pk > best ? pk : best;
    }
    best = block_max<NT>(best, s);
    return best ? (int)(0xffffffffu - (uint32_t)best) : 0;
}

template <int NT>
__global__ void __launch_bounds__(NT) sample_kernel(int32_t *tokens, const bf16 *logits, const qs_sample_row *rows,
                                                    int V)
{
    __shared__ SampleSmem s;
    const qs_sample_row *p = rows + blockIdx.x;
    if (p->skip) {
        if (threadIdx.x == 0)
            tokens[blockIdx.x] = -1;
        return;
    }
    Row r;
    r.x = logits + (int64_t)blockIdx.x * V;
    r.V = V;
    r.nb = min(max(p->n_banned, 0), QS_SAMPLE_MAX_BANNED);
    r.inv_t = p->inv_temperature;
    r.log_min_p = p->log_min_p;
    r.kth = r.tp = 0;
    if ((int)threadIdx.x < r.nb)
        s.banned[threadIdx.x] = p->banned[threadIdx.x];
    __syncthreads();
    if (!(r.inv_t > 0)) {
        int tok = greedy_choice<NT>(s, r);
        if (threadIdx.x == 0)
            tokens[blockIdx.x] = tok;
        return;
    }

    // zmax, and the number of allowed ids (distinct banned ids inside the vocabulary)
    u64 best = 0;
#pragma unroll 4
    for (int i = threadIdx.x; i < V; i += NT) {
        float z;
        uint32_t key;
        if (element(s, r, i, &z, &key)) {
            u64 pk = ((u64)key << 32) | (u64)(0xffffffffu - (uint32_t)i);
            best = pk > best ? pk : best;
        }
    }
    best = block_max<NT>(best, s);
    int n_allowed = V;
    for (int j = 0; j < r.nb; j++) {
        bool dup = false;
        for (int k = 0; k < j; k++)
            dup |= s.banned[k] == s.banned[j];
        n_allowed -= !dup && s.banned[j] >= 0 && s.banned[j] < V;
    }
    r.zmax = key_to_float((uint32_t)(best >> 32));
    if (!best || r.zmax == -INFINITY) {
        int tok = greedy_choice<NT>(s, r);
        if (threadIdx.x == 0)
            tokens[blockIdx.x] = tok;
        return;
    }
    const int top_id = (int)(0xffffffffu - (uint32_t)best);

    if (p->top_k > 0 && p->top_k < n_allowed)
        r.kth = select_key<NT>(s, r, false, (u64)p->top_k);
    double top_p = p->top_p;
    if (top_p > 0 && top_p < 1) {
        u64 m1 = 0;
#pragma unroll 4
        for (int i = threadIdx.x; i < V; i += NT) {
            float z;
            uint32_t key;
            if (element(s, r, i, &z, &key) && kept1(r, z, key))
                m1 += qs_sample_weight(z, r.zmax);
        }
        m1 = block_sum<NT>(m1, s);
        r.tp = select_key<NT>(s, r, true, qs_sample_top_p_need(top_p, m1));
    }

    // The draw. Warp w sums K2 over its segment [w*seg, (w+1)*seg) of ids.
    constexpr int NW = NT / 32;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int seg = (V + NW - 1) / NW;
    const int seg_lo = warp * seg, seg_hi = min(V, seg_lo + seg);
    u64 m = 0;
    for (int i = seg_lo + lane; i < seg_hi; i += 32) {
        float z;
        uint32_t key;
        if (element(s, r, i, &z, &key) && key >= r.tp && kept1(r, z, key))
            m += qs_sample_weight(z, r.zmax);
    }
    m = warp_sum(m);
    if (lane == 0)
        s.warp_tot[warp] = m;
    if (threadIdx.x == 0) {
        s.res_seg = -1;
        s.res_token = top_id;
    }
    __syncthreads();
    if (warp == 0) {
        u64 mine = lane < NW ? s.warp_tot[lane] : 0;
        u64 incl = warp_incl_scan(mine, lane);
        u64 m2 = __shfl_sync(kFull, incl, NW - 1);
        u64 target = qs_sample_target(p->u, m2);
        if (lane < NW && incl - mine <= target && target < incl) {
            s.res_seg = lane;
            s.res_target = target - (incl - mine);
        }
    }
    __syncthreads();
    const int sg = s.res_seg;
    if (sg >= 0) {
        const u64 target = s.res_target;
        const int lo = sg * seg, hi = min(V, lo + seg);
        u64 carry = 0;
        for (int base = lo; base < hi; base += NT) { // block-uniform loop
            int i = base + (int)threadIdx.x;
            u64 w = 0;
            float z;
            uint32_t key;
            if (i < hi && element(s, r, i, &z, &key) && key >= r.tp && kept1(r, z, key))
                w = qs_sample_weight(z, r.zmax);
            u64 total;
            u64 before = carry + block_excl_scan<NT>(w, &total, s);
            if (w && before <= target && target < before + w)
                s.res_token = i;
            carry += total;
            if (carry > target)
                break;
        }
    }
    __syncthreads();
    if (threadIdx.x == 0)
        tokens[blockIdx.x] = s.res_token;
}

} // namespace

extern "C" int qs_cuda_sample(int32_t *tokens, const void *logits, const qs_sample_row *rows, int64_t n_rows,
                              int64_t vocab, qs_err *err)
{
    if (n_rows <= 0)
        return 0;
    if (vocab < 1 || vocab > QS_SAMPLE_MAX_VOCAB)
        return qs_errf(err, "sample: vocab_size %lld outside 1..%d", (long long)vocab, QS_SAMPLE_MAX_VOCAB);
    if (n_rows > 65535)
        return qs_errf(err, "sample: %lld rows, at most 65535 a call", (long long)n_rows);
    cudaStream_t st = qs_cuda_stream();
    // A few rows: the widest block, so that one row does not leave its SM half idle; many rows:
    // two blocks of 512 an SM.
    if (n_rows <= 64)
        sample_kernel<1024><<<(unsigned)n_rows, 1024, 0, st>>>(tokens, (const bf16 *)logits, rows, (int)vocab);
    else
        sample_kernel<512><<<(unsigned)n_rows, 512, 0, st>>>(tokens, (const bf16 *)logits, rows, (int)vocab);
    QS_LAUNCH_CHECK(err);
    return 0;
}
