/* linear_shard.h — one tensor-parallel rank's part of a linear layer, cut the way vLLM cuts it:
 * column-parallel layers (q/k/v, gate/up, lm_head) keep a range of output rows, row-parallel ones
 * (o, down) a range of input columns. Scales follow their weights: a per-tensor FP8 scale and the
 * NVFP4 global scales are shared, per-channel scales are cut with their rows, 128x128 block scales
 * and NVFP4's 16-element group scales only on block/group boundaries (anything else is refused
 * with the layer and the sizes named). A row range points into the checkpoint's mmap (no copy);
 * a column range is copied row by row from it, so a rank reads only its own shard. */
#ifndef QS_QUANT_LINEAR_SHARD_H
#define QS_QUANT_LINEAR_SHARD_H

#include <stdbool.h>
#include <stdint.h>

#include "core/scheme.h"
#include "util/error.h"

typedef enum {
    QS_SHARD_ROWS, /* column-parallel: output features [first, first + count) */
    QS_SHARD_COLS  /* row-parallel: input features [first, first + count) */
} qs_shard_dim;

typedef struct qs_linear_shard {
    qs_tensor weight, scale, bias;
    char weight_name[200], scale_name[200], bias_name[200];
    void *weight_data, *scale_data; /* owned copies of a column range; NULL for row ranges */
} qs_linear_shard;

/* Cuts d (in place) to its shard; the shard's tensors live in *sh, which must outlive d. A
 * row-parallel layer's bias stays only where keep_bias (rank 0: it is added once, before the
 * all-reduce sums the ranks' partial outputs). */
int qs_linear_shard_make(qs_linear_desc *d, qs_shard_dim dim, int64_t first, int64_t count, bool keep_bias,
                         qs_linear_shard *sh, qs_err *err);
void qs_linear_shard_free(qs_linear_shard *sh);
/* "[64 x 128] rows 0..64 of 128" style summary of the cut, for the start-up log. */
void qs_linear_shard_describe(const qs_linear_desc *d, qs_shard_dim dim, int64_t first, int64_t count, char *buf,
                              size_t cap);

#endif
