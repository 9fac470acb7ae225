// dequant.cu — weight expansion to BF16 and activation quantization kernels (see dequant.h).
// These are plain elementwise / per-row-reduction kernels: correctness first; the fast paths
// (marlin) dequantize in registers instead and never materialise BF16 weights.
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "dequant.h"

namespace {

__device__ __forceinline__ float e4m3_to_float(uint8_t b)
{
    __half_raw h = __nv_cvt_fp8_to_halfraw((__nv_fp8_storage_t)b, __NV_E4M3);
    return __half2float(__half(h));
}

__device__ __forceinline__ uint8_t float_to_e4m3(float x)
{
    return (uint8_t)__nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3);
}

__constant__ float kE2M1[16] = {0.f, 0.5f, 1.f, 1.5f, 2.f, 3.f, 4.f, 6.f,
                                -0.f, -0.5f, -1.f, -1.5f, -2.f, -3.f, -4.f, -6.f};

// Round to the nearest E2M1 magnitude, ties to the even mantissa, saturating at 6.
__device__ __forceinline__ float round_e2m1(float x)
{
    float a = fminf(fabsf(x), 6.f), r;
    if (a <= 0.25f) r = 0.f;
    else if (a < 0.75f) r = 0.5f;
    else if (a <= 1.25f) r = 1.f;
    else if (a < 1.75f) r = 1.5f;
    else if (a <= 2.5f) r = 2.f;
    else if (a < 3.5f) r = 3.f;
    else if (a <= 5.f) r = 4.f;
    else r = 6.f;
    return copysignf(r, x);
}

__global__ void dequant_fp8_kernel(const uint8_t *w, const float *scale, int layout, int64_t n, int64_t k,
                                   int block_n, int block_k, int64_t blocks_k, __nv_bfloat16 *out)
{
    int64_t total = n * k;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t r = i / k, c = i % k;
        float s;
        switch (layout) {
        case QS_WSCALE_TENSOR: s = scale[0]; break;
        case QS_WSCALE_CHANNEL: s = scale[r]; break;
        case QS_WSCALE_BLOCK: s = scale[(r / block_n) * blocks_k + c / block_k]; break;
        default: s = 1.f; break;
        }
        out[i] = __float2bfloat16_rn(e4m3_to_float(w[i]) * s);
    }
}

__global__ void dequant_nvfp4_kernel(const uint8_t *packed, const uint8_t *block_scale, float global, int64_t n,
                                     int64_t k, __nv_bfloat16 *out)
{
    int64_t pairs = n * (k / 2);
    for (int64_t p = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; p < pairs;
         p += (int64_t)gridDim.x * blockDim.x) {
        int64_t r = p / (k / 2), c = (p % (k / 2)) * 2;
        uint8_t byte = packed[p];
        float s = e4m3_to_float(block_scale[r * (k / 16) + c / 16]) * global;
        out[r * k + c] = __float2bfloat16_rn(kE2M1[byte & 0xF] * s);
        out[r * k + c + 1] = __float2bfloat16_rn(kE2M1[byte >> 4] * s);
    }
}

__global__ void to_bf16_kernel(const void *w, int bits, bool is_f16, int64_t count, __nv_bfloat16 *out)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < count;
         i += (int64_t)gridDim.x * blockDim.x) {
        if (bits == 32)
            out[i] = __float2bfloat16_rn(((const float *)w)[i]);
        else if (is_f16)
            out[i] = __float2bfloat16_rn(__half2float(((const __half *)w)[i]));
        else
            out[i] = ((const __nv_bfloat16 *)w)[i];
    }
}

__device__ __forceinline__ float block_reduce_max(float v)
{
    __shared__ float warp_max[32];
    for (int o = 16; o > 0; o >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    if (lane == 0)
        warp_max[wid] = v;
    __syncthreads();
    int nwarps = (blockDim.x + 31) >> 5;
    v = lane < nwarps ? warp_max[lane] : 0.f;
    if (wid == 0)
        for (int o = 16; o > 0; o >>= 1)
            v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    __shared__ float result;
    if (threadIdx.x == 0)
        result = v;
    __syncthreads();
    return result;
}

// One block per (row, group); group == k for per-token.
__global__ void act_amax_kernel(const __nv_bfloat16 *x, int64_t k, int group, int64_t stride, float *amax_out,
                                bool group_major)
{
    int64_t row = blockIdx.x, g = blockIdx.y;
    int64_t begin = g * group, end = min(begin + (int64_t)group, k);
    float a = 0.f;
    for (int64_t c = begin + threadIdx.x; c < end; c += blockDim.x)
        a = fmaxf(a, fabsf(__bfloat162float(x[row * k + c])));
    a = block_reduce_max(a);
    if (threadIdx.x == 0)
        amax_out[group_major ? g * stride + row : row * gridDim.y + g] = a;
}

// amax -> scale in place (scale = amax / 448, with 0 kept from dividing by zero later).
__global__ void amax_to_scale_kernel(float *s, int64_t count)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < count;
         i += (int64_t)gridDim.x * blockDim.x)
        s[i] = s[i] / 448.f;
}

__global__ void reduce_max_kernel(const float *v, int64_t count, float *out)
{
    float a = 0.f;
    for (int64_t i = threadIdx.x; i < count; i += blockDim.x)
        a = fmaxf(a, v[i]);
    a = block_reduce_max(a);
    if (threadIdx.x == 0)
        out[0] = a / 448.f;
}

