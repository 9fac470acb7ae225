// linear_common.cu — device copies of linear weights and their dequantization (see linear_common.h).
#include <string.h>

#include "cuda_check.h"
#include "linear_common.h"
#include "weights_upload.h"

bool qs_fp8_act_mode(qs_act_quant aq, qs_actq_mode *mode)
{
    switch (aq) {
    case QS_AQUANT_STATIC_TENSOR: *mode = QS_ACTQ_STATIC_TENSOR; return true;
    case QS_AQUANT_DYNAMIC_TENSOR: *mode = QS_ACTQ_DYNAMIC_TENSOR; return true;
    case QS_AQUANT_DYNAMIC_TOKEN: *mode = QS_ACTQ_DYNAMIC_TOKEN; return true;
    case QS_AQUANT_DYNAMIC_GROUP: *mode = QS_ACTQ_DYNAMIC_GROUP; return true;
    default: return false;
    }
}

void qs_device_linear_free(qs_device_linear *l)
{
    cudaFree(l->weight);
    cudaFree(l->weight_scale);
    cudaFree(l->block_scale_e4m3);
    cudaFree(l->input_scale_dev);
    cudaFree(l->bias);
    memset(l, 0, sizeof *l);
}

int qs_device_linear_upload(const qs_linear_desc *d, qs_device_linear *l, qs_err *err)
{
    memset(l, 0, sizeof *l);
    l->scheme = d->scheme;
    l->n = d->n;
    l->k = d->k;
    l->wscale = d->wscale;
    l->block_n = d->block_n;
    l->block_k = d->block_k;
    l->aquant = d->aquant;
    l->act_group = d->act_group_size > 0 ? d->act_group_size : 128;
    l->global_scale = d->weight_global_scale;
    l->input_scale = d->input_scale;
    int rc = 0;
    if (d->scheme == QS_SCHEME_BF16) {
        rc = qs_upload_as_bf16(d->weight, (__nv_bfloat16 **)&l->weight, err);
    } else {
        rc = qs_upload_raw(d->weight, &l->weight, err);
        if (!rc && d->weight_scale) {
            if (d->wscale == QS_WSCALE_NVFP4)
                rc = qs_upload_raw(d->weight_scale, (void **)&l->block_scale_e4m3, err);
            else
                rc = qs_upload_as_f32(d->weight_scale, &l->weight_scale, err);
        }
    }
    if (!rc)
        rc = qs_upload_f32_fill(d->input_scale, 1, &l->input_scale_dev, err);
    if (!rc && d->bias)
        rc = qs_upload_as_bf16(d->bias, &l->bias, err);
    if (rc) {
        qs_err_prefix(err, "%s: ", d->name);
        qs_device_linear_free(l);
    }
    return rc;
}

int qs_device_linear_dequant(const qs_device_linear *l, __nv_bfloat16 *dst, cudaStream_t s, qs_err *err)
{
    switch (l->wscale) {
    case QS_WSCALE_NONE:
        QS_CUDA_TRY(cudaMemcpyAsync(dst, l->weight, (size_t)(l->n * l->k) * sizeof(__nv_bfloat16),
                                    cudaMemcpyDeviceToDevice, s),
                    err);
        return 0;
    case QS_WSCALE_NVFP4:
        qs_launch_dequant_nvfp4((const uint8_t *)l->weight, l->block_scale_e4m3, l->global_scale, l->n, l->k, dst, s);
        break;
    default:
        qs_launch_dequant_fp8((const uint8_t *)l->weight, l->weight_scale, l->wscale, l->n, l->k, l->block_n,
                              l->block_k, dst, s);
        break;
    }
    QS_LAUNCH_CHECK(err);
    return 0;
}
