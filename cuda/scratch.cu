// scratch.cu — growable device scratch buffers (see scratch.h). Growth synchronises the device
// before freeing the old buffer, since queued work may still read it, and tells graph_cuda.cu
// that the address changed (a recorded graph holding the old one is stale). Growth is refused
// while the current stream records a graph: the capture then fails and that step runs eagerly.
#include <mutex>

#include "cuda_check.h"
#include "cuda_stream.h"
#include "scratch.h"

namespace {
std::mutex g_mu;
void *g_buf[QS_SCRATCH_COUNT];
size_t g_size[QS_SCRATCH_COUNT];
} // namespace

int qs_scratch_get(qs_scratch_slot slot, size_t bytes, void **ptr, qs_err *err)
{
    std::lock_guard<std::mutex> lock(g_mu);
    if (g_size[slot] < bytes) {
        if (qs_cuda_capturing())
            return qs_errf(err, "scratch buffer %d would grow from %zu to %zu bytes during a CUDA graph capture",
                           (int)slot, g_size[slot], bytes);
        if (g_buf[slot]) {
            QS_CUDA_TRY(cudaDeviceSynchronize(), err);
            cudaFree(g_buf[slot]);
            g_buf[slot] = nullptr;
            g_size[slot] = 0;
        }
        qs_cuda_buffers_moved();
        size_t grown = bytes + bytes / 4 + 256;
        QS_CUDA_TRY(cudaMalloc(&g_buf[slot], grown), err);
        g_size[slot] = grown;
    }
    *ptr = g_buf[slot];
    return 0;
}
