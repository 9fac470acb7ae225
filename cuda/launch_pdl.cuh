// launch_pdl.cuh — the one place a kernel is launched as a programmatic dependent launch (sm_90+):
// with pdl, the kernel may start while the kernel before it on the stream drains, so it must run
// griddepcontrol.wait before reading anything that kernel writes; without, a plain launch.
#ifndef QS_LAUNCH_PDL_CUH
#define QS_LAUNCH_PDL_CUH

#include <cuda_runtime.h>

template <typename Kernel, typename... Args>
cudaError_t qs_launch_pdl(Kernel kernel, dim3 grid, dim3 block, size_t smem, cudaStream_t stream, bool pdl,
                          const Args &...args)
{
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = stream;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = attr;
    cfg.numAttrs = pdl ? 1 : 0;
    return cudaLaunchKernelEx(&cfg, kernel, args...);
}

// A kernel launched with pdl may run this first: it waits for the kernel before it on the stream to
// finish (and its writes to be visible), then lets the kernel after it launch, so that kernel's
// start overlaps this one. Every CTA must call it before anything else (a grid that ended without
// waiting would let the kernel after it read what the one before has not written yet). No-op
// before sm_90 and in kernels launched without pdl.
__device__ __forceinline__ void qs_pdl_wait_then_release()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;\n" ::);
#endif
}

// Whether the decode step's small ops (RMSNorm, SwiGLU, the q/k/v split with RoPE and the cache
// write, decode attention) launch with pdl: sm_90 and later (launch_pdl.cu; a dev build's
// QSERVE_OPS_PDL=0 turns it off, read once: lab_knob.h).
bool qs_ops_pdl();

#endif
