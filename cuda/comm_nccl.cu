// comm_nccl.cu — NCCL loaded with dlopen and wrapped as a qs_comm (see comm_nccl.h). Only the
// handful of NCCL entry points tensor parallelism needs are declared, with the types and enum
// values of NCCL's public header (nccl.h, NCCL 2.x): the library is ABI-stable across 2.x.
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <mutex>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dl_bind.cuh"
#include "comm_nccl.h"
#include "cuda_stream.h"

namespace {

// ---- the NCCL API, as nccl.h declares it ----
typedef struct ncclComm *ncclComm_t;
typedef struct {
    char internal[128]; // NCCL_UNIQUE_ID_BYTES
} ncclUniqueId;
typedef enum { ncclSuccess = 0, ncclInProgress = 7 } ncclResult_t;
typedef enum { ncclInt32 = 2, ncclFloat32 = 7, ncclBfloat16 = 9 } ncclDataType_t;
typedef enum { ncclSum = 0 } ncclRedOp_t;

struct nccl_api {
    ncclResult_t (*GetUniqueId)(ncclUniqueId *);
    ncclResult_t (*CommInitRank)(ncclComm_t *, int, ncclUniqueId, int);
    ncclResult_t (*AllReduce)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t);
    ncclResult_t (*AllGather)(const void *, void *, size_t, ncclDataType_t, ncclComm_t, cudaStream_t);
    ncclResult_t (*Broadcast)(const void *, void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
    ncclResult_t (*CommDestroy)(ncclComm_t);
    ncclResult_t (*CommAbort)(ncclComm_t);
    ncclResult_t (*CommGetAsyncError)(ncclComm_t, ncclResult_t *);
    const char *(*GetErrorString)(ncclResult_t);
};

std::once_flag g_once;
nccl_api g_api;
bool g_ok;
char g_error[512];

template <typename T> bool bind(void *lib, const char *name, T *slot)
{
    return qs_dl_bind(lib, "libnccl.so.2", name, slot, g_error, sizeof g_error);
}

// QSERVE_NCCL_LIBRARY names the library file (e.g. the pip wheel's .../nvidia/nccl/lib/libnccl.so.2);
// without it the dynamic linker's search (LD_LIBRARY_PATH, ld.so.cache) finds libnccl.so.2.
void load()
{
    const char *named = getenv("QSERVE_NCCL_LIBRARY");
    void *lib = NULL;
    if (named && *named) {
        lib = dlopen(named, RTLD_NOW | RTLD_LOCAL);
        if (!lib) {
            snprintf(g_error, sizeof g_error,
                     "tensor parallelism on GPUs needs NCCL: cannot load QSERVE_NCCL_LIBRARY=%s (%s)", named,
                     dlerror());
            return;
        }
    } else {
        lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
        if (!lib)
            lib = dlopen("libnccl.so", RTLD_NOW | RTLD_LOCAL);
    }
    if (!lib) {
        snprintf(g_error, sizeof g_error,
                 "tensor parallelism on GPUs needs NCCL: cannot load libnccl.so.2 (%s); install NVIDIA's libnccl2 "
                 "package (or pip's nvidia-nccl-cu12), then put its lib/ on LD_LIBRARY_PATH or name the file in "
                 "QSERVE_NCCL_LIBRARY",
                 dlerror());
        return;
    }
    g_ok = bind(lib, "ncclGetUniqueId", &g_api.GetUniqueId) && bind(lib, "ncclCommInitRank", &g_api.CommInitRank) &&
           bind(lib, "ncclAllReduce", &g_api.AllReduce) && bind(lib, "ncclAllGather", &g_api.AllGather) &&
           bind(lib, "ncclBroadcast", &g_api.Broadcast) && bind(lib, "ncclCommDestroy", &g_api.CommDestroy) &&
           bind(lib, "ncclCommAbort", &g_api.CommAbort) &&
           bind(lib, "ncclCommGetAsyncError", &g_api.CommGetAsyncError) &&
           bind(lib, "ncclGetErrorString", &g_api.GetErrorString);
}

struct nccl_impl {
    ncclComm_t comm;
    cudaStream_t stream; // the stream given at creation, or NULL: the calling thread's current one
    cudaStream_t last;   // where the latest collective was queued (what sync waits for)
    qs_comm *host;
};

// The stream a collective goes to: the one given at creation, else the thread's current stream
// (cuda_stream.h: the model's own while a step runs on it), so collectives queue behind the ops.
cudaStream_t stream_of(nccl_impl *im) { return im->last = im->stream ? im->stream : qs_cuda_stream(); }

double now_s()
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

ncclDataType_t nccl_type(qs_comm_dtype dt)
{
    return dt == QS_COMM_F32 ? ncclFloat32 : dt == QS_COMM_BF16 ? ncclBfloat16 : ncclInt32;
}

int nccl_fail(ncclResult_t r, const char *what, qs_err *err)
{
    return qs_errf(err, "NCCL %s: %s", what, g_api.GetErrorString(r));
}

// Waits for the stream (the queued collective) against the host communicator's deadline.
int wait_stream(qs_comm *c, const char *what, qs_err *err)
{
    nccl_impl *im = (nccl_impl *)c->impl;
    if (qs_cuda_capturing())
        return 0; // recorded into a graph: the replay runs it, nothing is queued to wait for now
    double start = now_s();
    for (;;) {
        cudaError_t e = cudaStreamQuery(im->last);
        if (e == cudaSuccess)
            return 0;
        if (e != cudaErrorNotReady)
            return qs_errf(err, "NCCL %s: %s", what, cudaGetErrorString(e));
        ncclResult_t async = ncclSuccess;
        g_api.CommGetAsyncError(im->comm, &async);
        if (async != ncclSuccess && async != ncclInProgress)
            return nccl_fail(async, what, err);
        if (now_s() - start > c->timeout_s) {
            char why[256];
            snprintf(why, sizeof why, "NCCL %s waited %.0f s for the other ranks: a rank died or hangs", what,
                     now_s() - start);
            g_api.CommAbort(im->comm);
            im->host->abort(im->host, why);
        }
        sched_yield();
    }
}

// Queued behind the step's ops and not waited for: the next op on the stream reads the sum, and
// the step's sync (or the logits gather) waits, against the deadline, for all of them at once.
int nccl_all_reduce(qs_comm *c, void *buf, int64_t count, qs_comm_dtype dt, qs_err *err)
{
    nccl_impl *im = (nccl_impl *)c->impl;
    ncclResult_t r = g_api.AllReduce(buf, buf, (size_t)count, nccl_type(dt), ncclSum, im->comm, stream_of(im));
    return r != ncclSuccess ? nccl_fail(r, "all-reduce", err) : 0;
}

int nccl_sync(qs_comm *c, qs_err *err) { return wait_stream(c, "collectives of the step", err); }

int nccl_all_gather(qs_comm *c, const void *send, void *recv, int64_t count, qs_comm_dtype dt, qs_err *err)
{
    nccl_impl *im = (nccl_impl *)c->impl;
    ncclResult_t r = g_api.AllGather(send, recv, (size_t)count, nccl_type(dt), im->comm, stream_of(im));
    return r != ncclSuccess ? nccl_fail(r, "all-gather", err) : wait_stream(c, "all-gather", err);
}

int nccl_broadcast(qs_comm *c, void *buf, int64_t count, qs_comm_dtype dt, int root, qs_comm_wait wait, qs_err *err)
{
    (void)wait; // device data moves only inside a step: always the step's deadline
    nccl_impl *im = (nccl_impl *)c->impl;
    ncclResult_t r = g_api.Broadcast(buf, buf, (size_t)count, nccl_type(dt), root, im->comm, stream_of(im));
    return r != ncclSuccess ? nccl_fail(r, "broadcast", err) : wait_stream(c, "broadcast", err);
}

int nccl_barrier(qs_comm *c, qs_err *err)
{
    nccl_impl *im = (nccl_impl *)c->impl;
    return im->host->barrier(im->host, err); // no device data: the host communicator's barrier
}

void nccl_abort(qs_comm *c, const char *why)
{
    nccl_impl *im = (nccl_impl *)c->impl;
    g_api.CommAbort(im->comm);
    im->host->abort(im->host, why);
}

void nccl_destroy(qs_comm *c)
{
    nccl_impl *im = (nccl_impl *)c->impl;
    g_api.CommDestroy(im->comm);
    free(im);
    free(c);
}

} // namespace

