/* backends.c — the one file that names the backends (as ggml-backend-reg.cpp does): the CPU
 * always, CUDA when this binary was built with nvcc (QS_HAVE_CUDA). Everything else reaches a
 * backend through the description it exports (core/backend.h), so adding one means adding its
 * line here. */
#include "device/backends.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "cpu/backend_cpu.h"
#ifdef QS_HAVE_CUDA
#include "backend_cuda.h"
#endif

static const qs_backend *const BACKENDS[] = {
    &qs_backend_cpu,
#ifdef QS_HAVE_CUDA
    &qs_backend_cuda,
#endif
};

enum { BACKEND_COUNT = sizeof BACKENDS / sizeof BACKENDS[0] };

const qs_backend *const *qs_backends(int *count)
{
    *count = BACKEND_COUNT;
    return BACKENDS;
}

const qs_backend *qs_backend_for_platform(qs_platform platform)
{
    for (int i = 0; i < BACKEND_COUNT; i++)
        if (BACKENDS[i]->platform == platform)
            return BACKENDS[i];
    return NULL;
}

const qs_ops *qs_ops_for_platform(qs_platform platform, qs_err *err)
{
    const qs_backend *b = qs_backend_for_platform(platform);
    if (b)
        return b->ops();
    qs_errf(err, "this qserve was built without CUDA (nvcc was not found at build time): only --device cpu works");
    return NULL;
}

/* Room for every backend's list: a backend that outgrows it stops the program at its first start,
 * a build mistake, never a run-time condition. */
static const qs_kernel *g_all_kernels[64];
static int g_all_count;
static pthread_once_t g_all_once = PTHREAD_ONCE_INIT;

static void gather_kernels(void)
{
    for (int i = 0; i < BACKEND_COUNT; i++)
        for (int j = 0; j < BACKENDS[i]->kernel_count; j++) {
            if (g_all_count == (int)(sizeof g_all_kernels / sizeof g_all_kernels[0])) {
                fprintf(stderr, "backends.c: more kernel descriptors than g_all_kernels holds\n");
                abort();
            }
            g_all_kernels[g_all_count++] = BACKENDS[i]->kernels[j];
        }
}

const qs_kernel *const *qs_backends_kernels(int *count)
{
    pthread_once(&g_all_once, gather_kernels);
    *count = g_all_count;
    return g_all_kernels;
}
