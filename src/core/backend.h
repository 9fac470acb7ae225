/* backend.h — what a backend is: one description a device implementation (src/cpu, cuda/)
 * exports and src/device/backends.c lists, as ggml-backend's registry does. Everything above the
 * backends reaches a device through it: how many devices there are and what each can do, how much
 * memory is free, the ops table the forward pass runs on, the decode-step graph hooks and the
 * kernel descriptors the registry chooses from. No other file names a backend. */
#ifndef QS_CORE_BACKEND_H
#define QS_CORE_BACKEND_H

#include <stddef.h>

#include "core/comm.h"
#include "core/kernel.h"
#include "core/ops.h"
#include "core/platform.h"
#include "util/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct qs_backend {
    const char *name;         /* "cpu", "cuda" */
    qs_platform platform;
    /* Devices usable by this process; 0 when there are none (no driver, no GPU), and then
     * unavailable_reason says why ("" when it does not know). */
    int (*device_count)(void);
    const char *(*unavailable_reason)(void);
    /* What device `ordinal` is and can do (name, compute capability, SMs, memory). */
    int (*device_caps)(int ordinal, qs_device_caps *caps, qs_err *err);
    /* Free and total bytes of the current device's memory. */
    int (*mem_info)(size_t *free_bytes, size_t *total_bytes, qs_err *err);
    /* The ops table the forward pass runs on (core/ops.h). */
    const qs_ops *(*ops)(void);
    /* Streams and decode-step graphs (the same table as ops()->graph); NULL where there are none. */
    const qs_graph_ops *graph;
    /* The kernel descriptors this backend brings to the registry, in its order of listing. */
    const qs_kernel *const *kernels;
    int kernel_count;
    /* The communicator for this backend's device buffers under tensor parallelism, built over the
     * host communicator `host` (which bootstraps it); NULL where the host one serves (the CPU). */
    qs_comm *(*device_comm)(qs_comm *host, qs_err *err);
} qs_backend;

#ifdef __cplusplus
}
#endif

#endif
