/* linear_shard.c — cuts a linear layer's weight, scales and bias to one tensor-parallel rank's
 * range (see linear_shard.h). Sizes are checked against the scale layout before anything is cut,
 * so a shape that does not split is one error naming the layer, the range and the block size. */
#include "quant/linear_shard.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void header_copy(qs_tensor *dst, const qs_tensor *src, char *name, size_t cap, const char *suffix)
{
    *dst = *src;
    snprintf(name, cap, "%s%s", src->name ? src->name : "?", suffix);
    dst->name = name;
}

static void set_size(qs_tensor *t)
{
    t->numel = 1;
    for (int i = 0; i < t->ndim; i++)
        t->numel *= t->shape[i];
    t->nbytes = (size_t)(t->numel * qs_dtype_bits(t->dtype) / 8);
}

/* Rows [first, first + count) of a 1-D or 2-D tensor: a view into its data. */
static void slice_rows(qs_tensor *dst, const qs_tensor *src, int64_t first, int64_t count, char *name, size_t cap)
{
    header_copy(dst, src, name, cap, " (shard)");
    int64_t row_elems = src->ndim == 2 ? src->shape[1] : 1;
    size_t row_bytes = (size_t)(row_elems * qs_dtype_bits(src->dtype) / 8);
    dst->shape[0] = count;
    set_size(dst);
    if (src->data)
        dst->data = (const uint8_t *)src->data + (size_t)first * row_bytes;
}

/* Columns [first, first + count) of a 2-D tensor: copied, since they are strided. */
static int slice_cols(qs_tensor *dst, const qs_tensor *src, int64_t first, int64_t count, char *name, size_t cap,
                      void **owned, qs_err *err)
{
    header_copy(dst, src, name, cap, " (shard)");
    int bits = qs_dtype_bits(src->dtype);
    if ((first * bits) % 8 || (count * bits) % 8)
        return qs_errf(err, "%s: columns %lld..%lld do not start on a byte", src->name, (long long)first,
                       (long long)(first + count));
    dst->shape[1] = count;
    set_size(dst);
    *owned = NULL;
    if (!src->data)
        return 0;
    size_t src_row = (size_t)(src->shape[1] * bits / 8), dst_row = (size_t)(count * bits / 8);
    size_t off = (size_t)(first * bits / 8);
    uint8_t *out = malloc(dst_row * (size_t)src->shape[0] + 1);
    if (!out)
        return qs_errf(err, "out of memory cutting %s", src->name);
    for (int64_t r = 0; r < src->shape[0]; r++)
        memcpy(out + (size_t)r * dst_row, (const uint8_t *)src->data + (size_t)r * src_row + off, dst_row);
    dst->data = out;
    *owned = out;
    return 0;
}

/* The scale granularity along dim: rows or columns per scale entry (0: the scale is not cut). */
static int64_t scale_step(const qs_linear_desc *d, qs_shard_dim dim)
{
    switch (d->wscale) {
    case QS_WSCALE_CHANNEL:
        return dim == QS_SHARD_ROWS ? 1 : 0;
    case QS_WSCALE_BLOCK:
        return dim == QS_SHARD_ROWS ? d->block_n : d->block_k;
    case QS_WSCALE_NVFP4:
        return dim == QS_SHARD_ROWS ? 1 : 16;
    default:
        return 0;
    }
}

int qs_linear_shard_make(qs_linear_desc *d, qs_shard_dim dim, int64_t first, int64_t count, bool keep_bias,
                         qs_linear_shard *sh, qs_err *err)
{
    memset(sh, 0, sizeof *sh);
    int64_t full = dim == QS_SHARD_ROWS ? d->n : d->k;
    const char *what = dim == QS_SHARD_ROWS ? "output rows" : "input columns";
    if (first < 0 || count <= 0 || first + count > full)
        return qs_errf(err, "%s: %s %lld..%lld are outside its %lld", d->name, what, (long long)first,
                       (long long)(first + count), (long long)full);
    if (!d->weight || d->weight->ndim != 2)
        return qs_errf(err, "%s: tensor parallelism needs a 2-D weight", d->name);
    int64_t step = scale_step(d, dim);
    if (step > 1 && (first % step || count % step))
        return qs_errf(err,
                       "%s (%s, %s scales): %lld %s per rank do not split on its %lld-element scale blocks; "
                       "use a --tensor-parallel-size that divides them into whole blocks",
                       d->name, qs_scheme_name(d->scheme), qs_weight_scale_layout_name(d->wscale), (long long)count,
                       what, (long long)step);
    /* the weight: NVFP4 packs two elements a byte, so its tensor has k/2 columns */
    if (dim == QS_SHARD_ROWS) {
        slice_rows(&sh->weight, d->weight, first, count, sh->weight_name, sizeof sh->weight_name);
    } else {
        int64_t per = d->k / d->weight->shape[1]; /* logical columns per tensor column: 1, or 2 for NVFP4 */
        if (per < 1 || d->weight->shape[1] * per != d->k || first % per || count % per)
            return qs_errf(err, "%s: columns %lld..%lld do not split its packed weight", d->name, (long long)first,
                           (long long)(first + count));
        if (slice_cols(&sh->weight, d->weight, first / per, count / per, sh->weight_name, sizeof sh->weight_name,
                       &sh->weight_data, err))
            return -1;
    }
    d->weight = &sh->weight;
    if (step > 0 && d->weight_scale) {
        const qs_tensor *s = d->weight_scale;
        int64_t sfirst = first / step, scount = (count + step - 1) / step;
        if (dim == QS_SHARD_ROWS) {
            slice_rows(&sh->scale, s, sfirst, scount, sh->scale_name, sizeof sh->scale_name);
        } else if (s->ndim != 2) {
            return qs_errf(err, "%s: its %s scale is not 2-D", d->name, qs_weight_scale_layout_name(d->wscale));
        } else if (slice_cols(&sh->scale, s, sfirst, scount, sh->scale_name, sizeof sh->scale_name, &sh->scale_data,
                              err)) {
            return -1;
        }
        d->weight_scale = &sh->scale;
    }
    if (d->bias) {
        if (dim == QS_SHARD_ROWS) {
            slice_rows(&sh->bias, d->bias, first, count, sh->bias_name, sizeof sh->bias_name);
            d->bias = &sh->bias;
        } else if (!keep_bias) {
            d->bias = NULL;
        }
    }
    if (dim == QS_SHARD_ROWS)
        d->n = count;
    else
        d->k = count;
    return 0;
}

void qs_linear_shard_free(qs_linear_shard *sh)
{
    if (!sh)
        return;
    free(sh->weight_data);
    free(sh->scale_data);
    sh->weight_data = sh->scale_data = NULL;
}

void qs_linear_shard_describe(const qs_linear_desc *d, qs_shard_dim dim, int64_t first, int64_t count, char *buf,
                              size_t cap)
{
    snprintf(buf, cap, "[%lld x %lld] (%s %lld..%lld)", (long long)d->n, (long long)d->k,
             dim == QS_SHARD_ROWS ? "rows" : "columns", (long long)first, (long long)(first + count));
}
