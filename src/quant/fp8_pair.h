/* fp8_pair.h — a row of BF16 activations as two E4M3 rows at a power-of-two scale per block of
 * the row, so that a weight-only FP8 GEMM (W8A16) could run on FP8 tensor cores with the
 * activations' full precision:
 *   e  = the power of two that takes the block's largest |x| into [128, 256)
 *   hi = e4m3(x · 2^e),  lo = e4m3(x · 2^e − hi),  x = (hi + lo) · 2^−e
 * A BF16 value has 8 significant bits and E4M3 4, so the remainder x · 2^e − hi has at most 4
 * (hi rounds to nearest) and is exact in E4M3 wherever its lowest bit is no finer than E4M3's
 * smallest subnormal, 2^−9: every element with |x · 2^e| ≥ 2^−2, i.e. within 2^−10 of its block's
 * largest. Below that, |x − (hi + lo) · 2^−e| ≤ 2^−10 · 2^−e. W · x is then W · hi + W · lo (two
 * FP8 GEMMs over the same weight bytes, products exact in FP32), each block's partial sum scaled
 * by its 2^−e (a block of 128 k: one wgmma stage).
 * The CPU reference of the idea. Session 19 built the kernel (marlin's stream kernel on FP8
 * wgmma, commit b4c9682) and dropped it: correct, but no faster (docs/marlin-history.md). */
#ifndef QS_QUANT_FP8_PAIR_H
#define QS_QUANT_FP8_PAIR_H

#include <stdint.h>

/* Splits x[0..n) (BF16 values held in floats, finite) into hi and lo E4M3 codes, blocks of `block`
 * elements (the last may be shorter; block = n: one scale for the row); e[b] is block b's
 * exponent. An all-zero block gives e = 0 and zero codes. */
void qs_fp8_pair_split(const float *x, int64_t n, int64_t block, uint8_t *hi, uint8_t *lo, int *e);

/* (hi + lo) · 2^−e: the value a pair stands for. */
float qs_fp8_pair_value(uint8_t hi, uint8_t lo, int e);

#endif
