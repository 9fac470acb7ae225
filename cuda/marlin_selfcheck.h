/* marlin_selfcheck.h — the `marlin` packed layout checked on the CPU (marlin_selfcheck.cu): packs
 * random FP8 and NVFP4 weights, expands them with the kernels' own bit extraction and multiplies
 * through an emulated mma.m16n8k16, with the activations fed as the small-M kernel reads them
 * (wgmma_order 0) or as the wgmma kernel does (1: a permuted copy in the mma's k order). Writes
 * each format's relative error against the plain product (exact arithmetic gives ~1e-7). Needs
 * no GPU; linked when nvcc is found. */
#ifndef QS_CUDA_MARLIN_SELFCHECK_H
#define QS_CUDA_MARLIN_SELFCHECK_H

#ifdef __cplusplus
extern "C" {
#endif

int qs_marlin_layout_selfcheck(int wgmma_order, double *fp8_rel_err, double *nvfp4_rel_err);

#ifdef __cplusplus
}
#endif

#endif
