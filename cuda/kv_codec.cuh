// kv_codec.cuh — how a KV cache element is stored and read back, for every kernel that writes or
// reads the paged cache (attention_cuda.cu, split_cuda.cu): KvBf16 keeps the bf16 activation as
// is; KvFp8 stores OCP E4M3 of x / scale (round to nearest even, saturating at ±448, as the CPU
// reference's qs_f32_to_e4m3) and reads code * scale, one K and one V scale per layer
// (ops.h: qs_kv_dtype). Kernels are templated on the codec, so the bf16 instances compile to what
// they were before FP8 existed.
#ifndef QS_CUDA_KV_CODEC_CUH
#define QS_CUDA_KV_CODEC_CUH

#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <stdint.h>

struct KvBf16 {
    typedef __nv_bfloat16 T;
    static __device__ __forceinline__ float load(const T *c, int64_t i, float) { return __bfloat162float(c[i]); }
    // Four consecutive elements from i (a multiple of 4): one 8-byte load.
    static __device__ __forceinline__ void load4(const T *c, int64_t i, float, float out[4])
    {
        uint2 raw = *reinterpret_cast<const uint2 *>(c + i);
        float2 lo = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162 *>(&raw.x));
        float2 hi = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162 *>(&raw.y));
        out[0] = lo.x, out[1] = lo.y, out[2] = hi.x, out[3] = hi.y;
    }
    static __device__ __forceinline__ void store(T *c, int64_t i, __nv_bfloat16 x, float) { c[i] = x; }
};

struct KvFp8 {
    typedef __nv_fp8_e4m3 T;
    static __device__ __forceinline__ float load(const T *c, int64_t i, float scale) { return float(c[i]) * scale; }
    // Four consecutive elements from i (a multiple of 4): one 4-byte load.
    static __device__ __forceinline__ void load4(const T *c, int64_t i, float scale, float out[4])
    {
        uint32_t raw = *reinterpret_cast<const uint32_t *>(c + i);
#pragma unroll
        for (int e = 0; e < 4; e++) {
            __nv_fp8_e4m3 b;
            b.__x = (__nv_fp8_storage_t)((raw >> (8 * e)) & 0xffu);
            out[e] = float(b) * scale;
        }
    }
    // x / scale, computed as x * (1 / scale) like the CPU reference.
    static __device__ __forceinline__ void store(T *c, int64_t i, __nv_bfloat16 x, float inv_scale)
    {
        c[i] = __nv_fp8_e4m3(__bfloat162float(x) * inv_scale);
    }
};

#endif
