/* act_order.h — the order a linear kernel may want a row of activations in: natural, or the
 * packed k order of the marlin stream kernel's rewrite-free path (cuda/marlin_stream_rewrite.h),
 * which differs for FP8 and NVFP4 weights. The op that produces the activations writes them in it
 * (ops.h: add_rmsnorm, swiglu_gate_up) so that the GEMM needs no permute pass of its own (~3 us a
 * call on the H200: docs/marlin.md). Plain C, also compiled into the CUDA kernels. */
#ifndef QS_CORE_ACT_ORDER_H
#define QS_CORE_ACT_ORDER_H

#include <stdint.h>

#include "util/error.h"

#ifdef __CUDACC__
#define QS_ACT_HD __host__ __device__
#else
#define QS_ACT_HD
#endif

typedef enum {
    QS_ACT_NATURAL = 0,
    QS_ACT_MARLIN_FP8 = 1, /* rows a multiple of 128 wide */
    QS_ACT_MARLIN_FP4 = 2,
} qs_act_order;

/* Where element k of a row goes in `order`. The marlin orders move pairs (k even, k + 1) together,
 * within their 128-k stage: element k of chunk ci (8 k) of half h (64 k) lands in 32-k item
 * 2h + q of the stage, at pair k % 8 / 2 of the item's four 8-k rows, column c (FP8: q = ci / 4,
 * c = ci % 4; NVFP4: q = ci % 2, c = ci / 2) — the inverse of marlin's item_source_k. */
static inline QS_ACT_HD int64_t qs_act_position(qs_act_order order, int64_t k)
{
    if (order == QS_ACT_NATURAL)
        return k;
    const int64_t stage = k >> 7;
    const int r = (int)(k & 127), h = r >> 6, ci = (r & 63) >> 3, w = r & 7;
    const int fp4 = order == QS_ACT_MARLIN_FP4;
    const int q = fp4 ? (ci & 1) : (ci >> 2), c = fp4 ? (ci >> 1) : (ci & 3);
    return 128 * stage + 32 * (2 * h + q) + 8 * (w >> 1) + 2 * c + (w & 1);
}

/* Whether rows of d suit `order` (the marlin orders need whole 128-k stages). */
static inline int qs_act_order_fits(qs_act_order order, int64_t d) { return order == QS_ACT_NATURAL || d % 128 == 0; }

/* 0, or -1 with err naming op when rows of d do not suit `order` (what the ops that write an order
 * check first). */
static inline int qs_act_order_check(qs_act_order order, int64_t d, const char *op, qs_err *err)
{
    if (qs_act_order_fits(order, d))
        return 0;
    return qs_errf(err, "%s: rows of %lld do not suit activation order %d", op, (long long)d, (int)order);
}

#endif
