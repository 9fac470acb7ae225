// linear_cublaslt.cu — the `cublaslt` linear kernels: BF16 GEMMs for unquantized layers, and FP8
// W8A8 GEMMs on FP8 tensor cores (sm_89+) with the checkpoint's scales handed to cuBLASLt:
//  - per-tensor weight and activation scales: SCALAR_32F on both operands;
//  - per-channel weights and/or per-token activations: OUTER_VEC_32F on both (a per-tensor scale
//    is spread into a vector) — where the machine's cuBLASLt has kernels for it;
//  - 128x128 weight blocks with 1x128 activation groups: BLK128x128_32F and VEC128_32F.
// Whether cuBLASLt has an algorithm for a mode is asked of cuBLASLt itself (can_implement probes
// when a GPU is present); shapes it refuses at small m are run padded to 16 rows.
// cuBLASLt's FP8 GEMMs need both weight dimensions to be multiples of 16; other per-tensor and
// per-channel layers (stories260K's 344x64 gate_up) are zero-padded to them once at prepare
// (weights, bias, scale vectors), and each call copies the activations into a zero-padded buffer
// and the first n output columns back out.
#include <stdio.h>
#include <vector>

#include "blaslt.h"
#include "cuda_check.h"
#include "linear_common.h"
#include "qs_cuda_kernels.h"
#include "scratch.h"

namespace {

constexpr int kPadRows = 16;
constexpr int64_t kFp8DimMultiple = 16;

int64_t round_up(int64_t v, int64_t to) { return (v + to - 1) / to * to; }

bool block_scaled(int a_mode) { return a_mode == CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F; }

int lt_require_cuda(const qs_device_caps *dev, int major, int minor, const char *what, char *why, size_t cap)
{
    if (dev->platform != QS_PLATFORM_CUDA) {
        snprintf(why, cap, "cublaslt runs on CUDA GPUs, and this device is a CPU.");
        return 0;
    }
    if (dev->cc_major * 10 + dev->cc_minor < major * 10 + minor) {
        snprintf(why, cap, "cublaslt %s requires compute capability %d.%d, this GPU is %d.%d.", what, major, minor,
                 dev->cc_major, dev->cc_minor);
        return 0;
    }
    return 1;
}

int bf16_is_supported(const qs_device_caps *dev, char *why, size_t cap)
{
    return lt_require_cuda(dev, 8, 0, "BF16", why, cap);
}

int fp8_is_supported(const qs_device_caps *dev, char *why, size_t cap)
{
    return lt_require_cuda(dev, 8, 9, "FP8 needs FP8 tensor cores and", why, cap);
}

int bf16_can_implement(const qs_linear_desc *d, char *why, size_t cap)
{
    if (d->scheme != QS_SCHEME_BF16) {
        snprintf(why, cap, "cublaslt's BF16 GEMM only serves unquantized layers.");
        return 0;
    }
    return 1;
}

struct Fp8Modes {
    int a_mode, b_mode;
    qs_actq_mode act;
};

// Chooses cuBLASLt scale modes for a layer, or explains why there are none.
bool fp8_modes(const qs_linear_desc *d, Fp8Modes *m, char *why, size_t cap)
{
    if (!qs_fp8_act_mode(d->aquant, &m->act)) {
        snprintf(why, cap, "cublaslt FP8 needs FP8 activations, and %s keeps BF16 activations.", d->name);
        return false;
    }
    if (d->wscale == QS_WSCALE_BLOCK) {
        if (d->block_n != 128 || d->block_k != 128 || m->act != QS_ACTQ_DYNAMIC_GROUP || d->act_group_size != 128) {
            snprintf(why, cap,
                     "cublaslt block scaling needs 128x128 weight blocks and 1x128 activation groups, %s has "
                     "%dx%d blocks.",
                     d->name, d->block_n, d->block_k);
            return false;
        }
        m->a_mode = CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F;
        m->b_mode = CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
        return true;
    }
    if (d->wscale != QS_WSCALE_TENSOR && d->wscale != QS_WSCALE_CHANNEL) {
        snprintf(why, cap, "cublaslt FP8 does not handle the weight scale layout of %s.", d->name);
        return false;
    }
    bool vector = d->wscale == QS_WSCALE_CHANNEL || m->act == QS_ACTQ_DYNAMIC_TOKEN;
    m->a_mode = vector ? CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F : CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F;
    m->b_mode = m->a_mode;
    return true;
}

const char *mode_words(int a_mode)
{
    switch (a_mode) {
    case CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F: return "per-channel/per-token (outer-vector) scales";
    case CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F: return "128x128 block scales";
    default: return "per-tensor scales";
    }
}

int fp8_can_implement(const qs_linear_desc *d, char *why, size_t cap)
{
    if (d->scheme != QS_SCHEME_FP8_W8A8 && d->scheme != QS_SCHEME_FP8_BLOCK_W8A8) {
        snprintf(why, cap, "cublaslt FP8 serves fp8_w8a8 and fp8_block_w8a8 layers only.");
        return 0;
    }
    Fp8Modes modes;
    if (!fp8_modes(d, &modes, why, cap))
        return 0;
    if (block_scaled(modes.a_mode) && (d->n % kFp8DimMultiple || d->k % kFp8DimMultiple)) {
        snprintf(why, cap,
                 "cublaslt block-scaled FP8 needs both dimensions divisible by 16 (its scale grid is not "
                 "padded), %s is %lldx%lld.",
                 d->name, (long long)d->n, (long long)d->k);
        return 0;
    }
    // Measured on an H200 with CUDA 13.0 (docs/decisions.md): the 128-block path gave wrong
    // results for a 384x640 weight (3x5 blocks) at every m while 2x5, 3x4, 1x1 and every
    // multiple-of-4 grid were right. Without the rule behind it, only the grids seen right in
    // that family are accepted: block counts that are multiples of 4 (every Llama / Qwen shape)
    // or a single block.
    int64_t nb = (d->n + 127) / 128, kb = (d->k + 127) / 128;
    if (block_scaled(modes.a_mode) && !(nb % 4 == 0 && kb % 4 == 0) &&
        !(nb == 1 && kb == 1)) {
        snprintf(why, cap,
                 "cublaslt 128-block FP8 is only trusted for block grids that are multiples of 4 (cuBLASLt 13.0 "
                 "gave wrong results for 3x5 blocks), %s has %lldx%lld blocks.",
                 d->name, (long long)nb, (long long)kb);
        return 0;
    }
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
        cudaGetLastError();
        return 1; // nothing to ask: `qserve backends --assume-compute-capability` without a GPU
    }
    if (!qs_blaslt_fp8_supported(modes.a_mode, modes.b_mode, kPadRows, round_up(d->n, kFp8DimMultiple),
                                 round_up(d->k, kFp8DimMultiple))) {
        snprintf(why, cap, "this machine's cuBLASLt (%d) has no FP8 GEMM with %s for %lldx%lld on this GPU.",
                 qs_cublaslt(nullptr) ? (int)qs_cublaslt(nullptr)->GetVersion() : 0, mode_words(modes.a_mode), (long long)d->n, (long long)d->k);
        return 0;
    }
    return 1;
}

