// marlin.h — what the `marlin` weight-only kernel's files share (CUDA C++ only; the C world sees
// the descriptors in qs_cuda_kernels.h). docs/marlin.md explains the design; in short:
//  - y[m,n] = x[m,k] W^T is computed as y^T = W x^T on BF16 tensor cores (mma.m16n8k16, FP32
//    accumulation): W is the 16-row "A" operand, so a token count M of 1..8 fills one n8 tile.
//  - Weights are repacked once (marlin_pack.cu) into 512-byte units, one per (16 rows, 32 k)
//    for FP8 and (16 rows, 64 k) for NVFP4: lane l's 16 bytes of a unit are exactly the bits of
//    its mma fragments, so one 16-byte load per lane per unit is coalesced and needs no shuffles;
//    k is permuted inside a unit so that a lane's activations for it are one vector load, and
//    the bit order inside each 32-bit word makes the in-register BF16 expansion a few masks,
//    shifts and one multiply (marlin_layout.h: the one definition of all of it).
//  - NVFP4 block scales are re-encoded to an unsigned E5M3 byte that becomes a BF16 with one
//    integer multiply-add; blocks with a zero or negative scale are folded into their codes.
#ifndef QS_CUDA_MARLIN_H
#define QS_CUDA_MARLIN_H

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdlib.h>

#include "lab_knob.h"
#include "marlin_plan.h"

extern "C" {
#include "core/act_order.h"
#include "core/scheme.h"
#include "util/error.h"
}

