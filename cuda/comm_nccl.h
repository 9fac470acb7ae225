// comm_nccl.h — the NCCL communicator: the collectives of core/comm.h on GPU buffers, for
// tensor parallelism with one GPU per rank. NCCL is not packaged for Debian, so libnccl.so.2 is
// loaded on first use with dlopen (as cuBLASLt is, cublaslt_dyn.h) from the file QSERVE_NCCL_LIBRARY
// names, else from the library path, with declarations written after NCCL's public API; its unique
// id travels over the host communicator (MPI, or the one-rank one). Collectives are queued on the
// calling thread's current stream (the model's while a step runs on it); all-gather and broadcast
// are waited for, all-reduces only by sync, each against the host communicator's deadline, after
// which the NCCL communicator is aborted and the job ended.
#ifndef QS_CUDA_COMM_NCCL_H
#define QS_CUDA_COMM_NCCL_H

#ifdef __cplusplus
extern "C" {
#endif

#include "core/comm.h"

// A communicator over the same ranks as `host`, each rank on CUDA device `device` (-1: the
// calling thread's current one; qserve's ranks each see one GPU, tensor_parallel_gpu.c). NULL
// with err naming libnccl.so.2 when NCCL cannot be loaded, or NCCL's own message when it cannot
// start. The returned comm's collectives take device pointers; `stream` (NULL: the calling
// thread's current stream at each call) is where they are queued.
qs_comm *qs_comm_nccl(qs_comm *host, int device, void *stream, qs_err *err);

#ifdef __cplusplus
}
#endif

#endif
