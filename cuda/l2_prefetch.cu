// l2_prefetch.cu — the kernel behind l2_prefetch.h: each thread asks L2 for 32 KB runs of the
// buffer with cp.async.bulk.prefetch.L2 (no registers, no shared memory: the request is all it
// costs the SM), so a few small CTAs cover a layer's weights in microseconds while the data moves
// in the background.
#include <cuda_runtime.h>
#include <stdint.h>

#include "cuda_check.h"
#include "l2_prefetch.h"
#include "launch_pdl.cuh"

namespace {

constexpr int kThreads = 32;
constexpr size_t kRunBytes = 32 * 1024; // one bulk prefetch

__global__ void __launch_bounds__(kThreads) l2_prefetch_kernel(const char *buf, size_t bytes)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    // The kernel after it (reading what the kernel before wrote) may launch now; this kernel ends
    // only once the kernel before it has, so that kernel's wait still covers the one before.
    asm volatile("griddepcontrol.launch_dependents;\n" ::);
    const size_t stride = (size_t)gridDim.x * kThreads * kRunBytes;
    for (size_t at = ((size_t)blockIdx.x * kThreads + threadIdx.x) * kRunBytes; at < bytes; at += stride) {
        const size_t left = bytes - at;
        const unsigned run = (unsigned)((left < kRunBytes ? left : kRunBytes) & ~(size_t)15);
        if (run)
            asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(buf + at), "r"(run) : "memory");
    }
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

int device_major()
{
    static const int major = [] {
        int dev = 0, m = 0;
        return cudaGetDevice(&dev) == cudaSuccess &&
                       cudaDeviceGetAttribute(&m, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess
                   ? m
                   : 0;
    }();
    return major;
}

} // namespace

extern "C" int qs_cuda_l2_prefetch(const void *buf, size_t bytes, void *stream, qs_err *err)
{
    if (!buf || bytes < 16)
        return 0;
    if ((uintptr_t)buf % 16)
        return qs_errf(err, "l2 prefetch: buffer %p is not 16-byte aligned", buf);
    if (device_major() < 9)
        return 0;
    const size_t runs = (bytes + kRunBytes - 1) / kRunBytes;
    const unsigned blocks = (unsigned)((runs + kThreads - 1) / kThreads);
    QS_CUDA_TRY(qs_launch_pdl(l2_prefetch_kernel, dim3(blocks), dim3(kThreads), 0, (cudaStream_t)stream,
                              qs_ops_pdl(), (const char *)buf, bytes),
                err);
    QS_LAUNCH_CHECK(err);
    return 0;
}
