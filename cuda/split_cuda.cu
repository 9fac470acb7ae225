// split_cuda.cu — the CUDA side of the fused-projection ops (ops.h: split_qkv, swiglu_gate_up,
// qkv_rope_cache): the column split of a fused q/k/v GEMM output [rows, n0 + n1 + n2] into q, k and
// v, the same split with RoPE and the KV-cache write in one pass, and SwiGLU read straight from a
// fused gate/up output [rows, 2n]. The SwiGLU arithmetic is the swiglu op's
// (ops_cuda.cu) rounding for rounding, so a fused layer gives the same bf16 activations as
// separate gate and up layers. ops_cuda.cu's table lists both.
#include <cuda_bf16.h>

#include "cuda_check.h"
#include "cuda_stream.h"
#include "kv_codec.cuh"
#include "kv_layout.cuh"
#include "launch_pdl.cuh"
#include "qs_cuda_ops.h"
#include "rope_pair.cuh"

namespace {

typedef __nv_bfloat16 bf16;

int grid_for(int64_t count, int threads)
{
    int64_t g = (count + threads - 1) / threads;
    return (int)(g > 65535 * 16 ? 65535 * 16 : (g < 1 ? 1 : g));
}

// One thread per element of the fused row: consecutive threads read consecutive columns.
__global__ void split_qkv_kernel(bf16 *q, bf16 *k, bf16 *v, const bf16 *x, int64_t rows, int64_t n0, int64_t n1,
                                 int64_t n2)
{
    int64_t w = n0 + n1 + n2;
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < rows * w; i += stride) {
        int64_t r = i / w, c = i % w;
        bf16 val = x[i];
        if (c < n0)
            q[r * n0 + c] = val;
        else if (c < n0 + n1)
            k[r * n1 + (c - n0)] = val;
        else
            v[r * n2 + (c - n0 - n1)] = val;
    }
}

__device__ inline float swiglu_of(float g, float u)
{
    float silu = g / (1.f + __expf(-g));
    return __bfloat162float(__float2bfloat16_rn(silu)) * u;
}

__global__ void swiglu_gate_up_kernel(bf16 *out, const bf16 *gate_up, int64_t rows, int64_t n, qs_act_order order)
{
    qs_pdl_wait_then_release();
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < rows * n; i += stride) {
        int64_t r = i / n, c = i % n;
        const bf16 *row = gate_up + r * 2 * n;
        out[r * n + qs_act_position(order, c)] =
            __float2bfloat16_rn(swiglu_of(__bfloat162float(row[c]), __bfloat162float(row[n + c])));
    }
}

// The same for even n, a pair of columns per thread (bf16x2 loads and stores: the marlin orders
// move pairs together) and a row per grid row, so no thread divides a 64-bit index.
__global__ void swiglu_gate_up_pairs_kernel(bf16 *out, const bf16 *gate_up, int64_t rows, int64_t n,
                                            qs_act_order order)
{
    qs_pdl_wait_then_release();
    typedef __nv_bfloat162 bf16x2;
    const int64_t pairs = n / 2;
    for (int64_t r = blockIdx.y; r < rows; r += gridDim.y) {
        const bf16x2 *g = reinterpret_cast<const bf16x2 *>(gate_up + r * 2 * n), *u = g + pairs;
        for (int64_t p = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; p < pairs;
             p += (int64_t)gridDim.x * blockDim.x) {
            float2 gv = __bfloat1622float2(g[p]), uv = __bfloat1622float2(u[p]);
            *reinterpret_cast<bf16x2 *>(out + r * n + qs_act_position(order, 2 * p)) =
                __floats2bfloat162_rn(swiglu_of(gv.x, uv.x), swiglu_of(gv.y, uv.y));
        }
    }
}

