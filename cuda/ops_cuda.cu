// ops_cuda.cu — memory and elementwise / row ops of the CUDA ops table (see qs_cuda_ops.h):
// embedding, RMSNorm (plain and fused with the residual add), bias, RoPE, SwiGLU, MoE routing,
// row gathers. Attention and the KV cache writes live in attention_cuda.cu. All work goes to the
// calling thread's current stream (cuda_stream.h: the default one unless the forward pass set its
// own); activations go to the host through a page-locked staging buffer with one asynchronous
// copy and one wait on that stream.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mutex>
#include <stdlib.h>
#include <string.h>
#include <vector>

#include "cuda_check.h"
#include "cuda_stream.h"
#include "launch_pdl.cuh"
#include "qs_cuda_ops.h"
#include "rope_pair.cuh"

extern "C" {
#include "core/tensor.h"
}

int qs_cuda_attention(void *out, const void *q, const void *k_cache, const void *v_cache, const qs_attn_batch *b,
                      int n_heads, int n_kv_heads, int head_dim, float scale, qs_act_order order,
                      qs_err *err);
int qs_cuda_kv_write(void *k_cache, void *v_cache, const void *k, const void *v, const qs_attn_batch *b,
                     int n_kv_heads, int head_dim, qs_err *err);

namespace {

typedef __nv_bfloat16 bf16;

int grid_for(int64_t count, int threads)
{
    int64_t g = (count + threads - 1) / threads;
    return (int)(g > 65535 * 16 ? 65535 * 16 : (g < 1 ? 1 : g));
}

void *cuda_alloc(size_t bytes, qs_err *err)
{
    void *p = nullptr;
    cudaError_t rc = cudaMalloc(&p, bytes ? bytes : 1);
    if (rc != cudaSuccess) {
        qs_errf(err, "cudaMalloc of %zu bytes failed: %s", bytes, cudaGetErrorString(rc));
        return nullptr;
    }
    rc = cudaMemset(p, 0, bytes ? bytes : 1);
    if (rc != cudaSuccess) {
        cudaFree(p);
        qs_errf(err, "cudaMemset failed: %s", cudaGetErrorString(rc));
        return nullptr;
    }
    return p;
}

void cuda_free(void *p)
{
    if (p)
        cudaFree(p);
}

int cuda_to_device(void *dst, const void *src, size_t bytes, qs_err *err)
{
    QS_CUDA_TRY(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), err);
    return 0;
}

int cuda_to_host(void *dst, const void *src, size_t bytes, qs_err *err)
{
    QS_CUDA_TRY(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), err);
    return 0;
}

void *cuda_upload_tensor(const qs_tensor *t, qs_err *err)
{
    if (!t->data) {
        qs_errf(err, "tensor %s has no data loaded", t->name);
        return nullptr;
    }
    std::vector<bf16> host((size_t)t->numel);
    for (int64_t i = 0; i < t->numel; i++)
        host[(size_t)i] = __float2bfloat16_rn(qs_tensor_get_f32(t, i));
    void *p = cuda_alloc(host.size() * sizeof(bf16), err);
    if (p && cuda_to_device(p, host.data(), host.size() * sizeof(bf16), err)) {
        cudaFree(p);
        return nullptr;
    }
    return p;
}

// Page-locked staging for activations on their way to the host (the logits of every step): a
// copy from pageable memory would be staged by the driver and wait for the device anyway.
std::mutex g_stage_mu;
bf16 *g_stage = nullptr;
size_t g_stage_n = 0;

int cuda_acts_to_host(float *dst, const void *src, int64_t n, qs_err *err)
{
    if (n <= 0)
        return 0;
    std::lock_guard<std::mutex> lock(g_stage_mu);
    if ((size_t)n > g_stage_n) {
        if (g_stage)
            cudaFreeHost(g_stage);
        g_stage = nullptr;
        g_stage_n = 0;
        size_t want = (size_t)n + (size_t)n / 4;
        QS_CUDA_TRY(cudaMallocHost((void **)&g_stage, want * sizeof(bf16)), err);
        g_stage_n = want;
    }
    cudaStream_t s = qs_cuda_stream();
    QS_CUDA_TRY(cudaMemcpyAsync(g_stage, src, (size_t)n * sizeof(bf16), cudaMemcpyDeviceToHost, s), err);
    QS_CUDA_TRY(cudaStreamSynchronize(s), err);
    for (int64_t i = 0; i < n; i++)
        dst[i] = __bfloat162float(g_stage[i]);
    return 0;
}

