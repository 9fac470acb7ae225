/* cuda_test_util.h — what the GPU test programs share: a seeded xorshift source of uniform
 * floats (also rounded to BF16) and a helper that describes a host buffer as a checkpoint tensor (qs_tensor), so the
 * tests can hand kernels hand-made weights without writing files. Header-only: each test is
 * one program. */
#ifndef QS_CUDA_TEST_UTIL_H
#define QS_CUDA_TEST_UTIL_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/tensor.h"

/* The next state of an xorshift64 source (its high bits are the usable ones). */
static inline uint64_t qs_test_xorshift(uint64_t *state)
{
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    return *state;
}

/* Uniform in [-1, 1) from an xorshift64 state. */
static inline float qs_test_frand(uint64_t *state)
{
    return (float)((qs_test_xorshift(state) >> 40) * (1.0 / (1ull << 23))) - 1.0f;
}

/* n uniform floats in [-scale, scale), rounded to BF16 so that both sides of a test see the same
 * values (at least one element allocated). */
static inline float *qs_test_rand_bf16(uint64_t *state, int64_t n, float scale)
{
    float *v = malloc(sizeof(float) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++)
        v[i] = qs_bf16_to_f32(qs_f32_to_bf16(qs_test_frand(state) * scale));
    return v;
}

/* t describes data as a tensor of 0, 1 or 2 dimensions (d0, d1). */
static inline void qs_test_set_tensor(qs_tensor *t, const char *name, qs_dtype dt, int ndim, int64_t d0, int64_t d1,
                                      const void *data, size_t nbytes)
{
    qs_tensor_header(t, name, dt, ndim, d0, d1);
    t->data = data;
    t->nbytes = nbytes;
    t->file = "test";
}

#endif