// The fused q/k/v GEMM's output row [q heads | k heads | v heads] of token t (grid row): one
// thread per pair (i, i + head_dim / 2) of one head, in 32-bit index arithmetic. q heads are
// rotated into q; k heads rotated and v heads copied into the caches at slot_mapping[t] (negative:
// a dummy row, whose k and v are not kept). An FP8 cache (Codec KvFp8) gets the rotated bf16 k and
// the bf16 v quantized, as the separate rope and kv_write ops do.
template <class Codec>
__global__ void qkv_rope_cache_kernel(bf16 *q, typename Codec::T *kc, typename Codec::T *vc, const bf16 *qkv,
                                      const int32_t *tok_pos, const int32_t *slots, const float *inv_freq,
                                      int64_t n_tokens, int n_heads, int n_kv, int head_dim, float k_inv, float v_inv)
{
    qs_pdl_wait_then_release();
    const int half = head_dim / 2, heads = n_heads + 2 * n_kv;
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= heads * half)
        return;
    const int h = j / half, i = j % half;
    for (int64_t t = blockIdx.y; t < n_tokens; t += gridDim.y) {
        const bf16 *src = qkv + (t * heads + h) * head_dim;
        if (h < n_heads) {
            bf16 *dst = q + (t * n_heads + h) * head_dim;
            qs_rope_rotate(&dst[i], &dst[i + half], src[i], src[i + half], tok_pos[t], inv_freq[i]);
            continue;
        }
        const int32_t slot = slots[t];
        if (slot < 0)
            continue;
        const int kvh = (h - n_heads) % n_kv;
        const int64_t off = qs_kv_slot_row(slot, n_kv, kvh, head_dim);
        if (h < n_heads + n_kv) {
            bf16 a, b;
            qs_rope_rotate(&a, &b, src[i], src[i + half], tok_pos[t], inv_freq[i]);
            Codec::store(kc, off + i, a, k_inv);
            Codec::store(kc, off + i + half, b, k_inv);
        } else {
            Codec::store(vc, off + i, src[i], v_inv);
            Codec::store(vc, off + i + half, src[i + half], v_inv);
        }
    }
}

} // namespace

extern "C" int qs_cuda_split_qkv(void *out0, void *out1, void *out2, const void *x, int64_t rows, int64_t n0,
                                 int64_t n1, int64_t n2, qs_err *err)
{
    if (rows <= 0)
        return 0;
    split_qkv_kernel<<<grid_for(rows * (n0 + n1 + n2), 256), 256, 0, qs_cuda_stream()>>>(
        (bf16 *)out0, (bf16 *)out1, (bf16 *)out2, (const bf16 *)x, rows, n0, n1, n2);
    QS_LAUNCH_CHECK(err);
    return 0;
}

extern "C" int qs_cuda_swiglu_gate_up(void *out, const void *gate_up, int64_t rows, int64_t n, qs_act_order order,
                                      qs_err *err)
{
    if (qs_act_order_check(order, n, "swiglu_gate_up", err))
        return -1;
    if (rows <= 0)
        return 0;
    const bool pairs = n % 2 == 0;
    const dim3 grid = pairs ? dim3((unsigned)((n / 2 + 255) / 256), (unsigned)(rows < 65535 ? rows : 65535))
                            : dim3((unsigned)grid_for(rows * n, 256));
    QS_CUDA_TRY(qs_launch_pdl(pairs ? swiglu_gate_up_pairs_kernel : swiglu_gate_up_kernel, grid, dim3(256), 0,
                              qs_cuda_stream(), qs_ops_pdl(), (bf16 *)out, (const bf16 *)gate_up, rows, n, order),
                err);
    return 0;
}

extern "C" int qs_cuda_qkv_rope_cache(void *q, void *k_cache, void *v_cache, const void *qkv, const qs_attn_batch *b,
                                      const void *inv_freq, int n_heads, int n_kv_heads, int head_dim, qs_err *err)
{
    if (b->n_tokens <= 0)
        return 0;
    if (head_dim % 2 != 0)
        return qs_errf(err, "qkv_rope_cache: head_dim %d is odd", head_dim);
    const int per_token = (n_heads + 2 * n_kv_heads) * (head_dim / 2);
    dim3 grid((unsigned)((per_token + 255) / 256), (unsigned)(b->n_tokens < 65535 ? b->n_tokens : 65535));
    if (b->kv_dtype == QS_KV_FP8_E4M3)
        QS_CUDA_TRY(qs_launch_pdl(qkv_rope_cache_kernel<KvFp8>, grid, dim3(256), 0, qs_cuda_stream(), qs_ops_pdl(),
                                  (bf16 *)q, (__nv_fp8_e4m3 *)k_cache, (__nv_fp8_e4m3 *)v_cache, (const bf16 *)qkv,
                                  b->tok_pos, b->slot_mapping, (const float *)inv_freq, b->n_tokens, n_heads,
                                  n_kv_heads, head_dim, 1.0f / b->k_scale, 1.0f / b->v_scale),
                    err);
    else
        QS_CUDA_TRY(qs_launch_pdl(qkv_rope_cache_kernel<KvBf16>, grid, dim3(256), 0, qs_cuda_stream(), qs_ops_pdl(),
                                  (bf16 *)q, (bf16 *)k_cache, (bf16 *)v_cache, (const bf16 *)qkv, b->tok_pos,
                                  b->slot_mapping, (const float *)inv_freq, b->n_tokens, n_heads, n_kv_heads, head_dim,
                                  1.0f, 1.0f),
                    err);
    return 0;
}