int cuda_acts_from_host(void *dst, const float *src, int64_t n, qs_err *err)
{
    std::vector<bf16> host((size_t)n);
    for (int64_t i = 0; i < n; i++)
        host[(size_t)i] = __float2bfloat16_rn(src[i]);
    return cuda_to_device(dst, host.data(), (size_t)n * sizeof(bf16), err);
}

__global__ void embedding_kernel(bf16 *out, const bf16 *table, const int32_t *ids, int64_t n_tokens, int64_t d)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n_tokens * d;
         i += (int64_t)gridDim.x * blockDim.x)
        out[i] = table[(int64_t)ids[i / d] * d + i % d];
}

int cuda_embedding(void *out, const void *table, const int32_t *ids, int64_t n_tokens, int64_t d, qs_err *err)
{
    embedding_kernel<<<grid_for(n_tokens * d, 256), 256, 0, qs_cuda_stream()>>>((bf16 *)out, (const bf16 *)table, ids,
                                                                                n_tokens, d);
    QS_LAUNCH_CHECK(err);
    return 0;
}

__device__ float block_sum(float v)
{
    __shared__ float partial[32];
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    __syncthreads();
    if (lane == 0)
        partial[wid] = v;
    __syncthreads();
    int nw = (blockDim.x + 31) >> 5;
    v = lane < nw ? partial[lane] : 0.f;
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// One RMSNorm output as transformers computes it: normalise in float, round to the activation
// dtype, then scale (the caller rounds the product).
__device__ __forceinline__ float rms_scaled(float v, float inv, float w)
{
    return __bfloat162float(__float2bfloat16_rn(v * inv)) * w;
}

// One block per row. residual may be null (plain RMSNorm of x); otherwise residual += x first and
// the norm reads the updated residual. out's row in `order` (act_order.h).
__global__ void rmsnorm_kernel(bf16 *out, const bf16 *x, bf16 *residual, const bf16 *w, int64_t d, float eps,
                               qs_act_order order)
{
    qs_pdl_wait_then_release();
    int64_t row = blockIdx.x;
    const bf16 *xr = x + row * d;
    bf16 *rr = residual ? residual + row * d : nullptr;
    float ss = 0.f;
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
        float v = __bfloat162float(xr[i]);
        if (rr) {
            bf16 sum = __float2bfloat16_rn(__bfloat162float(rr[i]) + v);
            rr[i] = sum;
            v = __bfloat162float(sum);
        }
        ss += v * v;
    }
    float inv = rsqrtf(block_sum(ss) / (float)d + eps);
    const bf16 *src = rr ? rr : xr;
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
        out[row * d + qs_act_position(order, i)] =
            __float2bfloat16_rn(rms_scaled(__bfloat162float(src[i]), inv, __bfloat162float(w[i])));
    }
}

// The same norm with the row held in registers, pairs of elements per thread (bf16x2 loads and
// stores; the marlin orders move pairs together, act_order.h): x, the residual and w are all
// loaded before the reduction, so a row costs one round trip to memory where rmsnorm_kernel's
// second pass and late weight loads cost two (a decode step runs it twice per layer).
template <int kPairs>
__global__ void rmsnorm_pairs_kernel(bf16 *out, const bf16 *x, bf16 *residual, const bf16 *w, int64_t d, float eps,
                                     qs_act_order order)
{
    qs_pdl_wait_then_release();
    typedef __nv_bfloat162 bf16x2;
    int64_t row = blockIdx.x;
    const int64_t pairs = d / 2;
    const bf16x2 *xr = reinterpret_cast<const bf16x2 *>(x + row * d);
    bf16x2 *rr = residual ? reinterpret_cast<bf16x2 *>(residual + row * d) : nullptr;
    const bf16x2 *wr = reinterpret_cast<const bf16x2 *>(w);
    float2 v[kPairs], wv[kPairs];
    float ss = 0.f;
#pragma unroll
    for (int k = 0; k < kPairs; k++) {
        int64_t p = threadIdx.x + (int64_t)k * blockDim.x;
        v[k] = make_float2(0.f, 0.f);
        if (p < pairs) {
            v[k] = __bfloat1622float2(xr[p]);
            wv[k] = __bfloat1622float2(wr[p]);
            if (rr) {
                float2 r = __bfloat1622float2(rr[p]);
                bf16x2 sum = __floats2bfloat162_rn(r.x + v[k].x, r.y + v[k].y);
                rr[p] = sum;
                v[k] = __bfloat1622float2(sum);
            }
        }
        ss += v[k].x * v[k].x;
        ss += v[k].y * v[k].y;
    }
    float inv = rsqrtf(block_sum(ss) / (float)d + eps);
#pragma unroll
    for (int k = 0; k < kPairs; k++) {
        int64_t p = threadIdx.x + (int64_t)k * blockDim.x;
        if (p < pairs) {
            *reinterpret_cast<bf16x2 *>(out + row * d + qs_act_position(order, 2 * p)) =
                __floats2bfloat162_rn(rms_scaled(v[k].x, inv, wv[k].x), rms_scaled(v[k].y, inv, wv[k].y));
        }
    }
}

