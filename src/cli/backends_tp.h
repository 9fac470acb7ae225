/* backends_tp.h — `qserve backends MODEL -tp N`: what each tensor-parallel rank would hold (heads,
 * KV heads, MLP columns, vocabulary rows), the shard shape of every projection of layer 0 (expert 0's
 * for an MoE layer) and the lm_head, and the kernel the registry picks for that shard on this device — from the headers, as
 * the rest of `backends` does, without starting any rank. */
#ifndef QS_CLI_BACKENDS_TP_H
#define QS_CLI_BACKENDS_TP_H

#include <stdio.h>

#include "cli/backends_model.h"
#include "config/config.h"
#include "device/device.h"

/* 0, or 1 after printing why the model does not split over tp ranks. */
int qs_backends_print_tp(FILE *out, const qs_kernel_config *kc, const qs_device_caps *dev, const qs_backends_model *m,
                         int tp);

#endif
