// marlin_layout.h — the packed layout of `marlin` weights, in one place for the packer
// (marlin_pack.cu, host), both kernels (device) and the layout self-check (marlin_selfcheck.cu):
// where each weight of a unit sits, which activations a lane reads, and the bit extraction that
// turns a packed word into BF16 bit patterns. Host and device functions alike.
//
// mma.m16n8k16 A fragment: lane l (r = l/4, c = l%4) holds per k16 tile four registers q:
// q0 = row r, tile k 2c..2c+1; q1 = row r+8, same k; q2 = row r, tile k 2c+8..9; q3 = row r+8,
// tile k 2c+8..9; its B fragment is x[token r][tile k 2c..2c+1] and [2c+8..9]. The dot product
// does not care in which order k is summed, so the packer permutes k inside a unit: lane c's
// tile-k slots of every tile of the unit are the unit's k [8c, 8c+8) (FP8, two tiles) or
// [16c, 16c+16) (NVFP4, four tiles). A lane's activations for a unit are then one contiguous 16
// (32) bytes — one vector load — and, for NVFP4, all its weights in a unit share one 16-k scale
// block per row.
#ifndef QS_CUDA_MARLIN_LAYOUT_H
#define QS_CUDA_MARLIN_LAYOUT_H

#include <stdint.h>
#include <string.h>

#if defined(__CUDACC__)
#define QS_HD __host__ __device__ __forceinline__
#else
#define QS_HD inline
#endif

