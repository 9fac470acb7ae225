// marlin_selfcheck.cu — the `marlin` packed layout checked on the CPU: random FP8 and NVFP4
// weights are packed by the real packer, expanded by the kernels' own bit extraction and scale
// conversion (marlin_layout.h, host side), and fed as each lane's fragments to an emulated
// mma.m16n8k16 (the PTX ISA's fragment definitions); the product must equal the plain one. The
// activations come either as the small-M kernel reads them (each lane's k chunk of a unit) or
// as the wgmma kernel does (a permuted copy read in the mma's own k order). Runs without a GPU,
// so CI catches a layout bug before any device does.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

#include "marlin.h"
#include "marlin_layout.h"
#include "marlin_selfcheck.h"

extern "C" {
#include "core/fp4.h"
#include "core/fp8.h"
}

namespace {

using namespace qs_marlin;

float bf16_lo(uint32_t w) { uint32_t u = w << 16; float f; memcpy(&f, &u, 4); return f; }
float bf16_hi(uint32_t w) { uint32_t u = w & 0xFFFF0000u; float f; memcpy(&f, &u, 4); return f; }

uint16_t to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    u += 0x7FFFu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

struct Rng {
    uint64_t s;
    uint32_t next()
    {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        return (uint32_t)(s >> 32);
    }
    float uniform() { return (float)(next() >> 8) / 16777216.f * 2.f - 1.f; }
};

// D[16][8] += A B for one tile, from the fragments of all 32 lanes (a[lane][4], b[lane][2]):
// a register q of lane (r, c) holds A[r + 8(q&1)][2c + 8(q>>1) + e], b register j holds
// B[2c + 8j + e][r] (e = 0 low half, 1 high half).
void emulated_mma(const uint32_t a[32][4], const uint32_t b[32][2], double d[16][8])
{
    float A[16][16], B[16][8];
    for (int lane = 0; lane < 32; lane++) {
        const int r = lane >> 2, c = lane & 3;
        for (int q = 0; q < 4; q++) {
            A[r + 8 * (q & 1)][2 * c + 8 * (q >> 1)] = bf16_lo(a[lane][q]);
            A[r + 8 * (q & 1)][2 * c + 8 * (q >> 1) + 1] = bf16_hi(a[lane][q]);
        }
        for (int j = 0; j < 2; j++) {
            B[2 * c + 8 * j][r] = bf16_lo(b[lane][j]);
            B[2 * c + 8 * j + 1][r] = bf16_hi(b[lane][j]);
        }
    }
    for (int i = 0; i < 16; i++)
        for (int n = 0; n < 8; n++)
            for (int k = 0; k < 16; k++)
                d[i][n] += (double)A[i][k] * B[k][n];
}

// The 32-bit word j of a lane's activation chunk that starts at k (8 BF16 per 16 bytes).
uint32_t x_word(const std::vector<uint16_t> &x, int64_t K, int token, int64_t k, int j)
{
    return (uint32_t)x[token * K + k + 2 * j] | ((uint32_t)x[token * K + k + 2 * j + 1] << 16);
}

// How the activations reach the B fragments: each lane's 16-byte chunk of the unit (the small-M
// kernel), or the wgmma kernel's permuted copy read in logical k order.
enum class Feed { LaneChunk, Permuted };

// The permuted copy of x (tokens x K) for units of unit_k: position j of a unit holds x at the
// unit's k source(j).
std::vector<uint16_t> permuted(const std::vector<uint16_t> &x, int64_t K, int unit_k, int (*source)(int))
{
    std::vector<uint16_t> xp(x.size());
    for (size_t t = 0; t < x.size() / (size_t)K; t++)
        for (int64_t j = 0; j < K; j++)
            xp[t * K + j] = x[t * K + j / unit_k * unit_k + source((int)(j % unit_k))];
    return xp;
}

// B register j (0, 1) of lane (r, c) for tile t of unit u: tile k 2c + 8j and the next one.
uint32_t b_word(Feed feed, const std::vector<uint16_t> &x, const std::vector<uint16_t> &xp, int64_t K, int unit_k,
                int lane_chunk_k, int64_t u, int t, int lane, int j)
{
    const int r = lane >> 2, c = lane & 3;
    if (feed == Feed::LaneChunk)
        return x_word(x, K, r, u * unit_k + lane_chunk_k, 2 * t + j);
    return x_word(xp, K, r, u * unit_k + 16 * t + 2 * c + 8 * j, 0);
}

double rel_err(const std::vector<double> &y, const std::vector<double> &ref)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < y.size(); i++) {
        num += (y[i] - ref[i]) * (y[i] - ref[i]);
        den += ref[i] * ref[i];
    }
    return den > 0 ? sqrt(num / den) : INFINITY; // an all-zero reference would test nothing
}

constexpr int kTokens = 8;

// Random BF16 activations [8 tokens][K].
std::vector<uint16_t> activations(Rng &rng, int64_t K)
{
    std::vector<uint16_t> x((size_t)(kTokens * K));
    for (auto &v : x)
        v = to_bf16(rng.uniform() * 4.f);
    return x;
}

float xval(const std::vector<uint16_t> &x, int64_t K, int t, int64_t k) { return bf16_lo(x[t * K + k]); }

