// marlin_pack.cu — host-side repacking of FP8 and NVFP4 weights into the `marlin` kernel's
// layout (marlin.h), done once per layer at prepare time.
//
// mma.m16n8k16 A fragment (W rows = mma rows): lane l has r = l/4, c = l%4 and four registers
// per 16x16 tile: reg0 = row r, k 2c..2c+1; reg1 = row r+8, same k; reg2 = row r, k 2c+8..9;
// reg3 = row r+8, k 2c+8..9 (low half = lower k).
//
// FP8 unit (16 rows x 32 k = two k16 tiles, 8 registers R = 4*tile + reg): lane bytes
// 4w..4w+3 hold registers 2w and 2w+1: register 2w's two elements in bytes 0 and 2, register
// 2w+1's in bytes 1 and 3 — so the kernel builds 2w from the low byte of each half and 2w+1
// from the high byte, with shifts and masks only.
//
// NVFP4 unit (16 rows x 64 k = four k16 tiles): lane word j is tile j; its low half holds the
// first (lower-k) element of each of the four registers, its high half the second. Inside a
// half the E2M1 bits (m, e0, e1, s) of register q sit at
//   q0: 6,7,8,15   q1: 3,4,5,12   q2: 0,1,2,9   q3: 10,11,13,14
// so reg0 = v & M, reg1 = (v << 3) & M, reg2 = (v << 6) & M with M = 0x81C081C0 (a BF16 with
// the E2M1 exponent in its low exponent bits: value * 2^-126), and reg3 takes three masks.
// Scales: per 16 rows x 256 k, 256 bytes [row][group]; each an E5M3 code (below).
#include <math.h>
#include <string.h>

#include "marlin.h"

namespace qs_marlin {

void pack_fp8(const uint8_t *w, int64_t n, int64_t k, uint8_t *dst)
{
    const int64_t units_k = k / kFp8UnitK;
    for (int64_t nb = 0; nb < n / 16; nb++)
        for (int64_t ku = 0; ku < units_k; ku++) {
            uint8_t *out = dst + (nb * units_k + ku) * kUnitBytes;
            for (int lane = 0; lane < 32; lane++) {
                int r = lane >> 2, c = lane & 3;
                for (int R = 0; R < 8; R++) {
                    int t = R >> 2, q = R & 3;
                    int64_t row = nb * 16 + r + 8 * (q & 1);
                    int64_t col = ku * kFp8UnitK + 16 * t + 2 * c + 8 * (q >> 1);
                    for (int e = 0; e < 2; e++)
                        out[lane * 16 + (R >> 1) * 4 + (R & 1) + 2 * e] = w[row * k + col + e];
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

static inline uint32_t place_e2m1(uint8_t code, int q)
{
    static const int POS[4][4] = {{6, 7, 8, 15}, {3, 4, 5, 12}, {0, 1, 2, 9}, {10, 11, 13, 14}};
    uint32_t v = 0;
    for (int b = 0; b < 4; b++)
        if (code & (1u << b))
            v |= 1u << POS[q][b];
    return v;
}

void pack_nvfp4(const uint8_t *w, const uint8_t *scale_e4m3, int64_t n, int64_t k, uint8_t *dst_w, uint8_t *dst_sc)
{
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
                int r = lane >> 2, c = lane & 3;
                for (int j = 0; j < 4; j++) {
                    uint32_t word = 0;
                    for (int q = 0; q < 4; q++)
                        for (int e = 0; e < 2; e++) {
                            int64_t row = nb * 16 + r + 8 * (q & 1);
                            int64_t col = ku * kFp4UnitK + 16 * j + 2 * c + 8 * (q >> 1) + e;
                            word |= place_e2m1(code_at(row, col), q) << (16 * e);
                        }
                    memcpy(out + lane * 16 + j * 4, &word, 4);
                }
            }
        }
        for (int64_t st = 0; st < steps; st++) {
            uint8_t *out = dst_sc + (nb * steps + st) * kFp4ScaleStepBytes;
            for (int rr = 0; rr < 16; rr++)
                for (int g = 0; g < 16; g++) {
                    uint8_t s = scale_e4m3[(nb * 16 + rr) * groups + st * 16 + g] & 0x7F;
                    out[rr * 16 + g] = (s == 0 || s == 0x7F) ? 0 : e5m3_code(s);
                }
        }
    }
}

} // namespace qs_marlin
