// marlin_linear.cu — the `marlin` linear kernel descriptor: every FP8 scheme (per-tensor,
// per-channel or 128x128-block FP32 scales) and every NVFP4 scheme, run weight-only (activation
// scales ignored): BF16 activations times weights expanded to BF16 in registers, BF16 tensor
// cores, FP32 accumulation, BF16 out. prepare_linear repacks the checkpoint's weights on the
// host (marlin_pack.cu) and uploads them once; apply_linear launches marlin_gemm.cu.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

#include "cuda_check.h"
#include "marlin.h"
#include "qs_cuda_kernels.h"
#include "weights_upload.h"

namespace {

using qs_marlin::Layer;

int mar_is_supported(const qs_device_caps *dev, char *why, size_t cap)
{
    if (dev->platform != QS_PLATFORM_CUDA) {
        snprintf(why, cap, "marlin runs on CUDA GPUs, and this device is a CPU.");
        return 0;
    }
    if (dev->cc_major < 8) {
        snprintf(why, cap, "marlin needs BF16 tensor cores and cp.async (compute capability 8.0), this GPU is %d.%d.",
                 dev->cc_major, dev->cc_minor);
        return 0;
    }
    return 1;
}

int mar_can_implement(const qs_linear_desc *d, char *why, size_t cap)
{
    bool fp4 = qs_scheme_is_nvfp4(d->scheme);
    if (!fp4 && !qs_scheme_is_fp8(d->scheme)) {
        snprintf(why, cap, "marlin only serves FP8 and NVFP4 layers, and %s is %s.", d->name, qs_scheme_name(d->scheme));
        return 0;
    }
    // Any N and K: rows are padded to 16 and k to the kernel's k step with zeros at prepare time
    // (activations then go through a zero-padded copy). NVFP4 keeps its format's own rule.
    if (fp4 && d->k % 16 != 0) {
        snprintf(why, cap, "marlin NVFP4 needs in_features divisible by 16 (one E4M3 scale per 16), and %s is %lld x %lld.",
                 d->name, (long long)d->n, (long long)d->k);
        return 0;
    }
    if (d->n > (1 << 30) / 4 || d->k > (1 << 24)) {
        snprintf(why, cap, "marlin handles at most 2^28 outputs and 2^24 inputs, and %s is %lld x %lld.", d->name,
                 (long long)d->n, (long long)d->k);
        return 0;
    }
    if (!d->weight || (fp4 ? d->weight->dtype != QS_DT_U8 : d->weight->dtype != QS_DT_F8_E4M3)) {
        snprintf(why, cap, "marlin needs %s weights, and %s stores %s.", fp4 ? "packed U8 NVFP4" : "F8_E4M3", d->name,
                 d->weight ? qs_dtype_name(d->weight->dtype) : "none");
        return 0;
    }
    if (fp4 && d->wscale != QS_WSCALE_NVFP4) {
        snprintf(why, cap, "marlin NVFP4 needs E4M3 scales per 16 inputs, and %s has %s scales.", d->name,
                 qs_weight_scale_layout_name(d->wscale));
        return 0;
    }
    if (!fp4 && d->wscale != QS_WSCALE_TENSOR && d->wscale != QS_WSCALE_CHANNEL && d->wscale != QS_WSCALE_BLOCK) {
        snprintf(why, cap, "marlin FP8 needs per-tensor, per-channel or block scales, and %s has %s scales.", d->name,
                 qs_weight_scale_layout_name(d->wscale));
        return 0;
    }
    if (!fp4 && d->wscale == QS_WSCALE_BLOCK && (d->block_n != 128 || d->block_k != 128)) {
        snprintf(why, cap, "marlin FP8 block scaling needs 128x128 blocks, and %s has %dx%d.", d->name, d->block_n,
                 d->block_k);
        return 0;
    }
    return 1;
}

void mar_release(void *state)
{
    Layer *l = (Layer *)state;
    if (!l)
        return;
    cudaFree(l->w);
    cudaFree(l->sc);
    cudaFree(l->colscale);
    cudaFree(l->blockscale);
    cudaFree(l->bias);
    delete l;
}

int upload(const std::vector<uint8_t> &h, uint8_t **dev, qs_err *err)
{
    QS_CUDA_TRY(cudaMalloc((void **)dev, h.size()), err);
    QS_CUDA_TRY(cudaMemcpy(*dev, h.data(), h.size(), cudaMemcpyHostToDevice), err);
    return 0;
}

int prepare_inner(const qs_linear_desc *d, Layer *l, qs_err *err)
{
    l->fp4 = qs_scheme_is_nvfp4(d->scheme);
    l->n = d->n;
    l->k = d->k;
    l->post1 = l->post2 = 1.f;
    if (!d->weight || !d->weight->data)
        return qs_errf(err, "%s: marlin needs the weight data (the checkpoint was opened headers-only)", d->name);
    if (!d->weight_scale || !d->weight_scale->data)
        return qs_errf(err, "%s: marlin needs the weight scales", d->name);
    const uint8_t *w = (const uint8_t *)d->weight->data;
    const int64_t n = d->n, k = d->k;
    l->n_pad = (n + 15) / 16 * 16;
    const int64_t step = l->fp4 ? qs_marlin::kFp4StepK : qs_marlin::kFp8StepK;
    l->k_pad = (k + step - 1) / step * step;
    const int64_t np = l->n_pad, kp = l->k_pad;
    if (l->fp4) {
        if (d->weight->nbytes < (size_t)(n * k / 2) || d->weight_scale->nbytes < (size_t)(n * k / 16))
            return qs_errf(err, "%s: NVFP4 weight or scale tensor is smaller than %lld x %lld needs", d->name,
                           (long long)n, (long long)k);
        const uint8_t *sc = (const uint8_t *)d->weight_scale->data;
        std::vector<uint8_t> pw((size_t)(np * kp / 2)), ps((size_t)(np * kp / 16));
        if (np == n && kp == k) {
            qs_marlin::pack_nvfp4(w, sc, n, k, pw.data(), ps.data());
        } else {
            // Padding: zero codes under zero scales (the pack folds a zero scale into zero weights).
            std::vector<uint8_t> wsrc((size_t)(np * kp / 2), 0), ssrc((size_t)(np * kp / 16), 0);
            for (int64_t r = 0; r < n; r++) {
                memcpy(&wsrc[(size_t)(r * kp / 2)], w + r * k / 2, (size_t)(k / 2));
                memcpy(&ssrc[(size_t)(r * kp / 16)], sc + r * k / 16, (size_t)(k / 16));
            }
            qs_marlin::pack_nvfp4(wsrc.data(), ssrc.data(), np, kp, pw.data(), ps.data());
        }
        if (upload(pw, &l->w, err) || upload(ps, &l->sc, err))
            return -1;
        l->post1 = 19342813113834066795298816.f; // 2^84: the packed scales carry 2^42, the codes 2^-126
        l->post2 = d->weight_global_scale;
    } else {
        if (d->weight->nbytes < (size_t)(n * k))
            return qs_errf(err, "%s: FP8 weight tensor is smaller than %lld x %lld", d->name, (long long)n,
                           (long long)k);
        std::vector<uint8_t> pw((size_t)(np * kp));
        if (np == n && kp == k) {
            qs_marlin::pack_fp8(w, n, k, pw.data());
        } else {
            std::vector<uint8_t> wsrc((size_t)(np * kp), 0);
            for (int64_t r = 0; r < n; r++)
                memcpy(&wsrc[(size_t)(r * kp)], w + r * k, (size_t)k);
            qs_marlin::pack_fp8(wsrc.data(), np, kp, pw.data());
        }
        if (upload(pw, &l->w, err))
            return -1;
        if (d->wscale == QS_WSCALE_BLOCK) {
            l->block = true;
            const int64_t blocks = ((n + 127) / 128) * ((k + 127) / 128);
            if (d->weight_scale->numel < blocks)
                return qs_errf(err, "%s: block scale tensor has %lld values, %lld x %lld needs %lld", d->name,
                               (long long)d->weight_scale->numel, (long long)n, (long long)k, (long long)blocks);
            if (qs_upload_as_f32(d->weight_scale, &l->blockscale, err))
                return -1;
        } else {
            l->colscale_stride = d->wscale == QS_WSCALE_CHANNEL ? 1 : 0;
            if (l->colscale_stride && d->weight_scale->numel < d->n)
                return qs_errf(err, "%s: per-channel scale has %lld values for %lld outputs", d->name,
                               (long long)d->weight_scale->numel, (long long)d->n);
            if (qs_upload_as_f32(d->weight_scale, &l->colscale, err))
                return -1;
        }
    }
    if (d->bias && qs_upload_as_bf16(d->bias, &l->bias, err))
        return -1;
    // the largest step any marlin kernel splits k for (the wgmma kernel: 128 tokens)
    return qs_marlin::plan_paths(*l, err) || qs_marlin::reserve_workspace(*l, 128, err) ? -1 : 0;
}

int mar_prepare(const qs_linear_desc *d, void **state, qs_err *err)
{
    Layer *l = new Layer();
    memset(l, 0, sizeof *l);
    if (prepare_inner(d, l, err)) {
        mar_release(l);
        return -1;
    }
    *state = l;
    return 0;
}

int mar_apply(const void *state, const void *x, void *y, int64_t m, void *stream, qs_err *err)
{
    const Layer *l = (const Layer *)state;
    return qs_marlin::gemm(*l, (const __nv_bfloat16 *)x, (__nv_bfloat16 *)y, m, (cudaStream_t)stream, err);
}

// The stream kernel's rewrite-free path reads x in its packed k order; where the op before the
// layer writes x so, the permute kernel it would otherwise run first (~3 us) is spared.
int mar_input_order(const void *state, int64_t m) { return qs_marlin::input_order(*(const Layer *)state, m); }

int mar_apply_ordered(const void *state, const void *x, void *y, int64_t m, void *stream, qs_err *err)
{
    const Layer *l = (const Layer *)state;
    return qs_marlin::gemm(*l, (const __nv_bfloat16 *)x, (__nv_bfloat16 *)y, m, (cudaStream_t)stream, err, true);
}

} // namespace

extern "C" const qs_kernel qs_kernel_marlin_linear = {
    "marlin",
    QS_PLATFORM_CUDA,
    QS_KIND_LINEAR,
    (1u << QS_SCHEME_FP8_W8A8) | (1u << QS_SCHEME_FP8_BLOCK_W8A8) | (1u << QS_SCHEME_W8A16_FP8) |
        (1u << QS_SCHEME_NVFP4_W4A4) | (1u << QS_SCHEME_NVFP4_W4A16),
    false, // the tile height and the split-K factor follow m, so a row's summation order can change with the batch
    mar_is_supported,
    mar_can_implement,
    nullptr,
    mar_prepare,
    mar_apply,
    nullptr,
    nullptr,
    mar_release,
    mar_input_order,
    mar_apply_ordered,
};
