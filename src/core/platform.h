/* platform.h — which kind of device a piece of work runs on (qs_platform) and what one device is
 * and can do (qs_device_caps): the words the backends (src/cpu, cuda/) fill in and the registry,
 * the loader and the engine read. */
#ifndef QS_CORE_PLATFORM_H
#define QS_CORE_PLATFORM_H

#include <stdbool.h>
#include <stddef.h>

typedef enum { QS_PLATFORM_CPU, QS_PLATFORM_CUDA } qs_platform;

typedef struct qs_device_caps {
    qs_platform platform;
    char name[96];            /* "CPU (2 threads)", "NVIDIA H200" */
    int cc_major, cc_minor;   /* CUDA compute capability; 0.0 on CPU */
    int sm_count;
    size_t memory_bytes;
    bool assumed;             /* from --assume-compute-capability, not a real device */
} qs_device_caps;

#endif
