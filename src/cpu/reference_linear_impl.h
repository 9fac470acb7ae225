/* reference_linear_impl.h — internals of the reference linear kernel shared with the reference
 * MoE kernel (each expert projection is one reference linear). Not a public interface. */
#ifndef QS_CPU_REFERENCE_LINEAR_IMPL_H
#define QS_CPU_REFERENCE_LINEAR_IMPL_H

#include <stdint.h>

#include "core/scheme.h"
#include "core/kernel.h"
#include "util/error.h"

typedef enum { QS_REFW_F32, QS_REFW_BF16, QS_REFW_FP8, QS_REFW_FP4 } qs_ref_wfmt;

/* A prepared layer. Weights keep their compact storage (BF16 halves, FP8 bytes, packed FP4) and
 * are decoded a few rows at a time into float during apply: that costs about as much as the dot
 * products for m = 1 and little for larger m, and keeps memory at the checkpoint's size. */
typedef struct qs_ref_linear {
    char name[160];
    qs_scheme scheme;
    int64_t n, k;
    qs_ref_wfmt wfmt;
    void *w;                 /* F32 [n*k], BF16 [n*k], FP8 [n*k] or packed FP4 [n*k/2] */
    float *row_scale;        /* FP8 per-tensor / per-channel: [n] */
    float *block_scale;      /* FP8 block: [ceil(n/bn) * ceil(k/bk)]; FP4: [n * k/16] incl. global */
    int block_n, block_k;
    qs_act_quant aquant;
    int act_group_size;
    float input_scale;
    float *bias;             /* [n] or NULL */
} qs_ref_linear;

int qs_ref_linear_init(qs_ref_linear *L, const qs_linear_desc *d, qs_err *err);
void qs_ref_linear_destroy(qs_ref_linear *L);
/* y[m, n] = quant(x)[m, k] W^T + bias. Records calibration amax when calibration is on. */
int qs_ref_linear_run(const qs_ref_linear *L, const float *x, float *y, int64_t m, qs_err *err);
/* The device check shared by the linear and MoE descriptors. */
int qs_ref_is_supported(const qs_device_caps *dev, char *why, size_t cap);
/* Why the reference cannot run d (1 = it can). */
int qs_ref_linear_check(const qs_linear_desc *d, char *why, size_t cap);
/* Quantizes-then-dequantizes activations in place of a copy: out[m, k] is what the W8A8 / W4A4
 * GPU kernel multiplies. aquant NONE copies. */
void qs_ref_quantize_activations(const qs_ref_linear *L, const float *x, float *out, int64_t m);
/* Decodes weight row j into out[k] (float). */
void qs_ref_decode_row(const qs_ref_linear *L, int64_t j, float *out);

#endif
