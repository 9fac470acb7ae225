/* backend_cpu.h — the CPU backend's description (core/backend.h), which src/device/backends.c
 * lists, and the CPU entry points tests call by name (with the ops table, ops_cpu.h). */
#ifndef QS_CPU_BACKEND_CPU_H
#define QS_CPU_BACKEND_CPU_H

#include "core/backend.h"
#include "cpu/ops_cpu.h"

extern const qs_backend qs_backend_cpu;

/* The CPU as a device ("CPU (N threads)", SMs = threads, memory = physical RAM); threads 0 = every
 * online core. */
void qs_cpu_device_caps(int threads, qs_device_caps *caps);

#endif