struct Fp8State {
    qs_device_linear w; // weight [n_pad][k_pad] and bias [n_pad], zero-padded
    Fp8Modes modes;
    float *a_scale;       // weight scales in the layout cuBLASLt reads for a_mode ([n_pad] vectors)
    int64_t n_pad, k_pad; // the GEMM's dimensions: n and k rounded up to 16 (equal for block scales)
};

int bf16_prepare(const qs_linear_desc *d, void **state, qs_err *err)
{
    qs_device_linear *l = new qs_device_linear;
    if (qs_device_linear_upload(d, l, err)) {
        delete l;
        return -1;
    }
    *state = l;
    return 0;
}

int bf16_apply(const void *state, const void *x, void *y, int64_t m, void *stream, qs_err *err)
{
    const qs_device_linear *l = (const qs_device_linear *)state;
    return qs_blaslt_gemm_bf16((const __nv_bfloat16 *)l->weight, (const __nv_bfloat16 *)x, l->bias,
                               (__nv_bfloat16 *)y, m, l->n, l->k, (cudaStream_t)stream, err);
}

void bf16_release(void *state)
{
    qs_device_linear *l = (qs_device_linear *)state;
    if (!l)
        return;
    qs_device_linear_free(l);
    delete l;
}

// Host-side re-layout of the weight scales for cuBLASLt.
int fp8_weight_scales(const qs_linear_desc *d, Fp8State *st, qs_err *err)
{
    int64_t count = d->weight_scale->numel;
    std::vector<float> src((size_t)count);
    for (int64_t i = 0; i < count; i++)
        src[(size_t)i] = qs_tensor_get_f32(d->weight_scale, i);
    std::vector<float> dst;
    if (st->modes.a_mode == CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F) {
        dst.assign((size_t)st->n_pad, 1.f); // padded rows' weights are zero: any finite scale
        for (int64_t r = 0; r < d->n; r++)
            dst[(size_t)r] = d->wscale == QS_WSCALE_CHANNEL ? src[(size_t)r] : src[0];
    } else if (block_scaled(st->modes.a_mode)) {
        // Checkpoint: [n/128][k/128] row-major. cuBLASLt: outer-dim-major, i.e. n-blocks fastest.
        int64_t nb = (d->n + 127) / 128, kb = (d->k + 127) / 128;
        dst.resize((size_t)(nb * kb));
        for (int64_t i = 0; i < nb; i++)
            for (int64_t j = 0; j < kb; j++)
                dst[(size_t)(j * nb + i)] = src[(size_t)(i * kb + j)];
    } else {
        dst.assign(1, src[0]);
    }
    QS_CUDA_TRY(cudaMalloc((void **)&st->a_scale, dst.size() * sizeof(float)), err);
    QS_CUDA_TRY(cudaMemcpy(st->a_scale, dst.data(), dst.size() * sizeof(float), cudaMemcpyHostToDevice), err);
    return 0;
}

