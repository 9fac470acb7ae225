// split_cuda.cu — the CUDA side of the fused-projection ops (ops.h: split_qkv, swiglu_gate_up):
// the column split of a fused q/k/v GEMM output [rows, n0 + n1 + n2] into q, k and v, and SwiGLU
// read straight from a fused gate/up output [rows, 2n]. The SwiGLU arithmetic is the swiglu op's
// (ops_cuda.cu) rounding for rounding, so a fused layer gives the same bf16 activations as
// separate gate and up layers. ops_cuda.cu's table lists both.
#include <cuda_bf16.h>

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

__global__ void swiglu_gate_up_kernel(bf16 *out, const bf16 *gate_up, int64_t rows, int64_t n, qs_act_order order)
{
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < rows * n; i += stride) {
        int64_t r = i / n, c = i % n;
        const bf16 *row = gate_up + r * 2 * n;
        float g = __bfloat162float(row[c]);
        float silu = g / (1.f + __expf(-g));
        out[r * n + qs_act_position(order, c)] =
            __float2bfloat16_rn(__bfloat162float(__float2bfloat16_rn(silu)) * __bfloat162float(row[n + c]));
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
    swiglu_gate_up_kernel<<<grid_for(rows * n, 256), 256, 0, qs_cuda_stream()>>>((bf16 *)out, (const bf16 *)gate_up,
                                                                                 rows, n, order);
    QS_LAUNCH_CHECK(err);
    return 0;
}
