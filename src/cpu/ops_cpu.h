/* ops_cpu.h — the CPU implementation of the ops table (src/cpu/ops_cpu*.c), which the CPU backend's
 * description (backend_cpu.h) hands out and tests call by name. */
#ifndef QS_CPU_OPS_CPU_H
#define QS_CPU_OPS_CPU_H

#include "core/ops.h"

const qs_ops *qs_ops_cpu(void);

#endif
