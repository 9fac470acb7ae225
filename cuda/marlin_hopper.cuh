// marlin_hopper.cuh — the Hopper-only (sm_90a) device primitives of the marlin wgmma kernels
// (marlin_wgmma.cu, marlin_stream.cu): warpgroup MMA with the weights as the register A operand
// and the activations as a shared-memory B operand, its shared-memory descriptors, the mbarriers
// and tensor copies a producer warp fills a shared-memory ring with, register hand-over between
// warpgroups, named barriers and a GPU-scope acquire load. Every primitive
// compiles to nothing outside an sm_90a build (the host launches these kernels on 9.0 only).
#ifndef QS_CUDA_MARLIN_HOPPER_CUH
#define QS_CUDA_MARLIN_HOPPER_CUH

#include <cuda_bf16.h>
#include <stdint.h>

#include "marlin.h"
#include "marlin_layout.h"

namespace qs_marlin {
namespace {

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define QS_WGMMA 1
#endif

// Shared-memory matrix descriptor of one k16 slice of a stage (no swizzle, K-major): LBO = the
// step between the two 8-k core matrices of a token group, SBO = the step between token groups.
// The descriptor of any other slice is this one plus its byte offset / 16 (the address field is
// the low 14 bits; shared memory stays below 2^18 bytes, so no carry leaves the field).
__device__ __forceinline__ uint64_t slice_descriptor(const void *smem)
{
    const uint64_t addr = (uint32_t)__cvta_generic_to_shared(smem);
    constexpr uint64_t lbo = 128, sbo = 256; // measured: swapped, every output is wrong
    return ((addr >> 4) & 0x3FFF) | (((lbo >> 4) & 0x3FFF) << 16) | (((sbo >> 4) & 0x3FFF) << 32);
}

// Shared-memory matrix descriptor of a K-major operand in the 128-byte swizzle a tensor copy with
// CU_TENSOR_MAP_SWIZZLE_128B leaves (rows of 64 BF16, 8-row atoms of 1024 bytes, 1024-byte aligned):
// SBO = 1024 between 8-row groups, LBO unused, layout type 1 (bits 62-63). A k16 slice further
// along the row is this plus its 32-byte offset / 16: the swizzle is applied to the address.
__device__ __forceinline__ uint64_t swizzled_descriptor(const void *smem)
{
    const uint64_t addr = (uint32_t)__cvta_generic_to_shared(smem);
    constexpr uint64_t sbo = 1024;
    return ((addr >> 4) & 0x3FFF) | (1ull << 16) | (((sbo >> 4) & 0x3FFF) << 32) | (1ull << 62);
}

__device__ __forceinline__ void wgmma_fence()
{
#ifdef QS_WGMMA
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void wgmma_commit()
{
#ifdef QS_WGMMA
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}
template <int N> __device__ __forceinline__ void wgmma_wait()
{
#ifdef QS_WGMMA
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
#endif
}
// Orders this thread's shared-memory writes (cp.async) before the async proxy's reads (wgmma).
__device__ __forceinline__ void fence_async_shared()
{
#ifdef QS_WGMMA
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

// d (64 x NT, this warp's 16 rows) += A (this warp's 16 rows x k16, registers) * B (k16 x NT, smem).
template <int NT> __device__ __forceinline__ void wgmma_acc(float (&d)[NT / 2], const uint32_t a[4], uint64_t desc);

// One specialization per token tile: the instruction names its n, and its accumulators are
// separate operands (D_REGS: their operand numbers, then A's four and the descriptor's).
#ifdef QS_WGMMA
#define QS_WGMMA_ASM(...) asm volatile(__VA_ARGS__)
#else
#define QS_WGMMA_ASM(...)
#endif
#define QS_D4(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3])
#define QS_WGMMA_ACC(N, D_REGS, A_REGS, DESC_REG, ...)                                                                 \
    template <>                                                                                                        \
    __device__ __forceinline__ void wgmma_acc<N>(float(&d)[N / 2], const uint32_t a[4], uint64_t desc)                 \
    {                                                                                                                  \
        QS_WGMMA_ASM("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"                                                       \
                     "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32.bf16.bf16 "                                       \
                     "{" D_REGS "}, {" A_REGS "}, " DESC_REG ", p, 1, 1, 0;\n}\n"                                     \
                     : __VA_ARGS__                                                                                     \
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc));                                          \
    }
QS_WGMMA_ACC(64, "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"
             "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31", "%32,%33,%34,%35", "%36",
             QS_D4(0), QS_D4(4), QS_D4(8), QS_D4(12), QS_D4(16), QS_D4(20), QS_D4(24), QS_D4(28))
QS_WGMMA_ACC(56, "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"
             "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27", "%28,%29,%30,%31", "%32",
             QS_D4(0), QS_D4(4), QS_D4(8), QS_D4(12), QS_D4(16), QS_D4(20), QS_D4(24))
QS_WGMMA_ACC(48, "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"
             "%16,%17,%18,%19,%20,%21,%22,%23", "%24,%25,%26,%27", "%28",
             QS_D4(0), QS_D4(4), QS_D4(8), QS_D4(12), QS_D4(16), QS_D4(20))
QS_WGMMA_ACC(40, "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,"
             "%16,%17,%18,%19", "%20,%21,%22,%23", "%24",
             QS_D4(0), QS_D4(4), QS_D4(8), QS_D4(12), QS_D4(16))
QS_WGMMA_ACC(32, "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15", "%16,%17,%18,%19", "%20",
             QS_D4(0), QS_D4(4), QS_D4(8), QS_D4(12))
QS_WGMMA_ACC(24, "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11", "%12,%13,%14,%15", "%16",
             QS_D4(0), QS_D4(4), QS_D4(8))
QS_WGMMA_ACC(16, "%0,%1,%2,%3,%4,%5,%6,%7", "%8,%9,%10,%11", "%12",
             QS_D4(0), QS_D4(4))
#undef QS_WGMMA_ACC
#undef QS_D4
#undef QS_WGMMA_ASM

// mbarriers (one 64-bit word of shared memory each, addressed by its shared-memory address).
__device__ __forceinline__ void mbar_init(uint32_t bar, int count)
{
#ifdef QS_WGMMA
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
#endif
}
// Makes initialised mbarriers visible to the async proxy (the bulk copies that complete on them).
__device__ __forceinline__ void mbar_init_fence()
{
#ifdef QS_WGMMA
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar)
{
#ifdef QS_WGMMA
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
#endif
}
// One arrival that also announces `bytes` of bulk copies completing on this phase.
__device__ __forceinline__ void mbar_arrive_expect(uint32_t bar, uint32_t bytes)
{
#ifdef QS_WGMMA
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
#endif
}
// Waits until the phase of parity `parity` has completed.
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity)
{
#ifdef QS_WGMMA
    uint32_t done;
    do {
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                     "selp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done)
                     : "r"(bar), "r"(parity)
                     : "memory");
    } while (!done);
#endif
}
// Warp-specialised register budgets: a warpgroup that only issues copies hands registers back,
// one that computes takes them (every warp of the warpgroup executes the same call).
template <int N> __device__ __forceinline__ void release_registers()
{
#ifdef QS_WGMMA
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
#endif
}
template <int N> __device__ __forceinline__ void claim_registers()
{
#ifdef QS_WGMMA
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
#endif
}

// A box of a 3-D tensor map (coordinates innermost first) from global to shared memory by the
// tensor-copy engine, completing on mbarrier `bar`.
__device__ __forceinline__ void tensor_copy_3d(uint32_t dst, const void *map, int c0, int c1, int c2, uint32_t bar)
{
#ifdef QS_WGMMA
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], "
                 "[%5];\n" ::"r"(dst),
                 "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
                 : "memory");
