/* online_quant.c — online FP8 quantization of dense linear layers (online_quant.h), through the
 * quant engineer's round-to-nearest quantizer (qs_quantize_fp8_channel). */
#include "model/online_quant.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quant/quantize.h"

int qs_online_fp8_quantize(qs_linear_desc *d, qs_online_fp8 *own, qs_err *err)
{
    memset(own, 0, sizeof(*own));
    if (d->scheme != QS_SCHEME_BF16)
        return qs_errf(err, "--quantization fp8: %s is already quantized (%s); online quantization needs an "
                            "unquantized checkpoint", d->name, qs_scheme_name(d->scheme));
    int64_t n = d->n, k = d->k;
    float *w = malloc(sizeof(float) * (size_t)(n * k));
    own->codes = malloc((size_t)(n * k));
    own->scales = malloc(sizeof(float) * (size_t)n);
    if (!w || !own->codes || !own->scales) {
        free(w);
        qs_online_fp8_free(own);
        return qs_errf(err, "--quantization fp8: out of memory quantizing %s", d->name);
    }
    for (int64_t i = 0; i < n * k; i++)
        w[i] = qs_tensor_get_f32(d->weight, i);
    qs_quantize_fp8_channel(w, n, k, qs_scale_round_f32, own->codes, own->scales);
    free(w);
    snprintf(own->weight_name, sizeof(own->weight_name), "%s.weight (online fp8)", d->name);
    snprintf(own->scale_name, sizeof(own->scale_name), "%s.weight_scale (online fp8)", d->name);
    own->weight = (qs_tensor){.name = own->weight_name, .dtype = QS_DT_F8_E4M3, .ndim = 2, .shape = {n, k},
                              .numel = n * k, .data = own->codes, .nbytes = (size_t)(n * k), .file = "online"};
    own->scale = (qs_tensor){.name = own->scale_name, .dtype = QS_DT_F32, .ndim = 1, .shape = {n}, .numel = n,
                             .data = own->scales, .nbytes = sizeof(float) * (size_t)n, .file = "online"};
    d->scheme = QS_SCHEME_FP8_W8A8;
    d->weight = &own->weight;
    d->weight_scale = &own->scale;
    d->wscale = QS_WSCALE_CHANNEL;
    d->aquant = QS_AQUANT_DYNAMIC_TOKEN;
    d->weight_global_scale = 1.0f;
    d->input_scale = 0;
    return 0;
}

void qs_online_fp8_free(qs_online_fp8 *own)
{
    if (!own)
        return;
    free(own->codes);
    free(own->scales);
    own->codes = NULL;
    own->scales = NULL;
}
