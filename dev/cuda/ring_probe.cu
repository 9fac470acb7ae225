// ring_probe.cu — the stream kernel's weight transport without the GEMM (ring_probe.h): a CTA per
// SM walks its contiguous share of a buffer's stages as marlin_stream.cu walks its share of a
// layer's items — one thread waits for a ring slot to be free, announces the stage's bytes on the
// slot's full mbarrier and issues one bulk copy; four warps wait for the slot to fill, sum its
// words and hand it back on the empty mbarrier — with no activations, expansion, MMA or split sum.
// Why: the stream kernel's weight stream alone (hollow level 3) runs ~20% slower than a plain read
// of the same bytes (docs/marlin.md, "Where the stream kernel's time goes"); this tells the ring
// itself apart from what the kernel does around it.
#include <cuda_runtime.h>

#include "cuda_check.h"
#include "launch_pdl.cuh"
#include "marlin.h"
#include "marlin_device.cuh"
#include "marlin_hopper.cuh"
#include "marlin_stream_plan.h"
#include "probe_sum.cuh"
#include "device_query.h"
#include "ring_probe.h"

namespace qs_marlin {
namespace {

constexpr int kConsumerWarps = 4;
constexpr int kRingThreads = 32 * (1 + kConsumerWarps); // warp 0: the copies (one thread)

__global__ void __launch_bounds__(kRingThreads, 1)
    ring_sum_kernel(const uint8_t *__restrict__ buf, int64_t bytes, int stage_bytes, int depth, uint32_t *sum)
{
#ifndef QS_WGMMA
    __trap(); // built for sm_90a only: the host launches it where that code is present
#endif
    extern __shared__ __align__(128) uint8_t ring[];
    __shared__ __align__(8) uint64_t bars[2 * QS_RING_PROBE_MAX_DEPTH];
    __shared__ uint32_t warp_sums[kConsumerWarps];
    const uint32_t full = (uint32_t)__cvta_generic_to_shared(bars), empty = full + 8 * QS_RING_PROBE_MAX_DEPTH;
    const uint32_t ring_base = (uint32_t)__cvta_generic_to_shared(ring);
    const int64_t stages = (bytes + stage_bytes - 1) / stage_bytes;
    const int64_t lo = share_begin(blockIdx.x, stages, gridDim.x), hi = share_begin(blockIdx.x + 1, stages, gridDim.x);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    allow_next_grid(); // the buffer is written by no kernel it may overlap (ring_probe.h)
    if (threadIdx.x == 0) {
        for (int i = 0; i < depth; i++) {
            mbar_init(full + 8 * i, 1);
            mbar_init(empty + 8 * i, kConsumerWarps);
        }
        mbar_init_fence();
    }
    __syncthreads();
    // the last stage of the buffer may be short
    auto stage_size = [&](int64_t st) { return (uint32_t)min((int64_t)stage_bytes, bytes - st * stage_bytes); };
    uint32_t s = 0;
    int slot = 0;
    uint32_t phase = 0;
    if (warp == 0) {
        if (lane == 0)
            for (int64_t i = 0; i < hi - lo; i++) {
                if (i >= depth)
                    mbar_wait(empty + 8 * slot, phase ^ 1);
                const uint32_t n = stage_size(lo + i);
                mbar_arrive_expect(full + 8 * slot, n);
                bulk_copy(ring_base + slot * stage_bytes, buf + (lo + i) * stage_bytes, n, full + 8 * slot);
                if (++slot == depth)
                    slot = 0, phase ^= 1;
            }
    } else {
        const int c = warp - 1;
        for (int64_t i = 0; i < hi - lo; i++) {
            mbar_wait(full + 8 * slot, phase);
            const uint32_t n = stage_size(lo + i);
            const uint8_t *stage = ring + slot * stage_bytes;
            for (uint32_t o = (uint32_t)(c * 32 + lane) * 16; o < n; o += kConsumerWarps * 32 * 16)
                s += word_sum(*(const uint4 *)(stage + o));
            __syncwarp();
            if (lane == 0)
                mbar_arrive(empty + 8 * slot);
            if (++slot == depth)
                slot = 0, phase ^= 1;
        }
        s = warp_word_sum(s);
        if (lane == 0)
            warp_sums[c] = s;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        uint32_t total = 0;
        for (int c = 0; c < kConsumerWarps; c++)
            total += warp_sums[c];
        wait_for_previous_grid(); // the sum word: after the previous kernel
        atomicAdd(sum, total);
    }
}

} // namespace
} // namespace qs_marlin

extern "C" int qs_cuda_ring_read_sum(const void *buf, size_t bytes, int stage_bytes, int depth, int ctas, bool alone,
                                     uint32_t *dev_sum, void *stream, qs_err *err)
{
    if (bytes == 0 || bytes % 16 != 0 || ((uintptr_t)buf & 15) != 0)
        return qs_errf(err, "ring probe: %zu bytes at %p: need a non-zero multiple of 16 bytes at a 16-byte aligned "
                            "address",
                       bytes, buf);
    if (stage_bytes < 16 || stage_bytes % 16 != 0 || depth < 2 || depth > QS_RING_PROBE_MAX_DEPTH ||
        (int64_t)depth * stage_bytes > QS_RING_PROBE_MAX_RING_BYTES)
        return qs_errf(err,
                       "ring probe: %d stages of %d bytes: need 2..%d stages of a multiple of 16 bytes, at most %d "
                       "bytes in all",
                       depth, stage_bytes, QS_RING_PROBE_MAX_DEPTH, QS_RING_PROBE_MAX_RING_BYTES);
    if (ctas < 0)
        return qs_errf(err, "ring probe: %d CTAs", ctas);
    qs_marlin::Runtime rt;
    if (qs_marlin::runtime(&rt, err))
        return -1;
    if (!rt.sm90)
        return qs_errf(err, "ring probe: needs a compute capability 9.0 device and a build with sm_90a code");
    const int64_t stages = (int64_t)((bytes + stage_bytes - 1) / stage_bytes);
    int64_t grid = ctas ? ctas : qs_marlin::even_share_ctas(stages, rt.sms);
    if (grid > stages)
        grid = stages;
    size_t smem = (size_t)depth * stage_bytes;
    if (alone) { // all the SM's shared memory but the kernel's own static part
        int dev = 0, optin = 0;
        cudaFuncAttributes attr;
        QS_CUDA_TRY(cudaGetDevice(&dev), err);
        QS_CUDA_TRY(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev), err);
        QS_CUDA_TRY(cudaFuncGetAttributes(&attr, qs_marlin::ring_sum_kernel), err);
        smem = (size_t)optin - attr.sharedSizeBytes;
    }
    QS_CUDA_TRY(
        cudaFuncSetAttribute(qs_marlin::ring_sum_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem), err);
    QS_CUDA_TRY(qs_launch_pdl(qs_marlin::ring_sum_kernel, dim3((unsigned)grid), dim3(qs_marlin::kRingThreads), smem,
                              (cudaStream_t)stream, rt.pdl, (const uint8_t *)buf, (int64_t)bytes, stage_bytes, depth,
                              dev_sum),
                err);
    QS_LAUNCH_CHECK(err);
    return 0;
}
