// device_query.cu — implements cuda/device_query.h: asks the CUDA runtime how many devices there
// are and what device N is. Every runtime error becomes a 0 count or a qs_err, never an abort, so a CUDA
// build starts on a machine without a GPU or driver and runs on CPU.
#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>

#include "device_query.h"

static char g_unavailable[256];

extern "C" int qs_cuda_device_count(void)
{
    int n = 0;
    cudaError_t rc = cudaGetDeviceCount(&n);
    if (rc != cudaSuccess) {
        snprintf(g_unavailable, sizeof g_unavailable, "%s", cudaGetErrorString(rc));
        cudaGetLastError(); // clear the sticky error so later calls start clean
        return 0;
    }
    if (n == 0)
        snprintf(g_unavailable, sizeof g_unavailable, "the CUDA driver reports no devices");
    else
        g_unavailable[0] = '\0';
    return n;
}

extern "C" const char *qs_cuda_unavailable_reason(void) { return g_unavailable; }

extern "C" int qs_cuda_device_caps(int ordinal, qs_device_caps *caps, qs_err *err)
{
    int n = qs_cuda_device_count();
    if (ordinal < 0 || ordinal >= n) {
        char why[300] = "";
        if (g_unavailable[0])
            snprintf(why, sizeof why, " (%s)", g_unavailable);
        return qs_errf(err, "CUDA device %d: there %s %d CUDA device%s%s", ordinal, n == 1 ? "is" : "are", n,
                       n == 1 ? "" : "s", why);
    }
    cudaDeviceProp prop;
    cudaError_t rc = cudaGetDeviceProperties(&prop, ordinal);
    if (rc != cudaSuccess) {
        cudaGetLastError();
        return qs_errf(err, "CUDA device %d: cannot read its properties: %s", ordinal, cudaGetErrorString(rc));
    }
    memset(caps, 0, sizeof *caps);
    caps->platform = QS_PLATFORM_CUDA;
    snprintf(caps->name, sizeof caps->name, "%s", prop.name);
    caps->cc_major = prop.major;
    caps->cc_minor = prop.minor;
    caps->sm_count = prop.multiProcessorCount;
    caps->memory_bytes = prop.totalGlobalMem;
    caps->assumed = false;
    return 0;
}

extern "C" int qs_cuda_sm_count(void)
{
    static int counts[64]; // per device ordinal; a racing second reader stores the same value
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64) {
        cudaGetLastError();
        return 0;
    }
    if (!counts[dev] && cudaDeviceGetAttribute(&counts[dev], cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) {
        cudaGetLastError();
        counts[dev] = 0;
    }
    return counts[dev];
}
