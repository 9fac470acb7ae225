// llama4_cuda.cu — the CUDA ops only Llama 4 uses (ops.h: rope_interleaved, attn_temperature,
// moe_route_scale_input, add), BF16 activations with FP32 math, the same formulas as the CPU's
// (src/cpu/ops_cpu_llama4.c). Each is a plain grid-stride loop on the current stream: they are a
// few elementwise passes per layer, far from the GEMMs' cost.
#include <cuda_bf16.h>
#include <math.h>

#include "cuda_check.h"
#include "cuda_stream.h"
#include "qs_cuda_ops.h"

namespace {

typedef __nv_bfloat16 bf16;

int grid_for(int64_t count, int threads)
{
    int64_t g = (count + threads - 1) / threads;
    return (int)(g > 65535 * 16 ? 65535 * 16 : (g < 1 ? 1 : g));
}

// One thread per (token, head, pair i): rotates (2i, 2i + 1) as a complex number.
__global__ void rope_interleaved_kernel(bf16 *x, const int32_t *pos, const float *inv_freq, int64_t n_tokens,
                                        int n_heads, int head_dim)
{
    int half = head_dim / 2;
    int64_t total = n_tokens * n_heads * half;
    for (int64_t idx = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; idx < total;
         idx += (int64_t)gridDim.x * blockDim.x) {
        int i = (int)(idx % half);
        int64_t th = idx / half;
        float angle = (float)pos[th / n_heads] * inv_freq[i];
        float c, s;
        sincosf(angle, &s, &c);
        bf16 *p = x + th * head_dim + 2 * i;
        float re = __bfloat162float(p[0]), im = __bfloat162float(p[1]);
        p[0] = __float2bfloat16_rn(re * c - im * s);
        p[1] = __float2bfloat16_rn(re * s + im * c);
    }
}

__global__ void temperature_kernel(bf16 *x, const int32_t *pos, int64_t n_tokens, int64_t n, float floor_scale,
                                   float attn_scale)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n_tokens * n;
         i += (int64_t)gridDim.x * blockDim.x) {
        float s = log1pf(floorf(((float)pos[i / n] + 1.0f) / floor_scale)) * attn_scale + 1.0f;
        x[i] = __float2bfloat16_rn(__bfloat162float(x[i]) * s);
    }
}

// One block per token: thread 0 picks the top expert (ties: lower id), then the block scales the row.
__global__ void route_scale_kernel(const bf16 *logits, const bf16 *x, bf16 *xs, int32_t *ids, float *w, int n_experts,
                                   int64_t d)
{
    __shared__ float s_scale;
    int64_t t = blockIdx.x;
    if (threadIdx.x == 0) {
        const bf16 *r = logits + t * n_experts;
        int best = 0;
        float bv = __bfloat162float(r[0]);
        for (int e = 1; e < n_experts; e++) {
            float v = __bfloat162float(r[e]);
            if (v > bv)
                best = e, bv = v;
        }
        ids[t] = best;
        w[t] = 1.0f;
        s_scale = 1.0f / (1.0f + expf(-bv));
    }
    __syncthreads();
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x)
        xs[t * d + i] = __float2bfloat16_rn(__bfloat162float(x[t * d + i]) * s_scale);
}

__global__ void add_kernel(bf16 *y, const bf16 *x, int64_t n)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        y[i] = __float2bfloat16_rn(__bfloat162float(y[i]) + __bfloat162float(x[i]));
}

} // namespace

extern "C" int qs_cuda_rope_interleaved(void *x, const int32_t *pos, const void *inv_freq, int64_t n_tokens,
                                        int n_heads, int head_dim, qs_err *err)
{
    rope_interleaved_kernel<<<grid_for(n_tokens * n_heads * (head_dim / 2), 256), 256, 0, qs_cuda_stream()>>>(
        (bf16 *)x, pos, (const float *)inv_freq, n_tokens, n_heads, head_dim);
    QS_LAUNCH_CHECK(err);
    return 0;
}

extern "C" int qs_cuda_attn_temperature(void *x, const int32_t *pos, int64_t n_tokens, int64_t n, float floor_scale,
                                        float attn_scale, qs_err *err)
{
    temperature_kernel<<<grid_for(n_tokens * n, 256), 256, 0, qs_cuda_stream()>>>((bf16 *)x, pos, n_tokens, n,
                                                                                  floor_scale, attn_scale);
    QS_LAUNCH_CHECK(err);
    return 0;
}

extern "C" int qs_cuda_moe_route_scale_input(const void *router_logits, const void *x, void *x_scaled,
                                             int32_t *topk_ids, float *topk_weights, int64_t n_tokens, int n_experts,
                                             int64_t d, qs_err *err)
{
    if (n_tokens == 0)
        return 0;
    route_scale_kernel<<<(unsigned)n_tokens, 256, 0, qs_cuda_stream()>>>(
        (const bf16 *)router_logits, (const bf16 *)x, (bf16 *)x_scaled, topk_ids, topk_weights, n_experts, d);
    QS_LAUNCH_CHECK(err);
    return 0;
}

extern "C" int qs_cuda_add(void *y, const void *x, int64_t n, qs_err *err)
{
    add_kernel<<<grid_for(n, 256), 256, 0, qs_cuda_stream()>>>((bf16 *)y, (const bf16 *)x, n);
    QS_LAUNCH_CHECK(err);
    return 0;
}
