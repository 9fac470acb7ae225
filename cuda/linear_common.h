// linear_common.h — what the CUDA linear kernels share: the device copy of a layer's weights in
// the checkpoint's own encoding, and the activation-quantization mode a scheme implies.
#ifndef QS_CUDA_LINEAR_COMMON_H
#define QS_CUDA_LINEAR_COMMON_H

#include <cuda_bf16.h>
#include <stdint.h>

#include "dequant.h"

extern "C" {
#include "core/scheme.h"
#include "util/error.h"
}

struct qs_device_linear {
    qs_scheme scheme;
    int64_t n, k;
    qs_weight_scale_layout wscale;
    int block_n, block_k;
    qs_act_quant aquant;
    int act_group;
    void *weight;               // raw FP8 / packed NVFP4 bytes, or BF16 for unquantized layers
    float *weight_scale;        // FP32 scales (FP8 layouts), device
    uint8_t *block_scale_e4m3;  // NVFP4 per-16 scales, device
    float global_scale;         // NVFP4 weight global scale
    float input_scale;          // static FP8 / NVFP4 input scale (multiply to dequantize)
    float *input_scale_dev;     // the same on the device (1 float)
    __nv_bfloat16 *bias;        // [n] or NULL
};

// Uploads desc's tensors unchanged (plus BF16 bias). On failure frees what it took.
int qs_device_linear_upload(const qs_linear_desc *d, qs_device_linear *out, qs_err *err);
void qs_device_linear_free(qs_device_linear *l);
// Expands the weights to BF16 [n,k] into dst.
int qs_device_linear_dequant(const qs_device_linear *l, __nv_bfloat16 *dst, cudaStream_t s, qs_err *err);
// FP8 activation mode of a W8A8 scheme (false for activations that stay BF16 or are NVFP4).
bool qs_fp8_act_mode(qs_act_quant aq, qs_actq_mode *mode);

#endif