double check_fp8(Rng &rng, Feed feed)
{
    const int64_t N = 32, K = 128;
    std::vector<uint8_t> w((size_t)(N * K)), packed((size_t)(N * K));
    for (auto &b : w) {
        do
            b = (uint8_t)rng.next();
        while ((b & 0x7F) == 0x7F); // every E4M3 value but NaN, subnormals and zeros included
    }
    pack_fp8(w.data(), N, K, packed.data());
    const std::vector<uint16_t> x = activations(rng, K), xp = permuted(x, K, kFp8UnitK, fp8_logical_source_k);
    std::vector<double> y((size_t)(N * kTokens), 0.0), ref((size_t)(N * kTokens), 0.0);
    for (int64_t n = 0; n < N; n++)
        for (int t = 0; t < kTokens; t++)
            for (int64_t k = 0; k < K; k++)
                ref[n * kTokens + t] += (double)qs_e4m3_to_f32(w[n * K + k]) * xval(x, K, t, k);
    const int64_t units_k = K / kFp8UnitK;
    for (int64_t strip = 0; strip < N / 16; strip++)
        for (int64_t u = 0; u < units_k; u++) {
            uint32_t a[2][32][4], b[2][32][2];
            for (int lane = 0; lane < 32; lane++) {
                uint32_t v[4], regs[8];
                memcpy(v, &packed[(size_t)((strip * units_k + u) * kUnitBytes + lane * 16)], 16);
                for (int i = 0; i < 4; i++)
                    dequant_fp8(v[i], regs[2 * i], regs[2 * i + 1]);
                for (int t = 0; t < 2; t++) {
                    memcpy(a[t][lane], regs + 4 * t, 16);
                    for (int j = 0; j < 2; j++)
                        b[t][lane][j] = b_word(feed, x, xp, K, kFp8UnitK, fp8_unit_k(lane & 3, 0, 0, 0), u, t, lane, j);
                }
            }
            double d[16][8] = {};
            emulated_mma(a[0], b[0], d);
            emulated_mma(a[1], b[1], d);
            for (int i = 0; i < 16; i++)
                for (int t = 0; t < kTokens; t++)
                    y[(strip * 16 + i) * kTokens + t] += d[i][t];
        }
    return rel_err(y, ref);
}

double check_nvfp4(Rng &rng, Feed feed)
{
    const int64_t N = 32, K = 512, groups = K / 16;
    std::vector<uint8_t> w((size_t)(N * K / 2)), sc((size_t)(N * groups));
    for (auto &b : w)
        b = (uint8_t)rng.next();
    for (auto &s : sc) {
        const uint32_t pick = rng.next() % 16;
        s = pick == 0 ? 0 : pick == 1 ? 0x80 | (uint8_t)(rng.next() % 0x7F) : pick == 2 ? (uint8_t)(rng.next() % 8)
                                                                                         : (uint8_t)(rng.next() % 0x7F);
    }
    std::vector<uint8_t> pw((size_t)(N * K / 2)), ps((size_t)(N * K / 16));
    pack_nvfp4(w.data(), sc.data(), N, K, pw.data(), ps.data());
    const std::vector<uint16_t> x = activations(rng, K), xp = permuted(x, K, kFp4UnitK, fp4_logical_source_k);
    std::vector<double> y((size_t)(N * kTokens), 0.0), ref((size_t)(N * kTokens), 0.0);
    for (int64_t n = 0; n < N; n++)
        for (int64_t k = 0; k < K; k++) {
            const uint8_t byte = w[(n * K + k) / 2], code = (k & 1) ? byte >> 4 : byte & 0xF;
            const uint8_t s = sc[n * groups + k / 16];
            const double wv = (s & 0x7F) == 0x7F ? 0.0 : (double)qs_e2m1_to_f32(code) * qs_e4m3_to_f32(s);
            for (int t = 0; t < kTokens; t++)
                ref[n * kTokens + t] += wv * xval(x, K, t, k);
        }
    const int64_t units_k = K / kFp4UnitK, steps = K / kFp4StepK;
    for (int64_t strip = 0; strip < N / 16; strip++)
        for (int64_t u = 0; u < units_k; u++) {
            uint32_t a[4][32][4], b[4][32][2];
            for (int lane = 0; lane < 32; lane++) {
                uint32_t v[4];
                memcpy(v, &pw[(size_t)((strip * units_k + u) * kUnitBytes + lane * 16)], 16);
                uint16_t codes;
                memcpy(&codes, &ps[(size_t)((strip * steps + u / 4) * kFp4ScaleStepBytes) +
                                   fp4_scale_byte(lane, (int)(u % 4), 0)],
                       2);
                const uint32_t s_r = scale_bf16x2(codes, 0), s_r8 = scale_bf16x2(codes, 1);
                for (int t = 0; t < 4; t++) {
                    dequant_fp4(v[t], s_r, s_r8, a[t][lane]);
                    for (int j = 0; j < 2; j++)
                        b[t][lane][j] = b_word(feed, x, xp, K, kFp4UnitK, fp4_unit_k(lane & 3, 0, 0, 0), u, t, lane, j);
                }
            }
            double d[16][8] = {};
            for (int t = 0; t < 4; t++)
                emulated_mma(a[t], b[t], d);
            for (int i = 0; i < 16; i++)
                for (int t = 0; t < kTokens; t++)
                    y[(strip * 16 + i) * kTokens + t] += d[i][t] * 0x1p84;
        }
    return rel_err(y, ref);
}

} // namespace

extern "C" int qs_marlin_layout_selfcheck(int wgmma_order, double *fp8_rel_err, double *nvfp4_rel_err)
{
    Rng rng = {0x9E3779B97F4A7C15ull};
    const Feed feed = wgmma_order ? Feed::Permuted : Feed::LaneChunk;
    *fp8_rel_err = check_fp8(rng, feed);
    *nvfp4_rel_err = check_nvfp4(rng, feed);
    return 0;
}