__global__ void quant_fp8_act_kernel(const __nv_bfloat16 *x, int64_t m, int64_t k, int mode, int group,
                                     int64_t stride, const float *scales, uint8_t *q, __nv_bfloat16 *qdq)
{
    int64_t total = m * k;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t r = i / k, c = i % k;
        float s;
        if (mode == QS_ACTQ_DYNAMIC_TOKEN)
            s = scales[r];
        else if (mode == QS_ACTQ_DYNAMIC_GROUP)
            s = scales[(c / group) * stride + r];
        else
            s = scales[0];
        float v = __bfloat162float(x[i]);
        uint8_t b = float_to_e4m3(s > 0.f ? v / s : 0.f);
        if (q)
            q[i] = b;
        if (qdq)
            qdq[i] = __float2bfloat16_rn(e4m3_to_float(b) * s);
    }
}

// One warp per 16-element block (k is a multiple of 16).
__global__ void qdq_nvfp4_act_kernel(const __nv_bfloat16 *x, int64_t m, int64_t k, float global,
                                     __nv_bfloat16 *out)
{
    int64_t blocks = m * (k / 16);
    int64_t b = blockIdx.x * (int64_t)(blockDim.x / 16) + threadIdx.x / 16;
    int lane16 = threadIdx.x % 16;
    if (b >= blocks)
        return;
    int64_t base = (b / (k / 16)) * k + (b % (k / 16)) * 16;
    float v = __bfloat162float(x[base + lane16]);
    float a = fabsf(v);
    for (int o = 8; o > 0; o >>= 1)
        a = fmaxf(a, __shfl_xor_sync(0xffffffffu, a, o, 16));
    float sb = e4m3_to_float(float_to_e4m3(a / 6.f / global));
    float denom = sb * global;
    float qv = denom > 0.f ? round_e2m1(v / denom) : 0.f;
    out[base + lane16] = __float2bfloat16_rn(qv * denom);
}

int grid_for(int64_t count, int threads)
{
    int64_t g = (count + threads - 1) / threads;
    return (int)(g > 65535 * 8 ? 65535 * 8 : (g < 1 ? 1 : g));
}

} // namespace

void qs_launch_dequant_fp8(const uint8_t *w, const float *scale, qs_weight_scale_layout layout, int64_t n,
                           int64_t k, int block_n, int block_k, __nv_bfloat16 *out, cudaStream_t s)
{
    int64_t blocks_k = block_k > 0 ? (k + block_k - 1) / block_k : 1;
    dequant_fp8_kernel<<<grid_for(n * k, 256), 256, 0, s>>>(w, scale, (int)layout, n, k, block_n, block_k,
                                                            blocks_k, out);
}

void qs_launch_dequant_nvfp4(const uint8_t *packed, const uint8_t *block_scale, float global_scale, int64_t n,
                             int64_t k, __nv_bfloat16 *out, cudaStream_t s)
{
    dequant_nvfp4_kernel<<<grid_for(n * k / 2, 256), 256, 0, s>>>(packed, block_scale, global_scale, n, k, out);
}

void qs_launch_to_bf16(const void *w, int dtype_bits, bool is_f16, int64_t count, __nv_bfloat16 *out,
                       cudaStream_t s)
{
    to_bf16_kernel<<<grid_for(count, 256), 256, 0, s>>>(w, dtype_bits, is_f16, count, out);
}

int qs_launch_quant_fp8_act(const __nv_bfloat16 *x, int64_t m, int64_t k, qs_actq_mode mode, int group,
                            int64_t stride, float *scales, uint8_t *q, __nv_bfloat16 *qdq, cudaStream_t s)
{
    if (m <= 0 || k <= 0)
        return 0;
    switch (mode) {
    case QS_ACTQ_STATIC_TENSOR:
        break;
    case QS_ACTQ_DYNAMIC_TENSOR:
        // Per-row amax into the q-sized scratch is not available; use scales[1..m] as scratch.
        act_amax_kernel<<<dim3((unsigned)m, 1), 256, 0, s>>>(x, k, (int)k, m, scales + 1, false);
        reduce_max_kernel<<<1, 256, 0, s>>>(scales + 1, m, scales);
        break;
    case QS_ACTQ_DYNAMIC_TOKEN:
        act_amax_kernel<<<dim3((unsigned)m, 1), 256, 0, s>>>(x, k, (int)k, m, scales, false);
        amax_to_scale_kernel<<<grid_for(m, 256), 256, 0, s>>>(scales, m);
        break;
    case QS_ACTQ_DYNAMIC_GROUP: {
        int64_t groups = (k + group - 1) / group;
        act_amax_kernel<<<dim3((unsigned)m, (unsigned)groups), 128, 0, s>>>(x, k, group, stride, scales, true);
        amax_to_scale_kernel<<<grid_for(stride * groups, 256), 256, 0, s>>>(scales, stride * groups);
        break;
    }
    }
    quant_fp8_act_kernel<<<grid_for(m * k, 256), 256, 0, s>>>(x, m, k, (int)mode, group, stride, scales, q, qdq);
    return 0;
}

__global__ void fill_kernel(const float *src, float *dst, int64_t n)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        dst[i] = src[0];
}

void qs_launch_fill_from_scalar(const float *src, float *dst, int64_t n, cudaStream_t s)
{
    fill_kernel<<<grid_for(n, 256), 256, 0, s>>>(src, dst, n);
}

void qs_launch_qdq_nvfp4_act(const __nv_bfloat16 *x, int64_t m, int64_t k, float global_scale,
                             __nv_bfloat16 *out, cudaStream_t s)
{
    int64_t blocks = m * (k / 16);
    int per_cta = 256 / 16;
    qdq_nvfp4_act_kernel<<<(unsigned)((blocks + per_cta - 1) / per_cta), 256, 0, s>>>(x, m, k, global_scale,
                                                                                       out);
}
