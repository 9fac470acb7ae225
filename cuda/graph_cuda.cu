// graph_cuda.cu — streams and CUDA graphs for decode-step replay (the qs_graph_ops of
// src/core/ops.h; src/model/step_graph.c drives them). The current stream is per thread: the
// engine thread's forward pass sets its own stream and every op of cuda/ launches on it, while
// any other thread (the GPU tests, loaders) keeps the legacy default stream as before.
// Captures use cudaStreamCaptureModeThreadLocal: an allocation, free or synchronisation made by
// the capturing thread in the middle of a capture is refused by the runtime, so a path that would
// grow a buffer makes the capture fail (and the step run eagerly) instead of recording a graph
// around a pointer that is about to change. The stream is created blocking (not
// cudaStreamNonBlocking), so the synchronous cudaMemcpy of the ops' plain copies still orders
// itself with the work on it.
#include <atomic>
#include <string.h>

#include "cuda_check.h"
#include "cuda_stream.h"
#include "qs_cuda_ops.h"

namespace {

thread_local cudaStream_t t_stream = nullptr;
std::atomic<uint64_t> g_epoch{1};

void *stream_create(qs_err *err)
{
    cudaStream_t s = nullptr;
    cudaError_t rc = cudaStreamCreateWithFlags(&s, cudaStreamDefault);
    if (rc != cudaSuccess) {
        qs_errf(err, "cudaStreamCreateWithFlags failed: %s", cudaGetErrorString(rc));
        return nullptr;
    }
    return s;
}

void stream_destroy(void *s)
{
    if (s) {
        cudaStreamSynchronize((cudaStream_t)s);
        cudaStreamDestroy((cudaStream_t)s);
    }
}

void *set_stream(void *s)
{
    cudaStream_t prev = t_stream;
    t_stream = (cudaStream_t)s;
    return prev;
}

void *host_alloc(size_t bytes, qs_err *err)
{
    void *p = nullptr;
    cudaError_t rc = cudaMallocHost(&p, bytes ? bytes : 1);
    if (rc != cudaSuccess) {
        qs_errf(err, "cudaMallocHost of %zu bytes failed: %s", bytes, cudaGetErrorString(rc));
        return nullptr;
    }
    memset(p, 0, bytes ? bytes : 1);
    return p;
}

void host_free(void *p)
{
    if (p)
        cudaFreeHost(p);
}

int copy_async(void *dst, const void *src, size_t bytes, qs_err *err)
{
    QS_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, t_stream), err);
    return 0;
}

int copy_2d_async(void *dst, size_t dst_pitch, const void *src, size_t src_pitch, size_t width, size_t rows,
                  qs_err *err)
{
    if (!width || !rows)
        return 0;
    QS_CUDA_TRY(cudaMemcpy2DAsync(dst, dst_pitch, src, src_pitch, width, rows, cudaMemcpyHostToDevice, t_stream),
                err);
    return 0;
}

int capture_begin(qs_err *err)
{
    if (!t_stream)
        return qs_errf(err, "CUDA graph capture needs a stream of its own, and this thread uses the default stream");
    QS_CUDA_TRY(cudaStreamBeginCapture(t_stream, cudaStreamCaptureModeThreadLocal), err);
    return 0;
}

int capture_end(void **graph, size_t *nodes, qs_err *err)
{
    *graph = nullptr;
    if (nodes)
        *nodes = 0;
    cudaGraph_t g = nullptr;
    cudaError_t rc = cudaStreamEndCapture(t_stream, &g);
    // Whatever went wrong inside the capture was also left as the thread's last error: clear it,
    // so the next launch check does not report it again.
    cudaGetLastError();
    if (rc != cudaSuccess || !g) {
        if (g)
            cudaGraphDestroy(g);
        return qs_errf(err, "cudaStreamEndCapture failed: %s",
                       cudaGetErrorString(rc != cudaSuccess ? rc : cudaErrorUnknown));
    }
    if (nodes && cudaGraphGetNodes(g, nullptr, nodes) != cudaSuccess)
        *nodes = 0;
    cudaGraphExec_t exec = nullptr;
    rc = cudaGraphInstantiate(&exec, g, 0);
    cudaGraphDestroy(g); // the executable graph is independent of it
    if (rc != cudaSuccess) {
        cudaGetLastError();
        return qs_errf(err, "cudaGraphInstantiate failed: %s", cudaGetErrorString(rc));
    }
    *graph = exec;
    return 0;
}

int graph_launch(void *graph, qs_err *err)
{
    QS_CUDA_TRY(cudaGraphLaunch((cudaGraphExec_t)graph, t_stream), err);
    return 0;
}

void graph_destroy(void *graph)
{
    if (graph)
        cudaGraphExecDestroy((cudaGraphExec_t)graph);
}

uint64_t buffers_epoch(void) { return g_epoch.load(); }

} // namespace

extern "C" const qs_graph_ops qs_cuda_graph_ops = {
    stream_create, stream_destroy, set_stream,   host_alloc,   host_free,     copy_async,
    copy_2d_async, capture_begin,  capture_end, graph_launch, graph_destroy, buffers_epoch,
};

cudaStream_t qs_cuda_stream(void) { return t_stream; }

bool qs_cuda_capturing(void)
{
    if (!t_stream)
        return false;
    cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(t_stream, &st) != cudaSuccess) {
        cudaGetLastError();
        return true; // cannot tell: treat as capturing, so nothing is reallocated under a capture
    }
    return st != cudaStreamCaptureStatusNone;
}

void qs_cuda_buffers_moved(void) { g_epoch.fetch_add(1); }

uint64_t qs_cuda_buffers_epoch(void) { return g_epoch.load(); }

