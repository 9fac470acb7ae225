/* reference_kernels.h — the CPU `reference` kernels (BACKENDS.md): plain C, every scheme, the
 * executable specification every CUDA kernel is tested against. They compute exactly the function
 * the checkpoint encodes: weights decoded from their E4M3 / E2M1 codes and scales, and, for W8A8
 * and W4A4 schemes, activations quantized the way the checkpoint says (static per-tensor,
 * dynamic per-token or per-group FP8, NVFP4 with the input global scale) before the matmul.
 * Float32 activations, row-major [m, k] in, [m, n] out; batch-invariant (each output element is
 * one fixed-order dot product), except dynamic per-tensor activation scales, which by definition
 * depend on the whole batch.
 *
 * Calibration: between qs_reference_calibration_begin() and _end(), every reference linear apply
 * records the largest |x| it saw per layer name (experts included); `qserve quantize
 * --scheme fp8-static` turns those into input_scale = amax / 448. */
#ifndef QS_CPU_REFERENCE_KERNELS_H
#define QS_CPU_REFERENCE_KERNELS_H

#include <stdbool.h>

#include "core/kernel.h"

extern const qs_kernel qs_kernel_reference_linear;
extern const qs_kernel qs_kernel_reference_moe;

void qs_reference_calibration_begin(void);   /* clears previous values and starts recording */
void qs_reference_calibration_end(void);     /* stops recording; values stay readable */
bool qs_reference_calibration_active(void);
void qs_reference_calibration_record(const char *name, float amax);
/* Largest |x| recorded for the layer, or -1 if it never ran during calibration. */
float qs_reference_calibration_amax(const char *name);
void qs_reference_calibration_clear(void);   /* frees the recorded values */

#endif
