// read_probe.cu — the streaming read behind read_probe.h: a grid that fills every SM, each thread
// keeping four 16-byte loads in flight (streaming cache hint: read once), a block sum, one atomic
// add per block (atomics on one word serialise: one per warp cost ~5 us on the H200). Launched
// as marlin's kernels are, with programmatic dependent launch on sm_90+: back to back, a call's
// reads start while the previous call drains, as a GEMM's weight reads do.
#include <cuda_runtime.h>

#include "cuda_check.h"
#include "launch_pdl.cuh"
#include "probe_sum.cuh"
#include "device_query.h"
#include "read_probe.h"

namespace {

constexpr int kThreads = 1024;

__global__ void __launch_bounds__(kThreads) read_sum_kernel(const uint4 *__restrict__ v, size_t n16,
                                                            const uint32_t *__restrict__ tail, int n_tail,
                                                            uint32_t *sum)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;\n" ::);
#endif
    const size_t stride = (size_t)gridDim.x * kThreads;
    size_t i = (size_t)blockIdx.x * kThreads + threadIdx.x;
    uint32_t s = 0;
    for (; i + 3 * stride < n16; i += 4 * stride) {
        const uint4 a = __ldcs(v + i), b = __ldcs(v + i + stride), c = __ldcs(v + i + 2 * stride),
                    d = __ldcs(v + i + 3 * stride);
        s += word_sum(a) + word_sum(b) + word_sum(c) + word_sum(d);
    }
    for (; i < n16; i += stride)
        s += word_sum(__ldcs(v + i));
    if (blockIdx.x == 0 && (int)threadIdx.x < n_tail)
        s += tail[threadIdx.x];
    __shared__ uint32_t warp_sums[kThreads / 32];
    s = warp_word_sum(s);
    if ((threadIdx.x & 31) == 0)
        warp_sums[threadIdx.x / 32] = s;
    __syncthreads();
    if (threadIdx.x < 32) {
        s = warp_word_sum(warp_sums[threadIdx.x]);
        if (threadIdx.x == 0) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
            asm volatile("griddepcontrol.wait;\n" ::: "memory"); // the sum word: after the previous kernel
#endif
            atomicAdd(sum, s);
        }
    }
}

// The device: blocks that fill it once (every SM's thread slots), and whether it has
// programmatic dependent launch (compute capability 9.0+).
struct Device {
    int blocks = 0;
    bool pdl = false;
};
const Device &device()
{
    static Device d;
    if (!d.blocks) {
        int dev = 0, per_sm = 0, major = 0;
        cudaGetDevice(&dev);
        const int sms = qs_cuda_sm_count();
        cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxThreadsPerMultiProcessor, dev);
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
        d.pdl = major >= 9;
        d.blocks = (sms > 0 ? sms : 1) * (per_sm >= kThreads ? per_sm / kThreads : 1);
    }
    return d;
}

} // namespace

extern "C" int qs_cuda_read_sum(const void *buf, size_t bytes, uint32_t *dev_sum, void *stream, qs_err *err)
{
    if (bytes % 4 != 0 || ((uintptr_t)buf & 15) != 0)
        return qs_errf(err, "read probe: %zu bytes at %p: need a multiple of 4 bytes at a 16-byte aligned address",
                       bytes, buf);
    const size_t n16 = bytes / 16;
    const int n_tail = (int)(bytes % 16 / 4);
    const Device &d = device();
    const size_t want = (n16 + kThreads - 1) / kThreads;
    const size_t grid = want < (size_t)d.blocks ? (want ? want : 1) : (size_t)d.blocks;
    QS_CUDA_TRY(qs_launch_pdl(read_sum_kernel, dim3((unsigned)grid), dim3(kThreads), 0, (cudaStream_t)stream, d.pdl,
                              (const uint4 *)buf, n16, (const uint32_t *)((const uint8_t *)buf + n16 * 16), n_tail,
                              dev_sum),
                err);
    QS_LAUNCH_CHECK(err);
    return 0;
}
