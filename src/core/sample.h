/* sample.h — the sampling op (ops.h: qs_ops.sample): one token per row of logits, picked on the
 * device from per-row parameters, so that a step copies token ids to the host instead of whole
 * rows of logits. The CPU reference is src/cpu/sample_cpu.c, the CUDA kernel cuda/sample_cuda.cu;
 * both follow the definition below exactly, with integer arithmetic wherever a sum is involved,
 * so the only difference between devices is the rounding of expf (a few ulps of a weight).
 *
 * The algorithm, for one row of V logits x[0..V) and its qs_sample_row r:
 *   0. Allowed ids: every id in [0, V) not listed in r.banned[0 .. r.n_banned). A NaN logit
 *      counts as -inf.
 *   1. Greedy (r.inv_temperature <= 0): the allowed id with the largest x, ties to the lowest
 *      id. Nothing else below applies.
 *   2. Scaled logits: z[i] = x[i] * r.inv_temperature in float32 (one correctly rounded
 *      multiplication; skipped when inv_temperature is 1), +inf clamped to FLT_MAX, -0 made +0.
 *      zmax = the largest z of an allowed id. If no id is allowed, or zmax is -inf, the row's
 *      token is the greedy choice of step 1 (the lowest allowed id, or 0).
 *   3. Weights: w[i] = floor(expf(z[i] - zmax) * 2^40) as an unsigned 64-bit integer (the
 *      subtraction in float32); 2^40 for the top id, 0 for ids below about 2^-40 of it. Every sum
 *      below is an exact integer sum of these weights, whatever the order.
 *   4. Keys: z compared through an order-preserving 32-bit key (qs_sample_key); equal z, equal key.
 *   5. Kept set K1: allowed ids with z - zmax >= r.log_min_p (min-p relative to the top
 *      probability; log_min_p = ln(min_p), -inf when off) and, when 0 < top_k < allowed ids,
 *      z >= the top_k-th largest z of the allowed ids (ties at that value all kept, so K1 may
 *      hold more than top_k ids).
 *   6. Top-p (when 0 < r.top_p < 1): M1 = sum of w over K1, need = ceil(top_p * M1) (in double);
 *      t = the largest key such that the ids of K1 with key >= t weigh at least need; K2 = the
 *      ids of K1 with key >= t (again ties at t all kept). Otherwise K2 = K1.
 *   7. Draw: M2 = sum of w over K2, target = floor(u * M2) (in double, u in [0, 1), capped at
 *      M2 - 1); the token is the first id of K2, in id order, whose running sum of w exceeds
 *      target.
 * Steps 5 and 6 are threshold searches (a radix select over the keys), never a sort. Compared
 * with the host sampler (sampler.c) the draw walks ids in id order rather than in probability
 * order and ties at a top-k / top-p boundary are kept: the same distribution up to those ties,
 * but not the same token for the same u. */
#ifndef QS_CORE_SAMPLE_H
#define QS_CORE_SAMPLE_H

#include <float.h>
#include <math.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Banned ids a row carries (end tokens masked below min_tokens); a request needing more is
 * sampled on the host. */
#define QS_SAMPLE_MAX_BANNED 16
/* Vocabularies up to this size keep the sums of weights (at most V * 2^40) below 2^63. */
#define QS_SAMPLE_MAX_VOCAB (1 << 22)
#define QS_SAMPLE_WEIGHT_SCALE 1099511627776.0f /* 2^40 */

/* One row's parameters, in device memory for the op. skip: the row is not sampled (its logits
 * go to the host; the op writes token -1). Plain C layout shared by the host and the device. */
typedef struct qs_sample_row {
    double u;                 /* uniform in [0, 1), drawn by the host sampler */
    double top_p;             /* applied when 0 < top_p < 1 */
    float inv_temperature;    /* 1 / temperature; <= 0: greedy */
    float log_min_p;          /* ln(min_p); -INFINITY: off */
    int32_t top_k;            /* applied when 0 < top_k < allowed ids */
    int32_t skip;
    int32_t n_banned;         /* 0 .. QS_SAMPLE_MAX_BANNED */
    int32_t banned[QS_SAMPLE_MAX_BANNED];
    int32_t pad_;
} qs_sample_row;

#ifdef __CUDACC__
#define QS_SAMPLE_FN __host__ __device__ static inline
#else
#define QS_SAMPLE_FN static inline
#endif

/* Step 2: the scaled logit of x. */
QS_SAMPLE_FN float qs_sample_z(float x, float inv_temperature)
{
    if (x != x)
        return -INFINITY;
#ifdef __CUDA_ARCH__
    float z = inv_temperature == 1.0f ? x : __fmul_rn(x, inv_temperature);
#else
    float z = inv_temperature == 1.0f ? x : x * inv_temperature;
#endif
    if (z > FLT_MAX)
        z = FLT_MAX;
    return z == 0.0f ? 0.0f : z;
}

/* Step 3: the integer weight of z below the row's largest zmax (finite). */
QS_SAMPLE_FN uint64_t qs_sample_weight(float z, float zmax)
{
#ifdef __CUDA_ARCH__
    float d = __fsub_rn(z, zmax);
#else
    float d = z - zmax;
#endif
    if (!(d > -64.0f)) /* the weight is 0 anyway (also for -inf) */
        return 0;
    float e = expf(d) * QS_SAMPLE_WEIGHT_SCALE;
    return (uint64_t)e;
}

/* Step 5: whether z passes min-p. */
QS_SAMPLE_FN int qs_sample_min_p_ok(float z, float zmax, float log_min_p)
{
#ifdef __CUDA_ARCH__
    return __fsub_rn(z, zmax) >= log_min_p;
#else
    return z - zmax >= log_min_p;
#endif
}

/* Step 4: an unsigned key ordered as z (z is never NaN here, and -0 is already +0). */
QS_SAMPLE_FN uint32_t qs_sample_key(float z)
{
    union {
        float f;
        uint32_t u;
    } v;
    v.f = z;
    return (v.u & 0x80000000u) ? ~v.u : (v.u | 0x80000000u);
}

/* Step 6: the mass the top-p set must reach. */
QS_SAMPLE_FN uint64_t qs_sample_top_p_need(double top_p, uint64_t m1)
{
    double need = ceil(top_p * (double)m1);
    if (need < 1.0)
        return 1;
    return need >= (double)m1 ? m1 : (uint64_t)need;
}

/* Step 7: the target of the draw. */
QS_SAMPLE_FN uint64_t qs_sample_target(double u, uint64_t m2)
{
    double t = floor(u * (double)m2);
    if (!(t >= 0.0))
        return 0;
    return t >= (double)m2 ? m2 - 1 : (uint64_t)t;
}

#ifdef __cplusplus
}
#endif

#endif
