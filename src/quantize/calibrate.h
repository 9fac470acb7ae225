/* calibrate.h — the calibration pass of `qserve quantize`: loads the unquantized model on the
 * CPU with the reference kernels, runs a few built-in prompts through the model forward with the
 * reference kernels recording max |x| per linear layer (cpu/reference_kernels.h), so static
 * activation scales (FP8 input_scale, NVFP4 input global scale) come from real activations. */
#ifndef QS_QUANTIZE_CALIBRATE_H
#define QS_QUANTIZE_CALIBRATE_H

#include "util/error.h"

/* Runs the prompts; afterwards qs_reference_calibration_amax(layer) holds each layer's range.
 * max_tokens caps each prompt (0 = 128). */
int qs_calibrate_activations(const char *model_dir, int max_tokens, qs_err *err);

#endif
