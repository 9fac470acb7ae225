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

#endif