// *buf ([rows][row_bytes] on the device) replaced by a zeroed [rows_pad][row_bytes_pad] copy.
int pad_device_buffer(void **buf, size_t rows, size_t row_bytes, size_t rows_pad, size_t row_bytes_pad, qs_err *err)
{
    void *padded = nullptr;
    QS_CUDA_TRY(cudaMalloc(&padded, rows_pad * row_bytes_pad), err);
    cudaError_t e = cudaMemset(padded, 0, rows_pad * row_bytes_pad);
    if (e == cudaSuccess)
        e = cudaMemcpy2D(padded, row_bytes_pad, *buf, row_bytes, row_bytes, rows, cudaMemcpyDeviceToDevice);
    if (e != cudaSuccess) {
        cudaFree(padded);
        QS_CUDA_TRY(e, err);
    }
    cudaFree(*buf);
    *buf = padded;
    return 0;
}

// Replaces the device weight [n][k] (and bias [n]) by zero-padded [n_pad][k_pad] (and [n_pad]) copies.
int fp8_pad_weights(Fp8State *st, qs_err *err)
{
    qs_device_linear *l = &st->w;
    if (st->n_pad == l->n && st->k_pad == l->k)
        return 0;
    const size_t el = sizeof(__nv_bfloat16);
    if (pad_device_buffer(&l->weight, (size_t)l->n, (size_t)l->k, (size_t)st->n_pad, (size_t)st->k_pad, err))
        return -1;
    return l->bias ? pad_device_buffer((void **)&l->bias, 1, (size_t)l->n * el, 1, (size_t)st->n_pad * el, err) : 0;
}

void fp8_release(void *state)
{
    Fp8State *st = (Fp8State *)state;
    if (!st)
        return;
    qs_device_linear_free(&st->w);
    cudaFree(st->a_scale);
    delete st;
}

int fp8_prepare(const qs_linear_desc *d, void **state, qs_err *err)
{
    char why[QS_REASON_MAX];
    Fp8State *st = new Fp8State();
    if (!fp8_modes(d, &st->modes, why, sizeof why)) {
        delete st;
        return qs_errf(err, "%s", why);
    }
    bool block = block_scaled(st->modes.a_mode);
    st->n_pad = block ? d->n : round_up(d->n, kFp8DimMultiple);
    st->k_pad = block ? d->k : round_up(d->k, kFp8DimMultiple);
    if (qs_device_linear_upload(d, &st->w, err) || fp8_pad_weights(st, err) || fp8_weight_scales(d, st, err)) {
        fp8_release(st);
        return -1;
    }
    *state = st;
    return 0;
}

// x [m][k] into a zeroed [m][k_pad] scratch copy when k is padded (zero columns leave every
// amax, scale and product unchanged); x itself otherwise.
int fp8_padded_input(const Fp8State *st, const __nv_bfloat16 *x, int64_t m, cudaStream_t s,
                     const __nv_bfloat16 **out, qs_err *err)
{
    const qs_device_linear *l = &st->w;
    *out = x;
    if (st->k_pad == l->k)
        return 0;
    void *buf;
    const size_t el = sizeof(__nv_bfloat16);
    if (qs_scratch_get(QS_SCRATCH_ACT_BF16, (size_t)(m * st->k_pad) * el, &buf, err))
        return -1;
    QS_CUDA_TRY(cudaMemsetAsync(buf, 0, (size_t)(m * st->k_pad) * el, s), err);
    QS_CUDA_TRY(cudaMemcpy2DAsync(buf, (size_t)st->k_pad * el, x, (size_t)l->k * el, (size_t)l->k * el,
                                  (size_t)m, cudaMemcpyDeviceToDevice, s),
                err);
    *out = (const __nv_bfloat16 *)buf;
    return 0;
}