int threads_for_row(int64_t d) { return d >= 1024 ? 1024 : (d >= 256 ? 256 : 64); }

// rows of d through the pairs kernel where a thread's share fits its registers (d even, up to 8192
// with 1024 threads), else rmsnorm_kernel.
cudaError_t launch_rmsnorm(bf16 *out, const bf16 *x, bf16 *residual, const bf16 *w, int64_t rows, int64_t d,
                          float eps, qs_act_order order)
{
    const int threads = threads_for_row(d);
    const int64_t per_thread = (d / 2 + threads - 1) / threads;
    auto launch = [&](auto kernel) {
        return qs_launch_pdl(kernel, dim3((unsigned)rows), dim3(threads), 0, qs_cuda_stream(), qs_ops_pdl(), out, x,
                             residual, w, d, eps, order);
    };
    if (d % 2 == 0 && per_thread == 1)
        return launch(rmsnorm_pairs_kernel<1>);
    if (d % 2 == 0 && per_thread == 2)
        return launch(rmsnorm_pairs_kernel<2>);
    if (d % 2 == 0 && per_thread <= 4)
        return launch(rmsnorm_pairs_kernel<4>);
    return launch(rmsnorm_kernel);
}

int cuda_rmsnorm(void *out, const void *x, const void *w, int64_t rows, int64_t d, float eps, qs_err *err)
{
    if (rows == 0)
        return 0;
    QS_CUDA_TRY(launch_rmsnorm((bf16 *)out, (const bf16 *)x, nullptr, (const bf16 *)w, rows, d, eps, QS_ACT_NATURAL),
                err);
    return 0;
}

int cuda_add_rmsnorm(void *residual, const void *x, void *out, const void *w, int64_t rows, int64_t d, float eps,
                     qs_act_order order, qs_err *err)
{
    if (qs_act_order_check(order, d, "add_rmsnorm", err))
        return -1;
    if (rows == 0)
        return 0;
    QS_CUDA_TRY(launch_rmsnorm((bf16 *)out, (const bf16 *)x, (bf16 *)residual, (const bf16 *)w, rows, d, eps, order),
                err);
    return 0;
}

__global__ void add_bias_kernel(bf16 *y, const bf16 *bias, int64_t rows, int64_t n)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < rows * n; i += (int64_t)gridDim.x * blockDim.x)
        y[i] = __float2bfloat16_rn(__bfloat162float(y[i]) + __bfloat162float(bias[i % n]));
}

int cuda_add_bias(void *y, const void *bias, int64_t rows, int64_t n, qs_err *err)
{
    add_bias_kernel<<<grid_for(rows * n, 256), 256, 0, qs_cuda_stream()>>>((bf16 *)y, (const bf16 *)bias, rows, n);
    QS_LAUNCH_CHECK(err);
    return 0;
}

