// moe_grouped.cu — the `cublaslt` and `emulation` MoE kernels: routed experts as grouped
// per-expert GEMMs. apply_moe copies the top-k choices to the host, sorts the (token, slot)
// pairs by expert, gathers each expert's token rows into one contiguous block, runs the expert's
// gate and up projections, SwiGLU and the down projection through the linear kernel of the same
// name, and combines y[t] = sum_j w[t,j] * expert_out[row(t,j)] in a fixed order (deterministic).
// A slot of expert id -1 (another rank's expert under expert parallelism, ops.h moe_expert_slice)
// gets no row: no expert computes it and it adds nothing.
// The host round trip per MoE layer is the price of this baseline; the fused marlin MoE
// (moe_fused.cu) routes on the device instead.
#include <stdio.h>
#include <string.h>
#include <vector>

#include "cuda_check.h"
#include "qs_cuda_kernels.h"
#include "scratch.h"

namespace {

typedef __nv_bfloat16 bf16;

struct MoeState {
    const qs_kernel *linear; // the per-expert linear kernel
    int num_experts, top_k;
    int64_t hidden, inter;
    std::vector<void *> gate, up, down;
};

__global__ void gather_kernel(bf16 *out, const bf16 *x, const int32_t *rows, int64_t n, int64_t d)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n * d; i += (int64_t)gridDim.x * blockDim.x)
        out[i] = x[(int64_t)rows[i / d] * d + i % d];
}

__global__ void swiglu_kernel(bf16 *gate_inout, const bf16 *up, int64_t count)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < count; i += (int64_t)gridDim.x * blockDim.x) {
        float g = __bfloat162float(gate_inout[i]);
        float silu = g / (1.f + __expf(-g));
        gate_inout[i] = __float2bfloat16_rn(__bfloat162float(__float2bfloat16_rn(silu)) * __bfloat162float(up[i]));
    }
}

__global__ void combine_kernel(bf16 *y, const bf16 *ys, const int32_t *inv, const float *w, int64_t m, int top_k,
                               int64_t d)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < m * d; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t t = i / d, c = i % d;
        float acc = 0.f;
        for (int j = 0; j < top_k; j++) {
            int32_t row = inv[t * top_k + j];
            if (row >= 0)
                acc += w[t * top_k + j] * __bfloat162float(ys[(int64_t)row * d + c]);
        }
        y[i] = __float2bfloat16_rn(acc);
    }
}

int grid_for(int64_t count)
{
    int64_t g = (count + 255) / 256;
    return (int)(g > 1048576 ? 1048576 : (g < 1 ? 1 : g));
}

void moe_release(void *state)
{
    MoeState *st = (MoeState *)state;
    if (!st)
        return;
    for (void *p : st->gate) if (p) st->linear->release(p);
    for (void *p : st->up) if (p) st->linear->release(p);
    for (void *p : st->down) if (p) st->linear->release(p);
    delete st;
}

int moe_can_implement(const qs_kernel *linear, const qs_moe_desc *d, char *why, size_t cap)
{
    for (int e = 0; e < d->num_experts; e++) {
        const qs_linear_desc *parts[3] = {&d->gate[e], &d->up[e], &d->down[e]};
        for (const qs_linear_desc *p : parts)
            if (!linear->can_implement_linear(p, why, cap))
                return 0;
    }
    return 1;
}

int moe_prepare(const qs_kernel *linear, const qs_moe_desc *d, void **state, qs_err *err)
{
    MoeState *st = new MoeState();
    st->linear = linear;
    st->num_experts = d->num_experts;
    st->top_k = d->top_k;
    st->hidden = d->hidden;
    st->inter = d->inter;
    st->gate.assign((size_t)d->num_experts, nullptr);
    st->up.assign((size_t)d->num_experts, nullptr);
    st->down.assign((size_t)d->num_experts, nullptr);
    for (int e = 0; e < d->num_experts; e++)
        if (linear->prepare_linear(&d->gate[e], &st->gate[(size_t)e], err) ||
            linear->prepare_linear(&d->up[e], &st->up[(size_t)e], err) ||
            linear->prepare_linear(&d->down[e], &st->down[(size_t)e], err)) {
            moe_release(st);
            return -1;
        }
    *state = st;
    return 0;
}