#endif
}

// `bytes` contiguous bytes (a multiple of 16, both addresses 16-byte aligned) from global to
// shared memory by the bulk-copy engine, completing on mbarrier `bar` (no tensor map).
__device__ __forceinline__ void bulk_copy(uint32_t dst, const void *src, uint32_t bytes, uint32_t bar)
{
#ifdef QS_WGMMA
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(dst),
                 "l"(src), "r"(bytes), "r"(bar)
                 : "memory");
#endif
}

// A box of a 2-D tensor map (coordinates innermost first), as tensor_copy_3d.
__device__ __forceinline__ void tensor_copy_2d(uint32_t dst, const void *map, int c0, int c1, uint32_t bar)
{
#ifdef QS_WGMMA
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], "
                 "[%4];\n" ::"r"(dst),
                 "l"(map), "r"(c0), "r"(c1), "r"(bar)
                 : "memory");
#endif
}

// Named barrier `id` of `threads` threads: arrive without waiting (the arriving threads' earlier
// memory accesses are performed for the threads that wait on it), and arrive-and-wait.
template <int ID, int THREADS> __device__ __forceinline__ void named_arrive()
{
    asm volatile("bar.arrive %0, %1;\n" ::"n"(ID), "n"(THREADS) : "memory");
}
template <int ID, int THREADS> __device__ __forceinline__ void named_sync()
{
    asm volatile("bar.sync %0, %1;\n" ::"n"(ID), "n"(THREADS) : "memory");
}

// A GPU-scope acquire load: what the writer released before its flag is visible after it.
__device__ __forceinline__ int load_acquire(const int *p)
{
    int v;
    asm volatile("ld.acquire.gpu.global.b32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
    return v;
}

} // namespace
} // namespace qs_marlin

#endif