// One thread per (token, head, i < head_dim/2): rotates the pair (i, i + half).
__global__ void rope_kernel(bf16 *x, const int32_t *pos, const float *inv_freq, int64_t n_tokens, int n_heads,
                            int head_dim)
{
    int half = head_dim / 2;
    int64_t total = n_tokens * n_heads * half;
    for (int64_t idx = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; idx < total;
         idx += (int64_t)gridDim.x * blockDim.x) {
        int i = (int)(idx % half);
        int64_t th = idx / half; // token * n_heads + head
        int64_t t = th / n_heads;
        bf16 *row = x + th * head_dim;
        qs_rope_rotate(&row[i], &row[i + half], row[i], row[i + half], pos[t], inv_freq[i]);
    }
}

int cuda_rope(void *x, const int32_t *pos, const void *inv_freq, int64_t n_tokens, int n_heads, int head_dim,
              qs_err *err)
{
    rope_kernel<<<grid_for(n_tokens * n_heads * (head_dim / 2), 256), 256, 0, qs_cuda_stream()>>>(
        (bf16 *)x, pos, (const float *)inv_freq, n_tokens, n_heads, head_dim);
    QS_LAUNCH_CHECK(err);
    return 0;
}

__global__ void swiglu_kernel(bf16 *out, const bf16 *gate, const bf16 *up, int64_t count)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < count; i += (int64_t)gridDim.x * blockDim.x) {
        float g = __bfloat162float(gate[i]);
        float silu = g / (1.f + __expf(-g));
        out[i] = __float2bfloat16_rn(__bfloat162float(__float2bfloat16_rn(silu)) * __bfloat162float(up[i]));
    }
}

int cuda_swiglu(void *out, const void *gate, const void *up, int64_t rows, int64_t n, qs_err *err)
{
    swiglu_kernel<<<grid_for(rows * n, 256), 256, 0, qs_cuda_stream()>>>((bf16 *)out, (const bf16 *)gate,
                                                                         (const bf16 *)up, rows * n);
    QS_LAUNCH_CHECK(err);
    return 0;
}

// One warp per token: lane l holds experts l, l + 32, ... (n_experts <= 512, so at most 16 a lane);
// softmax over the router logits in float through warp reductions, then top-k in k rounds of a
// warp arg-max (ties: the lower expert id, as the CPU reference), optional renormalisation. A
// thread per token with a serial scan over the experts per pick took ~170 us a layer at
// Qwen3-30B-A3B's 128 experts x top-8 (ncu, H200), more than the layer's expert weights.
constexpr int kRouteMaxPerLane = 16;
constexpr int kRouteWarps = 4;

__device__ __forceinline__ void route_argmax(float &v, int &e)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        float ov = __shfl_xor_sync(0xffffffffu, v, o);
        int oe = __shfl_xor_sync(0xffffffffu, e, o);
        bool take = oe >= 0 && (e < 0 || ov > v || (!(ov < v) && oe < e));
        if (take)
            v = ov, e = oe;
    }
}