int moe_apply(const void *state, const void *x, const int32_t *topk_ids, const float *topk_weights, void *y, int64_t m,
              void *stream, qs_err *err)
{
    const MoeState *st = (const MoeState *)state;
    cudaStream_t s = (cudaStream_t)stream;
    if (m == 0)
        return 0;
    int64_t pairs = m * st->top_k;
    std::vector<int32_t> ids((size_t)pairs);
    QS_CUDA_TRY(cudaMemcpyAsync(ids.data(), topk_ids, (size_t)pairs * sizeof(int32_t), cudaMemcpyDeviceToHost, s),
                err);
    QS_CUDA_TRY(cudaStreamSynchronize(s), err);
    // Counting sort of (token, slot) pairs by expert.
    std::vector<int64_t> count((size_t)st->num_experts + 1, 0);
    for (int64_t i = 0; i < pairs; i++) {
        if (ids[(size_t)i] == -1)
            continue;
        if (ids[(size_t)i] < 0 || ids[(size_t)i] >= st->num_experts)
            return qs_errf(err, "MoE routing produced expert id %d (of %d)", ids[(size_t)i], st->num_experts);
        count[(size_t)ids[(size_t)i] + 1]++;
    }
    for (int e = 0; e < st->num_experts; e++)
        count[(size_t)e + 1] += count[(size_t)e];
    std::vector<int32_t> index((size_t)(2 * pairs)); // [0,pairs): token of sorted row; [pairs,2p): row of (t,j)
    std::vector<int64_t> next(count.begin(), count.end() - 1);
    for (int64_t i = 0; i < pairs; i++) {
        if (ids[(size_t)i] < 0) {
            index[(size_t)(pairs + i)] = -1;
            continue;
        }
        int64_t row = next[(size_t)ids[(size_t)i]]++;
        index[(size_t)row] = (int32_t)(i / st->top_k);
        index[(size_t)(pairs + i)] = (int32_t)row;
    }
    void *idx_dev, *xs, *gs, *us, *ys;
    if (qs_scratch_get(QS_SCRATCH_MOE_INDEX, (size_t)(2 * pairs) * sizeof(int32_t), &idx_dev, err) ||
        qs_scratch_get(QS_SCRATCH_MOE_X, (size_t)(pairs * st->hidden) * sizeof(bf16), &xs, err) ||
        qs_scratch_get(QS_SCRATCH_MOE_GATE, (size_t)(pairs * st->inter) * sizeof(bf16), &gs, err) ||
        qs_scratch_get(QS_SCRATCH_MOE_UP, (size_t)(pairs * st->inter) * sizeof(bf16), &us, err) ||
        qs_scratch_get(QS_SCRATCH_MOE_Y, (size_t)(pairs * st->hidden) * sizeof(bf16), &ys, err))
        return -1;
    QS_CUDA_TRY(cudaMemcpyAsync(idx_dev, index.data(), index.size() * sizeof(int32_t), cudaMemcpyHostToDevice, s), err);
    // The host copy must outlive the async upload.
    QS_CUDA_TRY(cudaStreamSynchronize(s), err);
    int32_t *rows = (int32_t *)idx_dev, *inv = rows + pairs;
    int64_t used = count[(size_t)st->num_experts]; // the rows of this rank's slots
    gather_kernel<<<grid_for(used * st->hidden), 256, 0, s>>>((bf16 *)xs, (const bf16 *)x, rows, used, st->hidden);
    QS_LAUNCH_CHECK(err);
    for (int e = 0; e < st->num_experts; e++) {
        int64_t off = count[(size_t)e], c = count[(size_t)e + 1] - off;
        if (c == 0)
            continue;
        bf16 *xe = (bf16 *)xs + off * st->hidden, *ge = (bf16 *)gs + off * st->inter, *ue = (bf16 *)us + off * st->inter;
        bf16 *ye = (bf16 *)ys + off * st->hidden;
        if (st->linear->apply_linear(st->gate[(size_t)e], xe, ge, c, s, err) ||
            st->linear->apply_linear(st->up[(size_t)e], xe, ue, c, s, err))
            return qs_err_prefix(err, "expert %d: ", e);
        swiglu_kernel<<<grid_for(c * st->inter), 256, 0, s>>>(ge, ue, c * st->inter);
        QS_LAUNCH_CHECK(err);
        if (st->linear->apply_linear(st->down[(size_t)e], ge, ye, c, s, err))
            return qs_err_prefix(err, "expert %d: ", e);
    }
    combine_kernel<<<grid_for(m * st->hidden), 256, 0, s>>>((bf16 *)y, (const bf16 *)ys, inv, topk_weights, m,
                                                          st->top_k, st->hidden);
    QS_LAUNCH_CHECK(err);
    return 0;
}

#define QS_MOE_KERNEL(ident, linear_kernel)                                                                       \
    int ident##_supported(const qs_device_caps *dev, char *why, size_t cap)                                       \
    {                                                                                                             \
        return linear_kernel.is_supported(dev, why, cap);                                                         \
    }                                                                                                             \
    int ident##_can(const qs_moe_desc *d, char *why, size_t cap) { return moe_can_implement(&linear_kernel, d, why, cap); } \
    int ident##_prepare(const qs_moe_desc *d, void **state, qs_err *err)                                          \
    {                                                                                                             \
        return moe_prepare(&linear_kernel, d, state, err);                                                        \
    }

QS_MOE_KERNEL(lt_bf16, qs_kernel_cublaslt_bf16)
QS_MOE_KERNEL(lt_fp8, qs_kernel_cublaslt_fp8)
QS_MOE_KERNEL(emu, qs_kernel_emulation_linear)

} // namespace

extern "C" const qs_kernel qs_kernel_cublaslt_moe_bf16 = {
    "cublaslt", QS_PLATFORM_CUDA, QS_KIND_MOE, 1u << QS_SCHEME_BF16, false,
    lt_bf16_supported, nullptr, lt_bf16_can, nullptr, nullptr, lt_bf16_prepare, moe_apply, moe_release,
};

extern "C" const qs_kernel qs_kernel_cublaslt_moe_fp8 = {
    "cublaslt", QS_PLATFORM_CUDA, QS_KIND_MOE, (1u << QS_SCHEME_FP8_W8A8) | (1u << QS_SCHEME_FP8_BLOCK_W8A8), false,
    lt_fp8_supported, nullptr, lt_fp8_can, nullptr, nullptr, lt_fp8_prepare, moe_apply, moe_release,
};

extern "C" const qs_kernel qs_kernel_emulation_moe = {
    "emulation", QS_PLATFORM_CUDA, QS_KIND_MOE,
    (1u << QS_SCHEME_BF16) | (1u << QS_SCHEME_FP8_W8A8) | (1u << QS_SCHEME_FP8_BLOCK_W8A8) |
        (1u << QS_SCHEME_W8A16_FP8) | (1u << QS_SCHEME_NVFP4_W4A4) | (1u << QS_SCHEME_NVFP4_W4A16),
    false, emu_supported, nullptr, emu_can, nullptr, nullptr, emu_prepare, moe_apply, moe_release,
};
