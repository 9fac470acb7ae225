/* tensor.h — the typed view of bytes every layer shares: the element types a checkpoint may hold
 * (qs_dtype, safetensors' names), a tensor (qs_tensor: name, dtype, shape, data) and the element
 * conversions to and from float (core/dtype.c). No file format here: io/safetensors.h fills
 * qs_tensor from a checkpoint, kernels and ops read it. */
#ifndef QS_CORE_TENSOR_H
#define QS_CORE_TENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    QS_DT_F64, QS_DT_F32, QS_DT_F16, QS_DT_BF16,
    QS_DT_F8_E4M3, QS_DT_F8_E5M2, QS_DT_F8_E8M0,
    QS_DT_I64, QS_DT_I32, QS_DT_I16, QS_DT_I8,
    QS_DT_U64, QS_DT_U32, QS_DT_U16, QS_DT_U8,
    QS_DT_BOOL,
    QS_DT_COUNT
} qs_dtype;

#define QS_MAX_DIMS 8

typedef struct qs_tensor {
    const char *name;          /* owned by the checkpoint */
    qs_dtype dtype;
    int ndim;
    int64_t shape[QS_MAX_DIMS];
    int64_t numel;
    const void *data;          /* the bytes: a checkpoint's mapped data, or a buffer of their own */
    size_t nbytes;
    const char *file;          /* file name the tensor lives in (for messages) */
} qs_tensor;

/* "F8_E4M3" -> QS_DT_F8_E4M3; returns -1 for an unknown string. */
int qs_dtype_from_string(const char *s);
const char *qs_dtype_name(qs_dtype dt);
/* Bits per element (8 for U8/F8, 16 for BF16, ...). */
int qs_dtype_bits(qs_dtype dt);
/* t as the header of a 0-, 1- or 2-dimensional tensor (shape d0 x d1), everything else zeroed:
 * numel and nbytes from the shape; no data, no file. */
void qs_tensor_header(qs_tensor *t, const char *name, qs_dtype dt, int ndim, int64_t d0, int64_t d1);

/* Element conversion helpers shared by loaders and reference kernels. */
float qs_bf16_to_f32(uint16_t h);
uint16_t qs_f32_to_bf16(float f);          /* round to nearest even */
float qs_f16_to_f32(uint16_t h);
uint16_t qs_f32_to_f16(float f);
/* Converts element i of a float tensor (F32, F16, BF16, F64) to float. Works for any dtype, in
 * fact (integers by value, BOOL as 0/1); NaN when i is out of range or data is NULL. */
float qs_tensor_get_f32(const qs_tensor *t, int64_t i);
/* n elements of dtype dt (unaligned source fine) to float. */
void qs_convert_to_f32(qs_dtype dt, const void *src, float *dst, size_t n);
/* Bulk float -> bf16 / f16, round to nearest even. */
void qs_f32_to_bf16_n(const float *src, uint16_t *dst, size_t n);
void qs_f32_to_f16_n(const float *src, uint16_t *dst, size_t n);
/* "F64, F32, F16, ..." (the supported dtype strings, for messages). */
const char *qs_dtype_list(void);

#ifdef __cplusplus
}
#endif

#endif
