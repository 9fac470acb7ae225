// marlin_pack.cu — host-side repacking of FP8 and NVFP4 weights into the `marlin` kernel's
// layout, done once per layer at prepare time. marlin_layout.h defines the layout (which weight
// each lane's 16 bytes of a 512-byte unit hold, k permuted inside the unit, and the bit
// extraction of each register); the packer takes its bit placement from probing that
// extraction, so the two cannot disagree.
//
// FP8 unit (16 rows x 32 k): lane word w holds registers 2w and 2w+1 (fp8_bits_lo / _hi).
// NVFP4 unit (16 rows x 64 k): lane word t is tile t, its registers fp4_bits(word, q).
// Scales (NVFP4): E5M3 codes (below), 256 bytes per 16 rows x 256 k in fp4_scale_byte order.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "marlin.h"
#include "marlin_layout.h"

namespace qs_marlin {

// For each bit p of an extracted register, the bit of the packed word it comes from: probes
// the extraction with single-bit words, so the packer follows the kernel's code exactly. A
// register bit no word bit reaches, or one reached twice, is a layout bug: aborts.
template <typename Extract> static void source_bits(Extract extract, int src[32])
{
    for (int p = 0; p < 32; p++)
        src[p] = -1;
    for (int s = 0; s < 32; s++) {
        uint32_t out = extract(1u << s);
        for (int p = 0; p < 32; p++)
            if (out & (1u << p)) {
                if (src[p] >= 0)
                    abort();
                src[p] = s;
            }
    }
}

// Places value bit i (of `bits` bits) at BF16 bit target[i] of element e of a register whose
// word bits are given by src.
static uint32_t place(uint32_t value, int bits, const int *target, int e, const int src[32])
{
    uint32_t word = 0;
    for (int i = 0; i < bits; i++)
        if (value & (1u << i)) {
            int s = src[target[i] + 16 * e];
            if (s < 0)
                abort();
            word |= 1u << s;
        }
    return word;
}

void pack_fp8(const uint8_t *w, int64_t n, int64_t k, uint8_t *dst)
{
    static const int TARGET[8] = {4, 5, 6, 7, 8, 9, 10, 15}; // E4M3 bits -> BF16 bits (value * 2^-120)
    int src[2][32];
    source_bits(fp8_bits_lo, src[0]);
    source_bits(fp8_bits_hi, src[1]);
    // Word bits of each byte value per (register half, element): one lookup per weight.
    uint32_t lut[2][2][256];
    for (int half = 0; half < 2; half++)
        for (int e = 0; e < 2; e++)
            for (int v = 0; v < 256; v++)
                lut[half][e][v] = place((uint32_t)v, 8, TARGET, e, src[half]);
    const int64_t units_k = k / kFp8UnitK;
    for (int64_t nb = 0; nb < n / 16; nb++)
        for (int64_t ku = 0; ku < units_k; ku++) {
            uint8_t *out = dst + (nb * units_k + ku) * kUnitBytes;
            for (int lane = 0; lane < 32; lane++) {
                const int r = lane >> 2, c = lane & 3;
                for (int word_i = 0; word_i < 4; word_i++) {
                    uint32_t word = 0;
                    for (int half = 0; half < 2; half++) {
                        const int R = 2 * word_i + half, t = R >> 2, q = R & 3;
                        const int64_t row = nb * 16 + unit_row(r, q);
                        for (int e = 0; e < 2; e++) {
                            const int64_t col = ku * kFp8UnitK + fp8_unit_k(c, t, q, e);
                            word |= lut[half][e][w[row * k + col]];
                        }
                    }
                    memcpy(out + lane * 16 + word_i * 4, &word, 4);
                }
            }
        }
}

// E4M3 magnitude (no sign, not NaN, not zero) -> unsigned E5M3 with exponent bias 9 and no
// subnormals: value = 2^(e5 - 9) * (1 + m3/8). In the kernel, 0x5000 | code << 4 is the BF16
// of value * 2^42 (exponent field 160 + e5).
uint8_t e5m3_code(uint8_t a)
{
    int e4 = a >> 3, m = a & 7;
    if (e4 > 0)
        return (uint8_t)(((e4 + 2) << 3) | m); // E = e4 - 7, e5 = E + 9
    // subnormal: value = m * 2^-9; normalise.
    int E = -9;
    while (m < 8) {
        m <<= 1;
        E--;
    }
    // now m in [8, 16): value = (m/8) * 2^(E + 3)
    return (uint8_t)(((E + 3 + 9) << 3) | (m - 8));
}

void pack_nvfp4(const uint8_t *w, const uint8_t *scale_e4m3, int64_t n, int64_t k, uint8_t *dst_w, uint8_t *dst_sc)
{
    static const int TARGET[4] = {6, 7, 8, 15}; // E2M1 bits m, e0, e1, s -> BF16 bits (code * 2^-126)
    int src[4][32];
    source_bits([](uint32_t v) { return fp4_bits(v, 0); }, src[0]);
    source_bits([](uint32_t v) { return fp4_bits(v, 1); }, src[1]);
    source_bits([](uint32_t v) { return fp4_bits(v, 2); }, src[2]);
    source_bits([](uint32_t v) { return fp4_bits(v, 3); }, src[3]);
    uint32_t lut[4][2][16]; // word bits of each code per (register, element)
    for (int q = 0; q < 4; q++)
        for (int e = 0; e < 2; e++)
            for (int v = 0; v < 16; v++)
                lut[q][e][v] = place((uint32_t)v, 4, TARGET, e, src[q]);
    const int64_t units_k = k / kFp4UnitK, steps = k / kFp4StepK, groups = k / 16;
    // Code of element (row, col) after folding a zero / negative block scale into it.
    auto code_at = [&](int64_t row, int64_t col) -> uint8_t {
        uint8_t byte = w[row * (k / 2) + col / 2];
        uint8_t code = (col & 1) ? (byte >> 4) : (byte & 0xF);
        uint8_t s = scale_e4m3[row * groups + col / 16];
        if ((s & 0x7F) == 0 || (s & 0x7F) == 0x7F)
            return 0;
        if (s & 0x80)
            code ^= 0x8;
        return code;
    };
    for (int64_t nb = 0; nb < n / 16; nb++) {
        for (int64_t ku = 0; ku < units_k; ku++) {
            uint8_t *out = dst_w + (nb * units_k + ku) * kUnitBytes;
            for (int lane = 0; lane < 32; lane++) {
                const int r = lane >> 2, c = lane & 3;
                for (int t = 0; t < 4; t++) {
                    uint32_t word = 0;
                    for (int q = 0; q < 4; q++)
                        for (int e = 0; e < 2; e++) {
                            const int64_t row = nb * 16 + unit_row(r, q);
                            const int64_t col = ku * kFp4UnitK + fp4_unit_k(c, t, q, e);
                            word |= lut[q][e][code_at(row, col)];
                        }
                    memcpy(out + lane * 16 + t * 4, &word, 4);
                }
            }
        }
        for (int64_t st = 0; st < steps; st++) {
            uint8_t *out = dst_sc + (nb * steps + st) * kFp4ScaleStepBytes;
            for (int lane = 0; lane < 32; lane++)
                for (int u = 0; u < 4; u++)
                    for (int upper = 0; upper < 2; upper++) {
                        const int64_t row = nb * 16 + (lane >> 2) + 8 * upper;
                        const int64_t group = st * 16 + u * 4 + (lane & 3);
                        const uint8_t s = scale_e4m3[row * groups + group] & 0x7F;
                        out[fp4_scale_byte(lane, u, upper)] = (s == 0 || s == 0x7F) ? 0 : e5m3_code(s);
                    }
        }
    }
}

} // namespace qs_marlin
