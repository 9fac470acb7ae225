// probe_sum.cuh — the word sums the bandwidth probes (read_probe.cu, ring_probe.cu) fold the bytes
// they read into: each probe's result is a checksum the host compares with a CPU sum, so no
// compiler can drop a load, and a probe that skips or repeats bytes fails its test.
#pragma once

#include <stdint.h>

// The four 32-bit words of a 16-byte load, summed (wrapping).
__device__ __forceinline__ uint32_t word_sum(uint4 v) { return v.x + v.y + v.z + v.w; }

// Every lane's s summed across the warp; every lane gets the total.
__device__ __forceinline__ uint32_t warp_word_sum(uint32_t s)
{
    for (int o = 16; o > 0; o >>= 1)
        s += __shfl_xor_sync(0xffffffffu, s, o);
    return s;
}
