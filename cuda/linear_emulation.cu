// linear_emulation.cu — the `emulation` linear kernel: every scheme, any shape. Each call expands
// the layer's weights to BF16 in a shared scratch buffer, quantize-dequantizes the activations
// where the scheme quantizes them (FP8 W8A8 modes, NVFP4 W4A4), and runs a cuBLASLt BF16 GEMM.
// Slow by design (it re-reads and re-writes the weights every call): the always-there fallback
// and the GPU-side statement of what each checkpoint computes.
#include <stdio.h>

#include "blaslt.h"
#include "cuda_check.h"
#include "linear_common.h"
#include "qs_cuda_kernels.h"
#include "scratch.h"

namespace {

int emu_is_supported(const qs_device_caps *dev, char *why, size_t cap)
{
    if (dev->platform != QS_PLATFORM_CUDA) {
        snprintf(why, cap, "emulation runs on CUDA GPUs, and this device is a CPU.");
        return 0;
    }
    if (dev->cc_major < 8) {
        snprintf(why, cap, "emulation needs BF16 GEMMs (compute capability 8.0), this GPU is %d.%d.", dev->cc_major,
                 dev->cc_minor);
        return 0;
    }
    return 1;
}

int emu_can_implement(const qs_linear_desc *d, char *why, size_t cap)
{
    if ((d->scheme == QS_SCHEME_NVFP4_W4A4 || d->scheme == QS_SCHEME_NVFP4_W4A16) && d->k % 16 != 0) {
        snprintf(why, cap, "NVFP4 needs in_features divisible by 16, %s has %lld.", d->name, (long long)d->k);
        return 0;
    }
    return 1;
}

int emu_prepare(const qs_linear_desc *d, void **state, qs_err *err)
{
    qs_device_linear *l = new qs_device_linear;
    if (qs_device_linear_upload(d, l, err)) {
        delete l;
        return -1;
    }
    *state = l;
    return 0;
}

int emu_apply(const void *state, const void *x_, void *y_, int64_t m, void *stream, qs_err *err)
{
    const qs_device_linear *l = (const qs_device_linear *)state;
    const __nv_bfloat16 *x = (const __nv_bfloat16 *)x_;
    __nv_bfloat16 *y = (__nv_bfloat16 *)y_;
    cudaStream_t s = (cudaStream_t)stream;
    if (m == 0)
        return 0;
    const __nv_bfloat16 *w = (const __nv_bfloat16 *)l->weight;
    if (l->wscale != QS_WSCALE_NONE) {
        void *buf;
        if (qs_scratch_get(QS_SCRATCH_WEIGHT_BF16, (size_t)(l->n * l->k) * sizeof(__nv_bfloat16), &buf, err))
            return -1;
        if (qs_device_linear_dequant(l, (__nv_bfloat16 *)buf, s, err))
            return -1;
        w = (const __nv_bfloat16 *)buf;
    }
    qs_actq_mode mode;
    if (qs_fp8_act_mode(l->aquant, &mode) || l->aquant == QS_AQUANT_NVFP4) {
        void *act;
        if (qs_scratch_get(QS_SCRATCH_ACT_BF16, (size_t)(m * l->k) * sizeof(__nv_bfloat16), &act, err))
            return -1;
        if (l->aquant == QS_AQUANT_NVFP4) {
            qs_launch_qdq_nvfp4_act(x, m, l->k, l->input_scale, (__nv_bfloat16 *)act, s);
        } else {
            float *scales = l->input_scale_dev;
            if (mode != QS_ACTQ_STATIC_TENSOR) {
                int64_t groups = (l->k + l->act_group - 1) / l->act_group;
                void *sbuf;
                if (qs_scratch_get(QS_SCRATCH_ACT_SCALES, (size_t)(m * groups + m + 1) * sizeof(float), &sbuf, err))
                    return -1;
                scales = (float *)sbuf;
            }
            qs_launch_quant_fp8_act(x, m, l->k, mode, l->act_group, m, scales, nullptr, (__nv_bfloat16 *)act, s);
        }
        QS_LAUNCH_CHECK(err);
        x = (const __nv_bfloat16 *)act;
    }
    return qs_blaslt_gemm_bf16(w, x, l->bias, y, m, l->n, l->k, s, err);
}

void emu_release(void *state)
{
    qs_device_linear *l = (qs_device_linear *)state;
    if (!l)
        return;
    qs_device_linear_free(l);
    delete l;
}

} // namespace

extern "C" const qs_kernel qs_kernel_emulation_linear = {
    "emulation",
    QS_PLATFORM_CUDA,
    QS_KIND_LINEAR,
    (1u << QS_SCHEME_BF16) | (1u << QS_SCHEME_FP8_W8A8) | (1u << QS_SCHEME_FP8_BLOCK_W8A8) |
        (1u << QS_SCHEME_W8A16_FP8) | (1u << QS_SCHEME_NVFP4_W4A4) | (1u << QS_SCHEME_NVFP4_W4A16),
    false, // cuBLASLt may pick a different split-K for a different m
    emu_is_supported,
    emu_can_implement,
    nullptr,
    emu_prepare,
    emu_apply,
    nullptr,
    nullptr,
    emu_release,
};
