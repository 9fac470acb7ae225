// marlin_workspace.cu — the device buffers every marlin kernel's host side shares, one set per
// process and only ever grown (never during a CUDA graph capture): the split-K workspace of FP32
// partial sums and tickets, and the permuted and zero-padded activation copies (marlin.h,
// marlin_workspace.h). They sit below the kernels that use them, so no kernel file calls
// another's for a buffer.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "cuda_check.h"
#include "cuda_stream.h"
#include "marlin.h"
#include "marlin_device.cuh" // Params
#include "marlin_workspace.h"

namespace qs_marlin {
namespace {

float *g_ws = nullptr;
size_t g_ws_floats = 0;
int *g_cnt = nullptr;
size_t g_cnt_n = 0;

// A device buffer of BF16 activations that only grows (never during a CUDA graph capture).
struct ActBuffer {
    __nv_bfloat16 *p = nullptr;
    size_t n = 0;
};
ActBuffer g_xpad;     // zero-padded activations (k not a multiple of the k step)
ActBuffer g_xperm;    // the wgmma kernel's permuted activations

int ensure_act_buffer(ActBuffer &b, size_t n, const char *what, qs_err *err)
{
    if (n > b.n) {
        if (qs_cuda_capturing())
            return qs_errf(err, "marlin: the %s would grow during a CUDA graph capture", what);
        qs_cuda_buffers_moved();
        QS_CUDA_TRY(cudaDeviceSynchronize(), err);
        cudaFree(b.p);
        b.p = nullptr;
        b.n = 0;
        QS_CUDA_TRY(cudaMalloc(&b.p, n * sizeof(__nv_bfloat16)), err);
        b.n = n;
    }
    return 0;
}

} // namespace

int grow_split_workspace(size_t floats, size_t counters, qs_err *err)
{
    if ((floats > g_ws_floats || counters > g_cnt_n) && qs_cuda_capturing())
        return qs_errf(err, "marlin: the split-K workspace would grow during a CUDA graph capture");
    if (floats > g_ws_floats || counters > g_cnt_n)
        qs_cuda_buffers_moved();
    if (floats > g_ws_floats) {
        QS_CUDA_TRY(cudaDeviceSynchronize(), err);
        cudaFree(g_ws);
        g_ws = nullptr;
        g_ws_floats = 0;
        QS_CUDA_TRY(cudaMalloc(&g_ws, floats * sizeof(float)), err);
        g_ws_floats = floats;
    }
    if (counters > g_cnt_n) {
        QS_CUDA_TRY(cudaDeviceSynchronize(), err);
        cudaFree(g_cnt);
        g_cnt = nullptr;
        g_cnt_n = 0;
        QS_CUDA_TRY(cudaMalloc(&g_cnt, counters * sizeof(int)), err);
        QS_CUDA_TRY(cudaMemset(g_cnt, 0, counters * sizeof(int)), err);
        g_cnt_n = counters;
    }
    return 0;
}

__nv_bfloat16 *permuted_activations(size_t n, qs_err *err)
{
    return ensure_act_buffer(g_xperm, n, "permuted activation copy", err) ? nullptr : g_xperm.p;
}

__nv_bfloat16 *padded_activations(size_t n, qs_err *err)
{
    return ensure_act_buffer(g_xpad, n, "padded activation copy", err) ? nullptr : g_xpad.p;
}

int split_workspace(size_t floats, size_t counters, Params &p, qs_err *err)
{
    if (grow_split_workspace(floats, counters, err))
        return -1;
    p.ws = g_ws;
    p.cnt = g_cnt;
    return 0;
}

} // namespace qs_marlin