extern "C" qs_comm *qs_comm_nccl(qs_comm *host, int device, void *stream, qs_err *err)
{
    std::call_once(g_once, load);
    if (!g_ok) {
        qs_errf(err, "%s", g_error);
        return nullptr;
    }
    cudaError_t ce = device >= 0 ? cudaSetDevice(device) : cudaSuccess;
    if (ce != cudaSuccess) {
        qs_errf(err, "tensor parallel rank %d: CUDA device %d: %s", host->rank, device, cudaGetErrorString(ce));
        return nullptr;
    }
    ncclUniqueId id;
    memset(&id, 0, sizeof id);
    if (host->rank == 0) {
        ncclResult_t r = g_api.GetUniqueId(&id);
        if (r != ncclSuccess) {
            nccl_fail(r, "unique id", err);
            return nullptr;
        }
    }
    // the id (opaque bytes) goes to every rank over MPI, as 32 int32s
    if (host->broadcast(host, &id, sizeof id / 4, QS_COMM_I32, 0, QS_COMM_WAIT_STEP, err))
        return nullptr;
    nccl_impl *im = (nccl_impl *)calloc(1, sizeof *im);
    qs_comm *c = (qs_comm *)calloc(1, sizeof *c);
    if (!im || !c) {
        free(im);
        free(c);
        qs_errf(err, "out of memory");
        return nullptr;
    }
    ncclResult_t r = g_api.CommInitRank(&im->comm, host->size, id, host->rank);
    if (r != ncclSuccess) {
        free(im);
        free(c);
        nccl_fail(r, "communicator start", err);
        return nullptr;
    }
    im->stream = (cudaStream_t)stream;
    im->last = im->stream ? im->stream : qs_cuda_stream();
    im->host = host;
    c->name = "nccl";
    c->rank = host->rank;
    c->size = host->size;
    c->timeout_s = host->timeout_s > 0 ? host->timeout_s : 60.0; // the host's deadline (QSERVE_TP_TIMEOUT)
    c->all_reduce_sum = nccl_all_reduce;
    c->all_gather = nccl_all_gather;
    c->broadcast = nccl_broadcast;
    c->barrier = nccl_barrier;
    c->sync = nccl_sync;
    c->abort = nccl_abort;
    c->destroy = nccl_destroy;
    c->impl = im;
    return c;
}