namespace qs_marlin {

// k, inside an FP8 unit (32 k, tiles t = 0, 1), of element e (0 = low half) of register q of
// tile t of lane column c. Lane c's activation chunk x[8c .. 8c+7] gives tile t's B registers
// as its 32-bit words 2t and 2t+1.
QS_HD int fp8_unit_k(int c, int t, int q, int e) { return 8 * c + 4 * t + 2 * (q >> 1) + e; }
// The same for an NVFP4 unit (64 k, tiles t = 0..3): lane c's chunk is x[16c .. 16c+15], and
// every weight of the lane in the unit is in 16-k scale block c.
QS_HD int fp4_unit_k(int c, int t, int q, int e) { return 16 * c + 4 * t + 2 * (q >> 1) + e; }
// The inverse, for an operand read in the mma's own k order (the wgmma kernel's shared-memory
// activations): logical position j of a unit (tile j / 16, tile k j % 16, where tile k 2c + e
// is register q0/q1 of lane column c and 2c + 8 + e is q2/q3) takes the unit's k
// fp8/fp4_unit_k of that slot.
QS_HD int fp8_logical_source_k(int j) { return fp8_unit_k((j % 8) / 2, j / 16, 2 * ((j % 16) / 8), j % 2); }
QS_HD int fp4_logical_source_k(int j) { return fp4_unit_k((j % 8) / 2, j / 16, 2 * ((j % 16) / 8), j % 2); }
// Row (inside the 16-row strip) of register q of lane row r.
QS_HD int unit_row(int r, int q) { return r + 8 * (q & 1); }

QS_HD uint32_t rotl32(uint32_t v, int s) { return (v << s) | (v >> (32 - s)); }

// FP8: packed word w of a lane (w = 0..3) holds registers 2w (fp8_bits_lo) and 2w+1
// (fp8_bits_hi); register R is tile R/4, q = R%4. Each result is two BF16 with the E4M3 sign in
// bit 15 and its exponent/mantissa in the low 7 bits of the BF16 exponent/mantissa (bits 4..10):
// the BF16 of value * 2^-120, subnormals included. The low register is a single mask; the high
// one needs two pieces (no single shift maps the 7-bit runs into the bits the first leaves).
QS_HD uint32_t fp8_bits_lo(uint32_t v) { return v & 0x87F087F0u; }
QS_HD uint32_t fp8_bits_hi(uint32_t v) { return ((v << 4) & 0x80F080F0u) | ((v >> 4) & 0x07000700u); }

// NVFP4: packed word t of a lane (t = 0..3) is tile t; fp4_bits(v, q) is register q's two E2M1
// codes as BF16 bits (sign 15, e1 e0 in 8..7, m in 6: the BF16 of code * 2^-126). q0 is a mask,
// q1 and q2 a rotate and a mask, q3 a mask, one integer multiply by 2^2 + 2^7 + 2^12 (three
// non-overlapping shifted copies, so no carries) and a mask — found by exhaustive search.
constexpr uint32_t kFp4Mask = 0x81C081C0u;
QS_HD uint32_t fp4_bits(uint32_t v, int q)
{
    switch (q) {
    case 0: return v & kFp4Mask;
    case 1: return rotl32(v, 10) & kFp4Mask;
    case 2: return rotl32(v, 13) & kFp4Mask;
    default: return ((v & 0x001B001Bu) * 4228u) & kFp4Mask;
    }
}

// a * b on two BF16 lanes (fma.rn.bf16x2 with a -0 addend on the GPU; the host emulation rounds
// the same way). Exact whenever the product fits a BF16, which is how the expansion uses it.
QS_HD uint32_t bf16x2_mul(uint32_t a, uint32_t b)
{
#if defined(__CUDA_ARCH__)
    uint32_t d;
    asm("fma.rn.bf16x2 %0, %1, %2, %3;\n" : "=r"(d) : "r"(a), "r"(b), "r"(0x80008000u));
    return d;
#else
    uint32_t out = 0;
    for (int h = 0; h < 2; h++) {
        uint32_t ua = ((a >> (16 * h)) & 0xFFFFu) << 16, ub = ((b >> (16 * h)) & 0xFFFFu) << 16, up;
        float fa, fb, fp;
        memcpy(&fa, &ua, 4);
        memcpy(&fb, &ub, 4);
        fp = fa * fb;
        memcpy(&up, &fp, 4);
        up += 0x7FFFu + ((up >> 16) & 1u); // round to nearest even
        out |= (up >> 16) << (16 * h);
    }
    return out;
#endif
}

// Four E4M3 weights (one packed word) -> registers lo, hi as BF16x2: the bit patterns are
// value * 2^-120, fixed by one exact multiply each.
QS_HD void dequant_fp8(uint32_t v, uint32_t &lo, uint32_t &hi)
{
    const uint32_t k2p120 = 0x7B807B80u; // BF16 2^120, twice
    lo = bf16x2_mul(fp8_bits_lo(v), k2p120);
    hi = bf16x2_mul(fp8_bits_hi(v), k2p120);
}

// One NVFP4 word (one k16 tile of a lane) -> its four A registers, times the row scales (rows r
// and r+8, as BF16x2 from scale_bf16x2): code * 2^-126 * scale * 2^42, exact (a 2-bit by 4-bit
// significand product).
QS_HD void dequant_fp4(uint32_t v, uint32_t sc_r, uint32_t sc_r8, uint32_t a[4])
{
    a[0] = bf16x2_mul(fp4_bits(v, 0), sc_r);
    a[1] = bf16x2_mul(fp4_bits(v, 1), sc_r8);
    a[2] = bf16x2_mul(fp4_bits(v, 2), sc_r);
    a[3] = bf16x2_mul(fp4_bits(v, 3), sc_r8);
}

// Byte j of a word of E5M3 scale codes -> BF16x2 (scale * 2^42 in both halves): the code
// shifted into the BF16 exponent/mantissa plus the exponent offset 160.
QS_HD uint32_t scale_bf16x2(uint32_t codes, int j)
{
#if defined(__CUDA_ARCH__)
    uint32_t t = __byte_perm(codes, 0u, 0x4040u | (uint32_t)j | ((uint32_t)j << 8));
#else
    uint32_t t = ((codes >> (8 * j)) & 0xFFu) * 0x10001u;
#endif
    return t * 16u + 0x50005000u;
}

// NVFP4 scale codes: per (16-row strip, 256-k step) 256 bytes, lane l's 8 bytes at 8l: for each
// of the step's 4 units u, the E5M3 codes of (row r, block c) and (row r+8, block c) at 2u, 2u+1.
QS_HD int fp4_scale_byte(int lane, int unit_in_step, int upper_row) { return lane * 8 + unit_in_step * 2 + upper_row; }

} // namespace qs_marlin

#endif
