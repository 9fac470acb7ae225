// rope_pair.cuh — the rotary embedding's arithmetic for one pair (i, i + head_dim / 2) of a head,
// shared by the rope op (ops_cuda.cu) and the fused q/k/v split + rope + cache write
// (split_cuda.cu), so that both round the same way, bit for bit.
#ifndef QS_CUDA_ROPE_PAIR_CUH
#define QS_CUDA_ROPE_PAIR_CUH

#include <cuda_bf16.h>

// (a, b) rotated by the angle pos * inv_freq, as HF computes it: the angle in float32, then cos/sin.
__device__ inline void qs_rope_rotate(__nv_bfloat16 *out_a, __nv_bfloat16 *out_b, __nv_bfloat16 a, __nv_bfloat16 b,
                                      int pos, float inv_freq)
{
    float angle = (float)pos * inv_freq;
    float c, s;
    sincosf(angle, &s, &c);
    float fa = __bfloat162float(a), fb = __bfloat162float(b);
    *out_a = __float2bfloat16_rn(fa * c - fb * s);
    *out_b = __float2bfloat16_rn(fb * c + fa * s);
}

#endif
