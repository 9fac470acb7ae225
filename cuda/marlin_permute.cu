// marlin_permute.cu — the activations copied into the packer's k order (marlin_layout.h): xp[m][j]
// = x[m][logical source of j], k_pad wide, zeros past k. The wgmma kernel (marlin_wgmma.cu) and the
// stream kernel's rewrite-free path (marlin_stream.cu, which writes its own copy) read B in that
// order. Per thread one 32-k item of a row (marlin_permute.cuh).
#include <algorithm>

#include "marlin.h"
#include "marlin_device.cuh"
#include "marlin_permute.cuh"

namespace qs_marlin {
namespace {

template <bool FP4>
__global__ void __launch_bounds__(256) permute_kernel(const __nv_bfloat16 *x, int xs, __nv_bfloat16 *xp, int m, int k,
                                                      int k_pad)
{
    allow_next_grid(); // the kernel after it waits for all of this grid before reading xp
    const int items = k_pad / 32;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (int64_t)m * items;
         i += (int64_t)gridDim.x * blockDim.x) {
        permute_item<FP4>(x, xs, xp, (int)(i / items), (int)(i % items), k, k_pad); // item b: k [32b, 32b + 32)
    }
}

} // namespace

int permute_activations(const Layer &l, const __nv_bfloat16 *x, int64_t xs, int64_t m, __nv_bfloat16 *xp,
                        cudaStream_t s, qs_err *err)
{
    // A plain launch, after the kernel that wrote x: as a programmatic dependent launch it made
    // every stream-kernel call ~5 us slower (docs/marlin-history.md, session 14).
    const int64_t threads = m * (l.k_pad / 32);
    const unsigned blocks = (unsigned)std::min<int64_t>((threads + 255) / 256, 4096);
    if (l.fp4)
        permute_kernel<true><<<blocks, 256, 0, s>>>(x, (int)xs, xp, (int)m, (int)l.k, (int)l.k_pad);
    else
        permute_kernel<false><<<blocks, 256, 0, s>>>(x, (int)xs, xp, (int)m, (int)l.k, (int)l.k_pad);
    QS_LAUNCH_CHECK(err);
    return 0;
}

} // namespace qs_marlin
