/* device.h — which device qserve runs on. `--device auto` takes CUDA device 0 when this binary
 * was built with CUDA (QS_HAVE_CUDA) and a GPU and driver are there, else the CPU; `--device cuda`
 * without a usable GPU is an error saying why; `--device cpu` is always the CPU. Also builds the
 * pretend device of `qserve backends --assume-compute-capability X.Y`. */
#ifndef QS_DEVICE_DEVICE_H
#define QS_DEVICE_DEVICE_H

#include "core/platform.h"
#include "util/error.h"

/* What --device asks for. */
typedef enum { QS_DEVICE_AUTO, QS_DEVICE_CPU, QS_DEVICE_CUDA } qs_device_choice;

int qs_device_detect(qs_device_choice want, qs_device_caps *caps, qs_err *err);
/* "8.0" / "9.0" / "10.0" / "89" / "sm_89" -> an assumed CUDA device of that capability. */
int qs_device_assume(const char *compute_capability, qs_device_caps *caps, qs_err *err);
/* "NVIDIA H200 (sm_90, 132 SMs, 139.8 GiB)" / "CPU (16 threads)". */
void qs_device_describe(const qs_device_caps *caps, char *buf, size_t cap);

#endif
