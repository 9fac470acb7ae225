// marlin_stream_rewrite.h — the stream kernel's activation rewrite (marlin_stream.cu), in one place
// for the kernel (device) and its CPU check (marlin_stream_check.cu, host): a stage's activations
// as the tensor copy leaves them (staged) turned into wgmma's K-major shared-memory image with the
// packer's k permutation (marlin_layout.h) undone, so that logical position j of slice s of the
// image holds the activation the weight in A's position j multiplies.
//
// Staged: 128 k of NT tokens as two 64-k halves of NT 128-byte rows; token n's 16-byte chunk j of
// a half sits at chunk j ^ (n % 8) (the copy's 128-byte swizzle). Image: slice s (16 k) of token
// n, logical position j at s * NT * 32 + (n / 8) * 256 + (j / 8) * 128 + (n % 8) * 16 + (j % 8) * 2
// (8 x 16-byte core matrices; LBO 128 between the two of a slice, SBO 256 between token groups).
#ifndef QS_CUDA_MARLIN_STREAM_REWRITE_H
#define QS_CUDA_MARLIN_STREAM_REWRITE_H

#include <stdint.h>
#include <vector_types.h> // uint4

#include "marlin_layout.h" // QS_HD

namespace qs_marlin {

// Bytes of one 64-k half of a staged stage (one tensor-copy box) and of one k16 slice of the
// image, for nt tokens.
QS_HD constexpr int staged_half_bytes(int nt) { return nt * 128; }
QS_HD constexpr int image_slice_bytes(int nt) { return nt * 32; }

// Byte offset of token n's k (0..127) in a staged stage of nt tokens.
QS_HD int staged_offset(int nt, int n, int k)
{
    return (k / 64) * staged_half_bytes(nt) + n * 128 + ((((k % 64) / 8) ^ (n % 8)) << 4) + (k % 8) * 2;
}

// Byte offset of token n's logical position j (0..15) of slice s in the rewritten image.
QS_HD int image_offset(int nt, int n, int s, int j)
{
    return s * image_slice_bytes(nt) + (n / 8) * 256 + (j / 8) * 128 + (n % 8) * 16 + (j % 8) * 2;
}

// Item q (0..3) of token n: 32 k of the stage (FP8: unit q; NVFP4: half q % 2 of unit q / 2's lane
// chunks). Its four staged chunks c (FP8: k 8c of the unit, chunk 4 (q % 2) + c of half q / 2;
// NVFP4: the first or second 8 k of lane chunk c, chunk 2c + q % 2) hold pairs (t, h) = word
// 2t + h each, and core row (slice 2q + t, h) is word 2t + h of chunks 0..3 (marlin_layout.h:
// physical k 8c + 4t + 2h + e is logical 16t + 8h + 2c + e; NVFP4 alike with chunk stride 16 k):
// four 16-byte loads, a 4 x 4 transpose of 4-byte pairs in registers, four 16-byte stores.
// Staged chunk (8 k) c of item q: its index in the item's 64-k half.
template <bool FP4> QS_HD int item_chunk(int q, int c) { return FP4 ? 2 * c + (q & 1) : 4 * (q & 1) + c; }
// The permuted copy of x (marlin_permute.cu, for the wgmma kernel and the stream kernel's
// rewrite-free path): its 32-k item b (k [32b, 32b + 32) of the copy) is item q = b % 4 of stage
// b / 4, whose chunk c starts at x's k item_source_k(b, c); transpose_pairs of the four chunks
// gives the copy's four 16-byte chunks.
template <bool FP4> QS_HD int item_source_k(int b, int c)
{
    const int q = b % 4;
    return (b / 4) * 128 + (q / 2) * 64 + item_chunk<FP4>(q, c) * 8;
}
// The item's four core rows (slice 2q + t, half h: row 2t + h) from its four chunks.
QS_HD void transpose_pairs(const uint4 ch[4], uint4 row[4])
{
    row[0] = make_uint4(ch[0].x, ch[1].x, ch[2].x, ch[3].x);
    row[1] = make_uint4(ch[0].y, ch[1].y, ch[2].y, ch[3].y);
    row[2] = make_uint4(ch[0].z, ch[1].z, ch[2].z, ch[3].z);
    row[3] = make_uint4(ch[0].w, ch[1].w, ch[2].w, ch[3].w);
}

template <bool FP4, int NT> QS_HD void rewrite_item(const uint8_t *staged, uint8_t *image, int n, int q)
{
    const uint8_t *row = staged + (q / 2) * staged_half_bytes(NT) + n * 128;
    uint4 ch[4], core[4];
#pragma unroll
    for (int c = 0; c < 4; c++)
        ch[c] = *(const uint4 *)(row + ((item_chunk<FP4>(q, c) ^ (n & 7)) << 4));
    transpose_pairs(ch, core);
    uint8_t *out = image + (n / 8) * 256 + (n % 8) * 16;
    constexpr int slice = image_slice_bytes(NT);
#pragma unroll
    for (int i = 0; i < 4; i++)
        *(uint4 *)(out + (2 * q + i / 2) * slice + (i & 1) * 128) = core[i];
}

} // namespace qs_marlin

#endif
