// backend_cuda.cu — the CUDA backend's description (core/backend.h): device discovery
// (device_query.cu), memory info (memory.cu), the NCCL communicator (comm_nccl.cu), the ops table (ops_cuda.cu), the stream and graph
// hooks (graph_cuda.cu) and the kernel descriptors (qs_cuda_kernels.h) in the registry's order.
// Host code only: no kernel lives here.
#include "backend_cuda.h"
#include "comm_nccl.h"
#include "device_query.h"
#include "qs_cuda_kernels.h"
#include "qs_cuda_mem.h"
#include "qs_cuda_ops.h"

static const qs_kernel *const kCudaKernels[] = {
    &qs_kernel_cublaslt_bf16,
    &qs_kernel_cublaslt_fp8,
    &qs_kernel_emulation_linear,
    &qs_kernel_marlin_linear,
    &qs_kernel_marlin_moe,
    &qs_kernel_cublaslt_moe_bf16,
    &qs_kernel_cublaslt_moe_fp8,
    &qs_kernel_emulation_moe,
};

// NCCL over the host communicator, on the thread's current device and stream.
static qs_comm *cuda_device_comm(qs_comm *host, qs_err *err) { return qs_comm_nccl(host, -1, nullptr, err); }

// Positional, in core/backend.h's field order (C++17 has no designated initializers).
extern "C" const qs_backend qs_backend_cuda = {
    "cuda",
    QS_PLATFORM_CUDA,
    qs_cuda_device_count,
    qs_cuda_unavailable_reason,
    qs_cuda_device_caps,
    qs_cuda_mem_get_info,
    qs_ops_cuda,
    &qs_cuda_graph_ops,
    kCudaKernels,
    (int)(sizeof kCudaKernels / sizeof kCudaKernels[0]),
    cuda_device_comm,
};
