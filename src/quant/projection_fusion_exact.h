/* projection_fusion_exact.h — one linear layer out of several that read the same input (q/k/v, gate/up), as
 * vLLM's QKVParallelLinear and MergedColumnParallelLinear do: the fused weight is the parts'
 * weight rows stacked in order, so output column block i of the fused layer is part i's output.
 * Only exact fusions are made, those where every output row is computed from exactly the same
 * codes, scales and input quantization as before:
 *   - one scheme, one weight dtype, one activation quantization (and group size), all parts
 *     with a bias or none;
 *   - FP8 per-channel scales are concatenated; per-tensor scales that agree stay per-tensor, ones
 *     that differ become a per-channel vector only when the caller says every kernel takes
 *     per-channel scales (channel_scales_ok);
 *   - FP8 block scales are concatenated only when every part's row count is a multiple of the
 *     block height (a block never straddles two parts);
 *   - NVFP4 packed rows and their E4M3 block scales are concatenated, and the global scales (and
 *     for W4A4 the input global scales) must be equal, since one GEMM applies one of each;
 *   - static per-tensor FP8 input scales must be equal, for the same reason.
 * Dynamic activation scales need nothing: every part sees the same input, so per-token, per-group
 * and per-tensor amaxes are the same numbers fused or not.
 *
 * Planning works on headers-only descriptions too (`qserve backends`): a condition that needs a
 * scalar value the description does not hold yields QS_FUSE_IF_SCALES_AGREE. */
#ifndef QS_QUANT_PROJECTION_FUSION_EXACT_H
#define QS_QUANT_PROJECTION_FUSION_EXACT_H

#include <stdbool.h>
#include <stddef.h>

#include "core/tensor.h"
#include "core/scheme.h"
#include "util/error.h"

#define QS_FUSE_MAX_PARTS 4

typedef enum {
    QS_FUSE_NO,              /* keep the parts separate; why says which condition failed */
    QS_FUSE_YES,             /* one layer computes exactly what the parts did */
    QS_FUSE_IF_SCALES_AGREE  /* headers only: exact if the scalar scales (not read) are equal */
} qs_fuse_verdict;

/* A fused layer and the tensors it owns. desc points at weight/scale/bias below (or, for a shared
 * per-tensor scale, at part 0's scale tensor), so the struct must not be moved once planned. */
typedef struct qs_fused_linear {
    qs_linear_desc desc;
    int n_parts;
    int64_t part_rows[QS_FUSE_MAX_PARTS];
    bool tensor_scales_to_channel;   /* per-tensor FP8 scales spread into one per-channel vector */
    qs_tensor weight, scale, bias;
    char weight_name[192], scale_name[192], bias_name[192];
    void *weight_data, *scale_data, *bias_data; /* owned; NULL before materialize and after drop */
} qs_fused_linear;

/* Decides whether parts[0..n) can be one layer named `name` and fills f with its description:
 * tensor headers with the fused shapes, no data yet. Returns QS_FUSE_NO with a sentence in why
 * (naming the parts) when they cannot. */
qs_fuse_verdict qs_linear_fuse_plan(const qs_linear_desc *const *parts, int n, const char *name,
                                    bool channel_scales_ok, qs_fused_linear *f, char *why, size_t cap);
/* Concatenates the parts' data into f's own buffers. Every part's tensors must hold data. */
int qs_linear_fuse_materialize(const qs_linear_desc *const *parts, int n, qs_fused_linear *f, qs_err *err);
/* Frees the concatenated buffers (once a kernel has prepared its own copy); the tensors of
 * f->desc then hold no data. Safe to call twice. */
void qs_fused_linear_drop_data(qs_fused_linear *f);

#endif
