/* backend_cpu.h — the CPU backend's description (core/backend.h), which src/device/backends.c
 * lists, and the two CPU entry points tests and the backend itself call by name. */
#ifndef QS_CPU_BACKEND_CPU_H
#define QS_CPU_BACKEND_CPU_H

#include "core/backend.h"

extern const qs_backend qs_backend_cpu;

/* The CPU implementation of the ops table (src/cpu/ops_cpu*.c). */
const qs_ops *qs_ops_cpu(void);
/* The CPU as a device ("CPU (N threads)", SMs = threads, memory = physical RAM); threads 0 = every
 * online core. */
void qs_cpu_device_caps(int threads, qs_device_caps *caps);

#endif