int fp8_apply(const void *state, const void *x_, void *y_, int64_t m, void *stream, qs_err *err)
{
    const Fp8State *st = (const Fp8State *)state;
    const qs_device_linear *l = &st->w;
    const int64_t n = st->n_pad, k = st->k_pad; // the GEMM's (padded) dimensions
    cudaStream_t s = (cudaStream_t)stream;
    if (m == 0)
        return 0;
    // Measured on an H200 with CUDA 13.0: block-scaled FP8 GEMMs only work when the number of
    // rows is a multiple of 16 (no algorithm at m = 1, 33, 130; wrong results at m = 7), so
    // those run padded; other modes are padded only where cuBLASLt has no algorithm.
    int64_t rows = m;
    if (block_scaled(st->modes.a_mode))
        rows = round_up(m, kPadRows);
    else if (m < kPadRows && !qs_blaslt_fp8_supported(st->modes.a_mode, st->modes.b_mode, m, n, k))
        rows = kPadRows;
    int64_t groups = (k + 127) / 128;
    void *q, *sbuf;
    if (qs_scratch_get(QS_SCRATCH_ACT_FP8, (size_t)(rows * k), &q, err) ||
        qs_scratch_get(QS_SCRATCH_ACT_SCALES, (size_t)(rows * groups + 2 * rows + 2) * sizeof(float), &sbuf, err))
        return -1;
    float *scales = (float *)sbuf;
    if (rows != m) {
        QS_CUDA_TRY(cudaMemsetAsync(q, 0, (size_t)(rows * k), s), err);
        QS_CUDA_TRY(cudaMemsetAsync(scales, 0, (size_t)(rows * groups + 2 * rows + 2) * sizeof(float), s), err);
    }
    const __nv_bfloat16 *x;
    if (fp8_padded_input(st, (const __nv_bfloat16 *)x_, m, s, &x, err))
        return -1;
    float *x_scale = scales;
    if (st->modes.act == QS_ACTQ_STATIC_TENSOR) {
        qs_launch_quant_fp8_act(x, m, k, QS_ACTQ_STATIC_TENSOR, 128, rows, l->input_scale_dev, (uint8_t *)q,
                                nullptr, s);
        if (st->modes.b_mode == CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F)
            qs_launch_fill_from_scalar(l->input_scale_dev, scales, rows, s);
        else
            x_scale = l->input_scale_dev;
    } else {
        qs_launch_quant_fp8_act(x, m, k, st->modes.act, 128, rows, scales, (uint8_t *)q, nullptr, s);
        if (st->modes.act == QS_ACTQ_DYNAMIC_TENSOR &&
            st->modes.b_mode == CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F) {
            // scales[1..] held per-row maxima; spread the tensor scale over a fresh vector after them.
            qs_launch_fill_from_scalar(scales, scales + rows + 1, rows, s);
            x_scale = scales + rows + 1;
        }
    }
    QS_LAUNCH_CHECK(err);
    __nv_bfloat16 *y = (__nv_bfloat16 *)y_;
    __nv_bfloat16 *out = y;
    bool staged = rows != m || n != l->n; // the GEMM writes a padded [rows][n_pad] that is copied out
    if (staged) {
        void *ybuf;
        if (qs_scratch_get(QS_SCRATCH_OUT_BF16, (size_t)(rows * n) * sizeof(__nv_bfloat16), &ybuf, err))
            return -1;
        out = (__nv_bfloat16 *)ybuf;
    }
    int rc = qs_blaslt_gemm_fp8((const uint8_t *)l->weight, st->a_scale, st->modes.a_mode, (const uint8_t *)q,
                                x_scale, st->modes.b_mode, l->bias, out, rows, n, k, s, err);
    if (rc == 1)
        return qs_errf(err, "cuBLASLt has no FP8 GEMM with %s for m=%lld n=%lld k=%lld", mode_words(st->modes.a_mode),
                       (long long)rows, (long long)n, (long long)k);
    if (rc)
        return -1;
    size_t el = sizeof(__nv_bfloat16);
    if (staged)
        QS_CUDA_TRY(cudaMemcpy2DAsync(y, (size_t)l->n * el, out, (size_t)n * el, (size_t)l->n * el, (size_t)m,
                                      cudaMemcpyDeviceToDevice, s),
                    err);
    return 0;
}

} // namespace

extern "C" const qs_kernel qs_kernel_cublaslt_bf16 = {
    "cublaslt", QS_PLATFORM_CUDA, QS_KIND_LINEAR, 1u << QS_SCHEME_BF16,
    false, bf16_is_supported, bf16_can_implement, nullptr, bf16_prepare, bf16_apply, nullptr, nullptr, bf16_release,
};

extern "C" const qs_kernel qs_kernel_cublaslt_fp8 = {
    "cublaslt", QS_PLATFORM_CUDA, QS_KIND_LINEAR, (1u << QS_SCHEME_FP8_W8A8) | (1u << QS_SCHEME_FP8_BLOCK_W8A8),
    false, fp8_is_supported, fp8_can_implement, nullptr, fp8_prepare, fp8_apply, nullptr, nullptr, fp8_release,
};
