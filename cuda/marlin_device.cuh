// marlin_device.cuh — the pieces both marlin kernels use (marlin_gemm.cu: the pipelined GEMM;
// marlin_small_m.cu: the small-M kernel): their launch parameters and launch, async copies,
// programmatic dependent launch, the BF16 mma, and the split-K epilogue (the in-register FP8 / NVFP4
// expansion is in marlin_layout.h, shared with the packer).
#ifndef QS_CUDA_MARLIN_DEVICE_CUH
#define QS_CUDA_MARLIN_DEVICE_CUH

#include <cuda_bf16.h>
#include <stdint.h>

#include "cuda_check.h"
#include "launch_pdl.cuh"
#include "marlin_layout.h"

namespace qs_marlin {

// What a kernel launch gets (one struct for both kernels; each reads the fields it needs).
struct Params {
    const uint8_t *w, *sc;
    const float *colscale;
    int colscale_stride;
    const float *blockscale;
    int kblocks;
    float post1, post2;
    const __nv_bfloat16 *bias;
    const __nv_bfloat16 *x;
    __nv_bfloat16 *y;
    float *ws;
    int *cnt;
    int M, N, K;     // N: real outputs (stores stop there); K: the packed (padded) k
    int NP, XS;      // NP: outputs rounded up to 16 (packed rows); XS: activation row stride
    int tiles_n, mblocks, splits, ksteps;
    int rotate; // start each CTA's k walk at a different step (spreads the activation reads over L2)
    int units_k, strips; // the small-M kernel (marlin_small_m.cu): packed units per strip, 16-row strips
    int ring;            // the stream kernel (marlin_stream.cu): weight stages in its shared-memory ring
    int x_rows;          // and the token rows of each activation copy (its tile, or fewer)
};

namespace {

__device__ __forceinline__ void cp_async16(void *smem, const void *gmem)
{
    unsigned s = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> __device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

// Programmatic dependent launch (sm_90): a kernel launched with the PDL attribute may start while
// the previous kernel on the stream finishes; everything before wait_for_previous_grid must not
// read what that kernel writes (here: only the weights, which nothing writes), and
// allow_next_grid lets the next PDL kernel start its own prologue early. No-ops before sm_90.
__device__ __forceinline__ void wait_for_previous_grid()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void allow_next_grid()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;\n" ::);
#endif
}

// A lane's 16 bytes of one FP8 unit -> its 8 A registers (tile 0: a[0..3], tile 1: a[4..7]).
__device__ __forceinline__ void expand_fp8_unit(const uint4 &v, uint32_t a[8])
{
    dequant_fp8(v.x, a[0], a[1]);
    dequant_fp8(v.y, a[2], a[3]);
    dequant_fp8(v.z, a[4], a[5]);
    dequant_fp8(v.w, a[6], a[7]);
}

__device__ __forceinline__ void mma(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1)
{
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Where the FP32 partial sum of k slice `split` for output (m, n) lives in the split-K workspace.
__device__ __forceinline__ float *partial_at(const Params &p, int split, int m, int n)
{
    return p.ws + ((size_t)split * p.M + m) * p.NP + n;
}

// Called by every thread once the CTA's partials are stored: whether this CTA is the last of the
// `splits` k slices of output tile `tile` to finish (it then sums the partials, in slice order,
// so the result does not depend on which CTA came last). The last one resets the ticket.
__device__ __forceinline__ bool last_of_tile(const Params &p, int tile)
{
    __shared__ int s_last;
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0)
        s_last = atomicAdd(p.cnt + tile, 1) == p.splits - 1;
    __syncthreads();
    if (!s_last)
        return false;
    __threadfence();
    if (threadIdx.x == 0)
        p.cnt[tile] = 0;
    return true;
}

__device__ __forceinline__ float sum_partials(const Params &p, int m, int n)
{
    float sum = 0.f;
    for (int s = 0; s < p.splits; s++)
        sum += __ldcg(partial_at(p, s, m, n));
    return sum;
}

// The epilogue of every kernel: the FP32 sum for output (m, n) scaled, biased and stored as BF16
// (columns past the real out_features are padding and dropped). OutRow holds what depends on the
// output row alone, for a kernel that stores many tokens of a row (load it once, not per token).
struct OutRow {
    float colscale, bias;
};
__device__ __forceinline__ OutRow out_row(const Params &p, int n)
{
    OutRow o = {1.f, 0.f};
    if (n < p.N) {
        if (p.colscale)
            o.colscale = __ldg(p.colscale + (size_t)n * p.colscale_stride);
        if (p.bias)
            o.bias = __bfloat162float(p.bias[n]);
    }
    return o;
}
// The output value of accumulator v of a row whose factors are o.
__device__ __forceinline__ __nv_bfloat16 out_value(const Params &p, const OutRow &o, float v)
{
    if (p.colscale)
        v *= o.colscale;
    v = v * p.post1 * p.post2;
    if (p.bias)
        v += o.bias;
    return __float2bfloat16_rn(v);
}
__device__ __forceinline__ void store_row(const Params &p, const OutRow &o, float v, int m, int n)
{
    if (n >= p.N)
        return;
    p.y[(size_t)m * p.N + n] = out_value(p, o, v);
}
__device__ __forceinline__ void store_output(const Params &p, float v, int m, int n) { store_row(p, out_row(p, n), v, m, n); }

// Launches kernel(p) on stream s; with pdl, as a programmatic dependent launch (the kernel may
// start while the previous one on the stream finishes: see wait_for_previous_grid).
// Arguments after p (extra) follow it to the kernel.
template <typename Kernel, typename... Extra>
int launch_kernel(Kernel kernel, dim3 grid, int threads, size_t smem, bool pdl, cudaStream_t s, const Params &p,
                  qs_err *err, const Extra &...extra)
{
    QS_CUDA_TRY(qs_launch_pdl(kernel, grid, dim3((unsigned)threads), smem, s, pdl, p, extra...), err);
    QS_LAUNCH_CHECK(err);
    return 0;
}

} // namespace
} // namespace qs_marlin

#endif