namespace qs_marlin {

constexpr int kUnitBytes = 512;     // one packed unit: 32 lanes x 16 bytes
constexpr int kFp8UnitK = 32;       // k covered by one FP8 unit (16 rows)
constexpr int kFp4UnitK = 64;       // k covered by one NVFP4 unit (16 rows)
constexpr int kFp8StepK = 128;      // k per pipeline stage (FP8): 4 units, = the FP8 block size
constexpr int kFp4StepK = 256;      // k per pipeline stage (NVFP4): 4 units
constexpr int kFp4ScaleStepBytes = 256; // NVFP4 scales of 16 rows x 256 k (16 groups of 16)

// The packed, device-resident form of one linear layer.
struct Layer {
    bool fp4;                // NVFP4 (else FP8 E4M3)
    bool block;              // FP8 with 128x128 block scales (applied inside the k loop)
    int64_t n, k;            // the layer's shape
    int64_t n_pad, k_pad;    // packed shape: n up to 16 rows, k up to the kernel's k step (zeros)
    uint8_t *w;              // packed weight units
    uint8_t *sc;             // NVFP4: packed E5M3 scale codes
    float *colscale;         // FP8 per-tensor (stride 0) or per-channel (stride 1) scale; NULL for block
    int colscale_stride;
    float *blockscale;       // FP8 block: [ceil(n/128), k/128]
    float post1, post2;      // multiplied into every output (NVFP4: 2^84 and the global scale)
    __nv_bfloat16 *bias;     // [n] or NULL
    qs_marlin_plan plan;     // which kernel runs a step of m tokens (marlin_plan.h; made by plan_paths)
};

// Host-side repacking (marlin_pack.cu). dst sizes: n*k bytes (FP8), n*k/2 (NVFP4 weights),
// n*k/16 (NVFP4 scales). Inputs are the checkpoint's row-major bytes.
void pack_fp8(const uint8_t *w, int64_t n, int64_t k, uint8_t *dst);
void pack_nvfp4(const uint8_t *w, const uint8_t *scale_e4m3, int64_t n, int64_t k, uint8_t *dst_w, uint8_t *dst_sc);
// The E5M3 code of an E4M3 magnitude byte (1..0x7E); see marlin_pack.cu.
uint8_t e5m3_code(uint8_t e4m3_magnitude);

// Fills l.plan from the layer's shape, the device and the knobs (marlin_gemm.cu); prepare calls it
// once, before reserve_workspace, and every launch reads the plan's row for its step.
int plan_paths(Layer &l, qs_err *err);
// The knobs the plan reads: QS_MARLIN_SHIPPED in the product, the QSERVE_MARLIN_* variables in a
// dev build.
const qs_marlin_knobs &path_knobs();
// Launches y = x W^T (+ bias) on stream s (marlin_gemm.cu): the kernel of l.plan's row for m.
int gemm(const Layer &l, const __nv_bfloat16 *x, __nv_bfloat16 *y, int64_t m, cudaStream_t s, qs_err *err,
         bool ordered = false);
// The order (core/act_order.h) the layer wants x in at m tokens: the stream kernel's packed k order
// where the plan's row gives the step to it with x in that order and its rewrite-free path takes
// it (plan_stream), else natural. gemm(..., ordered = true) takes x in that order (an error where it is natural).
qs_act_order input_order(const Layer &l, int64_t m);
// What the kernels share on the host: marlin_gemm.cu keeps the device facts, marlin_workspace.cu
// the split-K workspace (one per process), marlin_small_m.cu runs steps of few tokens.
struct Params; // marlin_device.cuh
struct Runtime {
    int sms;      // multiprocessors
    bool pdl;     // launch with programmatic dependent launch (sm_90+)
    bool sm90;    // compute capability 9.0 and an sm_90a build: the wgmma kernel runs
};
int runtime(Runtime *rt, qs_err *err);
// A measurement knob (QSERVE_MARLIN_*, dev/README.md): `shipped` in the product, the variable in
// a dev build (lab_knob.h).
inline int knob(const char *name, int shipped) { return qs_lab_knob(name, shipped); }
// CTAs of `kernel` resident per SM at `threads` threads and `smem` bytes of dynamic shared memory
// (the occupancy API, asked once per kernel; raises the kernel's shared-memory limit to smem).
int ctas_per_sm(const void *kernel, int threads, size_t smem, qs_err *err);
// Makes the workspace hold `floats` partial sums and `counters` tickets; fills p.ws and p.cnt.
int split_workspace(size_t floats, size_t counters, Params &p, qs_err *err);
// The small-M kernel (marlin_small_m.cu): the workspace it needs at m tokens, and the launch (p
// filled by gemm(), activations padded; rt: the device facts gemm() read once).
int small_m_workspace(const Layer &l, int64_t m, int sms, size_t *floats, size_t *counters, qs_err *err);
int small_m(const Layer &l, Params &p, const Runtime &rt, cudaStream_t s, qs_err *err);
// k slices for `ctas` CTAs on `wave` resident CTA slots: the count in 1..most (at most 16) with
// the fewest waves per slice, the smallest on ties (marlin_small_m.cu).
int split_by_waves(int64_t ctas, int64_t wave, int64_t most);
// The wgmma kernel (marlin_wgmma.cu, sm_90): the workspace it needs (split-K partials, tickets,
// permuted activations), and the launch (p filled by gemm(), strips / units_k / ksteps included;
// x: the unpadded activations, row stride xs).
// x (m rows, stride xs) copied into xp (m x k_pad) in the packer's k order (zeros past k), the order
// the wgmma kernel and the stream kernel's rewrite-free path read B in (marlin_permute.cu).
int permute_activations(const Layer &l, const __nv_bfloat16 *x, int64_t xs, int64_t m, __nv_bfloat16 *xp,
                        cudaStream_t s, qs_err *err);
// Whether the kernels loaded on this device carry the wgmma code (sm_90a), asked once at start.
int wgmma_built(bool *built, qs_err *err);
int wgmma_workspace(const Layer &l, int64_t m, int sms, size_t *floats, size_t *counters, size_t *permuted,
                    qs_err *err);
int wgmma(const Layer &l, Params &p, const __nv_bfloat16 *x, int64_t xs, const Runtime &rt, cudaStream_t s,
          qs_err *err);
// The stream kernel (marlin_stream.cu, sm_90): the same two, for steps of up to 64 tokens
// (stream_workspace's permuted: the activation copy in the packer's k order its rewrite-free path
// reads, 0 where that path is not taken). stream_fits: the activations' address suits its tensor
// map and the output's its 16-byte stores, both 16-byte aligned; checked per call. stream(...,
// ordered): x already in the packed order, only where input_order said so (gemm checks it).
bool stream_fits(const __nv_bfloat16 *x, const __nv_bfloat16 *y);
void stream_workspace(const Layer &l, int64_t m, int sms, size_t *floats, size_t *counters, size_t *permuted);
int stream(const Layer &l, Params &p, const __nv_bfloat16 *x, int64_t xs, const Runtime &rt, cudaStream_t s,
           qs_err *err, bool ordered = false);
// Whether the rewrite-free path takes a stream-kernel step of m tokens when x comes already in
// the packed order (ordered) or needs the permute kernel first.
bool stream_permutes(const Layer &l, int64_t m, int sms, bool ordered);
// A device buffer of at least n BF16 for the wgmma and stream kernels' permuted activations (NULL and err set
// when it would have to grow during a CUDA graph capture).
__nv_bfloat16 *permuted_activations(size_t n, qs_err *err);

// Grows the split-K workspace and the wgmma kernel's permuted activation copy so that a layer can run
// steps of up to m_max tokens without growing them (no allocation during a CUDA graph capture).
int reserve_workspace(const Layer &l, int64_t m_max, qs_err *err);

} // namespace qs_marlin

#endif