__global__ __launch_bounds__(kRouteWarps * 32) void moe_route_kernel(const bf16 *logits, int32_t *ids,
                                                                     float *weights, int64_t n_tokens,
                                                                     int n_experts, int top_k, bool norm)
{
    const int lane = threadIdx.x & 31;
    const int64_t t = blockIdx.x * (int64_t)kRouteWarps + (threadIdx.x >> 5);
    if (t >= n_tokens)
        return;
    const bf16 *row = logits + t * n_experts;
    float v[kRouteMaxPerLane];
    float mx = -INFINITY;
#pragma unroll
    for (int i = 0; i < kRouteMaxPerLane; i++) {
        int e = lane + 32 * i;
        v[i] = e < n_experts ? __bfloat162float(row[e]) : -INFINITY;
        mx = fmaxf(mx, v[i]);
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
    float sum = 0.f;
#pragma unroll
    for (int i = 0; i < kRouteMaxPerLane; i++)
        if (lane + 32 * i < n_experts)
            sum += __expf(v[i] - mx);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        sum += __shfl_xor_sync(0xffffffffu, sum, o);
    unsigned taken = 0;
    float picked_sum = 0.f, my_prob = 0.f;
    for (int j = 0; j < top_k; j++) {
        int best = -1;
        float best_v = -INFINITY;
#pragma unroll
        for (int i = 0; i < kRouteMaxPerLane; i++) {
            int e = lane + 32 * i;
            if (e < n_experts && !(taken >> i & 1u) && (best < 0 || v[i] > best_v))
                best = e, best_v = v[i];
        }
        route_argmax(best_v, best);
        if (best >= 0 && (best & 31) == lane)
            taken |= 1u << (best >> 5);
        float prob = __expf(best_v - mx) / sum;
        picked_sum += prob;
        if (lane == j) {
            ids[t * top_k + j] = best;
            my_prob = prob;
        }
    }
    if (norm && picked_sum > 0.f)
        my_prob /= picked_sum;
    if (lane < top_k)
        weights[t * top_k + lane] = my_prob;
}

int cuda_moe_route(const void *router_logits, int32_t *topk_ids, float *topk_weights, int64_t n_tokens, int n_experts,
                   int top_k, bool norm_topk, qs_err *err)
{
    if (n_tokens == 0)
        return 0;
    if (n_experts > 32 * kRouteMaxPerLane || top_k > 32)
        return qs_errf(err, "moe_route: %d experts, top %d: at most %d experts and top 32 on CUDA", n_experts, top_k,
                       32 * kRouteMaxPerLane);
    const int64_t blocks = (n_tokens + kRouteWarps - 1) / kRouteWarps;
    moe_route_kernel<<<(unsigned)blocks, kRouteWarps * 32, 0, qs_cuda_stream()>>>(
        (const bf16 *)router_logits, topk_ids, topk_weights, n_tokens, n_experts, top_k, norm_topk);
    QS_LAUNCH_CHECK(err);
    return 0;
}

__global__ void gather_rows_kernel(bf16 *out, const bf16 *x, const int32_t *rows, int64_t n, int64_t d)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n * d; i += (int64_t)gridDim.x * blockDim.x)
        out[i] = x[(int64_t)rows[i / d] * d + i % d];
}

int cuda_gather_rows(void *out, const void *x, const int32_t *rows, int64_t n, int64_t d, qs_err *err)
{
    gather_rows_kernel<<<grid_for(n * d, 256), 256, 0, qs_cuda_stream()>>>((bf16 *)out, (const bf16 *)x, rows, n, d);
    QS_LAUNCH_CHECK(err);
    return 0;
}

// Expert parallelism (ops.h moe_expert_slice): this rank's slots to local ids; the others weigh 0
// and take id -1, which the CUDA MoE kernels skip (moe_fused.cu, moe_grouped.cu).
__global__ void moe_expert_slice_kernel(int32_t *ids, float *w, int64_t n, int first, int count)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        int local = ids[i] - first;
        bool mine = local >= 0 && local < count;
        ids[i] = mine ? local : -1;
        if (!mine)
            w[i] = 0.f;
    }
}

int cuda_moe_expert_slice(int32_t *topk_ids, float *topk_weights, int64_t n, int first, int count, qs_err *err)
{
    if (first < 0 || count <= 0)
        return qs_errf(err, "moe_expert_slice: experts %d..%d", first, first + count);
    if (n == 0)
        return 0;
    moe_expert_slice_kernel<<<grid_for(n, 256), 256, 0, qs_cuda_stream()>>>(topk_ids, topk_weights, n, first, count);
    QS_LAUNCH_CHECK(err);
    return 0;
}

const qs_ops kCudaOps = {
    "cuda",
    QS_PLATFORM_CUDA,
    sizeof(bf16),
    cuda_alloc,
    cuda_free,
    cuda_to_device,
    cuda_to_host,
    cuda_upload_tensor,
    cuda_acts_to_host,
    cuda_acts_from_host,
    cuda_embedding,
    cuda_rmsnorm,
    cuda_add_rmsnorm,
    cuda_add_bias,
    cuda_rope,
    qs_cuda_kv_write,
    qs_cuda_attention,
    cuda_swiglu,
    cuda_moe_route,
    cuda_gather_rows,
    qs_cuda_split_qkv,
    qs_cuda_swiglu_gate_up,
    qs_cuda_qkv_rope_cache,
    &qs_cuda_graph_ops,
    qs_cuda_sample,
    qs_cuda_rope_interleaved,
    qs_cuda_attn_temperature,
    qs_cuda_moe_route_scale_input,
    qs_cuda_add,
    cuda_moe_expert_slice,
};

} // namespace

extern "C" const qs_ops *qs_ops_cuda(void) { return &kCudaOps; }
