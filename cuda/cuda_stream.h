// cuda_stream.h — what every .cu file needs to take part in decode-step graphs (graph_cuda.cu):
// the calling thread's current stream, which all ops, kernels and copies of cuda/ are queued on
// (the legacy default stream unless the forward pass set its own: a graph can only be recorded
// from a stream of its own), and the generation of the scratch buffers kernels keep between
// calls, since a recorded graph holds their addresses.
#ifndef QS_CUDA_STREAM_H
#define QS_CUDA_STREAM_H

#include <cuda_runtime.h>
#include <stdint.h>

cudaStream_t qs_cuda_stream(void);
// Whether the current stream is recording a graph. Buffers must not be allocated, freed or
// synchronised on then; callers that would must fail instead, so the capture falls back.
bool qs_cuda_capturing(void);
// To be called whenever a scratch buffer kept between calls gets a new address.
void qs_cuda_buffers_moved(void);
uint64_t qs_cuda_buffers_epoch(void);

#endif
