/* projection_fusion_exact.c — planning and building fused linear layers (see
 * projection_fusion_exact.h). Planning only reads descriptions and, when present, the scalar
 * scales; building copies the parts' weight rows, scales and biases one after the other.
 * Scales that are concatenated (per-channel, per-block, biases) are written as F32 from the values
 * every kernel reads (qs_scale_get / qs_tensor_get_f32), so no kernel sees a different number;
 * NVFP4 E4M3 block scales and all weights are copied byte for byte. */
#include "quant/projection_fusion_exact.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quant/linear_desc.h"

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* "model.layers.0.self_attn.k_proj" -> "k_proj", for reasons that name several parts. */
static const char *short_name(const qs_linear_desc *d)
{
    const char *dot = strrchr(d->name, '.');
    return dot ? dot + 1 : d->name;
}

static qs_fuse_verdict refuse(char *why, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static qs_fuse_verdict refuse(char *why, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, cap, fmt, ap);
    va_end(ap);
    return QS_FUSE_NO;
}

static void set_header(qs_tensor *t, const char *name, qs_dtype dt, int ndim, int64_t d0, int64_t d1)
{
    qs_tensor_header(t, name, dt, ndim, d0, d1);
    t->file = "fused at load";
}

/* The conditions that do not depend on the scale layout. */
static qs_fuse_verdict check_common(const qs_linear_desc *const *parts, int n, char *why, size_t cap)
{
    const qs_linear_desc *a = parts[0];
    for (int i = 0; i < n; i++) {
        const qs_linear_desc *p = parts[i];
        if (!p->weight || p->weight->ndim != 2)
            return refuse(why, cap, "%s has no 2-D weight tensor.", short_name(p));
        if (p->scheme != a->scheme)
            return refuse(why, cap, "%s is %s and %s is %s; one GEMM runs one scheme.", short_name(a),
                          qs_scheme_name(a->scheme), short_name(p), qs_scheme_name(p->scheme));
        if (p->k != a->k)
            return refuse(why, cap, "%s reads %lld inputs and %s %lld.", short_name(a), (long long)a->k,
                          short_name(p), (long long)p->k);
        if (p->weight->dtype != a->weight->dtype)
            return refuse(why, cap, "%s stores %s weights and %s %s.", short_name(a), qs_dtype_name(a->weight->dtype),
                          short_name(p), qs_dtype_name(p->weight->dtype));
        if (p->aquant != a->aquant || (p->aquant == QS_AQUANT_DYNAMIC_GROUP && p->act_group_size != a->act_group_size))
            return refuse(why, cap, "%s quantizes activations %s and %s %s.", short_name(a),
                          qs_act_quant_name(a->aquant), short_name(p), qs_act_quant_name(p->aquant));
        if (!p->bias != !a->bias)
            return refuse(why, cap, "%s has a bias and %s has none.", short_name(p->bias ? p : a),
                          short_name(p->bias ? a : p));
    }
    return QS_FUSE_YES;
}

/* Static input scales (FP8 per-tensor, NVFP4 input global scale): one GEMM quantizes its input once. */
static qs_fuse_verdict check_input_scales(const qs_linear_desc *const *parts, int n, char *why, size_t cap)
{
    const qs_linear_desc *a = parts[0];
    if (a->aquant != QS_AQUANT_STATIC_TENSOR && a->aquant != QS_AQUANT_NVFP4)
        return QS_FUSE_YES;
    for (int i = 0; i < n; i++)
        if (!(parts[i]->input_scale > 0.0f))
            return QS_FUSE_IF_SCALES_AGREE; /* headers only: the value was not read */
    for (int i = 1; i < n; i++)
        if (parts[i]->input_scale != a->input_scale)
            return refuse(why, cap, "the static input scales differ (%g for %s, %g for %s); one GEMM quantizes its "
                          "input with one scale.", (double)a->input_scale, short_name(a),
                          (double)parts[i]->input_scale, short_name(parts[i]));
    return QS_FUSE_YES;
}

/* The fused weight-scale layout; fills f->desc.wscale / block sizes and f->tensor_scales_to_channel. */
static qs_fuse_verdict plan_scales(const qs_linear_desc *const *parts, int n, bool channel_ok, qs_fused_linear *f,
                                   char *why, size_t cap)
{
    const qs_linear_desc *a = parts[0];
    qs_linear_desc *d = &f->desc;
    bool any_tensor = false, any_channel = false;
    for (int i = 0; i < n; i++) {
        qs_weight_scale_layout l = parts[i]->wscale;
        bool fp8_row = l == QS_WSCALE_TENSOR || l == QS_WSCALE_CHANNEL;
        if (l != a->wscale && !(fp8_row && (a->wscale == QS_WSCALE_TENSOR || a->wscale == QS_WSCALE_CHANNEL)))
            return refuse(why, cap, "%s has %s weight scales and %s %s.", short_name(a),
                          qs_weight_scale_layout_name(a->wscale), short_name(parts[i]),
                          qs_weight_scale_layout_name(l));
        if (l != QS_WSCALE_NONE && !parts[i]->weight_scale)
            return refuse(why, cap, "%s has no weight scale tensor.", short_name(parts[i]));
        any_tensor |= l == QS_WSCALE_TENSOR;
        any_channel |= l == QS_WSCALE_CHANNEL;
    }
    d->wscale = a->wscale;
    switch (a->wscale) {
    case QS_WSCALE_NONE:
        return QS_FUSE_YES;
    case QS_WSCALE_NVFP4:
        for (int i = 0; i < n; i++)
            if (!(parts[i]->weight_global_scale > 0.0f))
                return QS_FUSE_IF_SCALES_AGREE;
        for (int i = 1; i < n; i++)
            if (parts[i]->weight_global_scale != a->weight_global_scale)
                return refuse(why, cap, "the NVFP4 global weight scales differ (%g for %s, %g for %s); one GEMM "
                              "applies one global scale.", (double)a->weight_global_scale, short_name(a),
                              (double)parts[i]->weight_global_scale, short_name(parts[i]));
        return QS_FUSE_YES;
    case QS_WSCALE_BLOCK:
        for (int i = 0; i < n; i++) {
            const qs_linear_desc *p = parts[i];
            if (p->block_n != a->block_n || p->block_k != a->block_k)
                return refuse(why, cap, "%s has %dx%d scale blocks and %s %dx%d.", short_name(a), a->block_n,
                              a->block_k, short_name(p), p->block_n, p->block_k);
            if (a->block_n <= 0 || p->n % a->block_n != 0)
                return refuse(why, cap, "%s has %lld rows, not a multiple of the %d-row scale block, so a block "
                              "would straddle two projections.", short_name(p), (long long)p->n, a->block_n);
        }
        d->block_n = a->block_n;
        d->block_k = a->block_k;
        return QS_FUSE_YES;
    default:
        break;
    }
    /* FP8 per-tensor / per-channel. */
    if (any_channel) {
        d->wscale = QS_WSCALE_CHANNEL;
        f->tensor_scales_to_channel = any_tensor;
        if (any_tensor && !channel_ok)
            return refuse(why, cap, "%s has per-channel and another part per-tensor weight scales, and not every "
                          "kernel for %s takes per-channel scales.", short_name(a), qs_scheme_name(a->scheme));
        return QS_FUSE_YES;
    }
    bool known = true, equal = true;
    float s0 = 0.0f;
    for (int i = 0; i < n && known; i++) {
        const qs_tensor *s = parts[i]->weight_scale;
        if (!s->data || s->numel < 1) {
            known = false;
            break;
        }
        float v = qs_scale_get(s, 0);
        if (i == 0)
            s0 = v;
        else if (v != s0)
            equal = false;
    }
    if (!known) /* headers only: per-tensor if they agree, per-channel otherwise when allowed */
        return channel_ok ? QS_FUSE_YES : QS_FUSE_IF_SCALES_AGREE;
    if (equal)
        return QS_FUSE_YES;
    if (!channel_ok)
        return refuse(why, cap, "the per-tensor weight scales differ and not every kernel for %s takes the "
                      "per-channel scales they would become.", qs_scheme_name(a->scheme));
    d->wscale = QS_WSCALE_CHANNEL;
    f->tensor_scales_to_channel = true;
    return QS_FUSE_YES;
}

static qs_fuse_verdict worse(qs_fuse_verdict a, qs_fuse_verdict b)
{
    if (a == QS_FUSE_NO || b == QS_FUSE_NO)
        return QS_FUSE_NO;
    return a == QS_FUSE_IF_SCALES_AGREE || b == QS_FUSE_IF_SCALES_AGREE ? QS_FUSE_IF_SCALES_AGREE : QS_FUSE_YES;
}

qs_fuse_verdict qs_linear_fuse_plan(const qs_linear_desc *const *parts, int n, const char *name,
                                    bool channel_scales_ok, qs_fused_linear *f, char *why, size_t cap)
{
    memset(f, 0, sizeof *f);
    if (why && cap)
        why[0] = '\0';
    if (n < 2 || n > QS_FUSE_MAX_PARTS)
        return refuse(why, cap, "fusing takes 2 to %d layers, not %d.", QS_FUSE_MAX_PARTS, n);
    if (strlen(name) >= sizeof f->desc.name)
        return refuse(why, cap, "the fused name %s is too long.", name);
    qs_fuse_verdict v = check_common(parts, n, why, cap);
    if (v == QS_FUSE_NO)
        return v;
    v = worse(v, check_input_scales(parts, n, why, cap));
    if (v == QS_FUSE_NO)
        return v;
    v = worse(v, plan_scales(parts, n, channel_scales_ok, f, why, cap));
    if (v == QS_FUSE_NO)
        return v;

    const qs_linear_desc *a = parts[0];
    qs_linear_desc *d = &f->desc;
    snprintf(d->name, sizeof d->name, "%s", name);
    d->scheme = a->scheme;
    d->k = a->k;
    d->aquant = a->aquant;
    d->act_group_size = a->act_group_size;
    d->weight_global_scale = a->weight_global_scale;
    d->input_scale = a->input_scale;
    f->n_parts = n;
    int64_t rows = 0, scale_rows = 0;
    for (int i = 0; i < n; i++) {
        f->part_rows[i] = parts[i]->n;
        rows += parts[i]->n;
        if (d->wscale == QS_WSCALE_BLOCK)
            scale_rows += parts[i]->n / d->block_n;
    }
    d->n = rows;
    snprintf(f->weight_name, sizeof f->weight_name, "%s.weight (fused)", name);
    set_header(&f->weight, f->weight_name, a->weight->dtype, 2, rows, a->weight->shape[1]);
    d->weight = &f->weight;
    snprintf(f->scale_name, sizeof f->scale_name, "%s.weight_scale (fused)", name);
    switch (d->wscale) {
    case QS_WSCALE_NONE:
        break;
    case QS_WSCALE_TENSOR:
        d->weight_scale = a->weight_scale; /* the scales agree: part 0's scalar serves every row */
        break;
    case QS_WSCALE_CHANNEL:
        set_header(&f->scale, f->scale_name, QS_DT_F32, 1, rows, 0);
        d->weight_scale = &f->scale;
        break;
    case QS_WSCALE_BLOCK:
        set_header(&f->scale, f->scale_name, QS_DT_F32, 2, scale_rows, cdiv(a->k, d->block_k));
        d->weight_scale = &f->scale;
        break;
    case QS_WSCALE_NVFP4:
        set_header(&f->scale, f->scale_name, a->weight_scale->dtype, 2, rows, a->k / 16);
        d->weight_scale = &f->scale;
        break;
    }
    if (a->bias) {
        snprintf(f->bias_name, sizeof f->bias_name, "%s.bias (fused)", name);
        set_header(&f->bias, f->bias_name, QS_DT_F32, 1, rows, 0);
        d->bias = &f->bias;
    }
    return v;
}

static int need_data(const qs_tensor *t, const char *layer, qs_err *err)
{
    if (!t->data)
        return qs_errf(err, "fusing %s: tensor %s has no data (checkpoint opened headers-only?)", layer, t->name);
    return 0;
}

/* Bytes of a part's weight: numel at the dtype's width (checked against the tensor's size). */
static int part_weight_bytes(const qs_linear_desc *p, const char *layer, size_t *out, qs_err *err)
{
    size_t want = (size_t)(p->weight->numel * qs_dtype_bits(p->weight->dtype) / 8);
    if (p->weight->nbytes < want)
        return qs_errf(err, "fusing %s: tensor %s holds %zu bytes, its shape needs %zu", layer, p->weight->name,
                       p->weight->nbytes, want);
    *out = want;
    return 0;
}

static int fill_scales(const qs_linear_desc *const *parts, int n, qs_fused_linear *f, qs_err *err)
{
    qs_linear_desc *d = &f->desc;
    if (d->wscale == QS_WSCALE_NONE || d->wscale == QS_WSCALE_TENSOR)
        return 0;
    f->scale_data = malloc(f->scale.nbytes ? f->scale.nbytes : 1);
    if (!f->scale_data)
        return qs_errf(err, "fusing %s: out of memory for %zu bytes of scales", d->name, f->scale.nbytes);
    if (d->wscale == QS_WSCALE_NVFP4) {
        uint8_t *dst = f->scale_data;
        for (int i = 0; i < n; i++) {
            const qs_tensor *s = parts[i]->weight_scale;
            size_t bytes = (size_t)(parts[i]->n * (d->k / 16));
            if (s->nbytes < bytes)
                return qs_errf(err, "fusing %s: tensor %s holds %zu bytes, %zu needed", d->name, s->name, s->nbytes,
                               bytes);
            memcpy(dst, s->data, bytes);
            dst += bytes;
        }
    } else {
        float *dst = f->scale_data;
        for (int i = 0; i < n; i++) {
            const qs_tensor *s = parts[i]->weight_scale;
            int64_t count = d->wscale == QS_WSCALE_BLOCK ? (parts[i]->n / d->block_n) * cdiv(d->k, d->block_k)
                                                         : parts[i]->n;
            bool scalar = parts[i]->wscale == QS_WSCALE_TENSOR;
            if (s->numel < (scalar ? 1 : count))
                return qs_errf(err, "fusing %s: tensor %s holds %lld scales, %lld needed", d->name, s->name,
                               (long long)s->numel, (long long)(scalar ? 1 : count));
            for (int64_t j = 0; j < count; j++)
                *dst++ = qs_scale_get(s, scalar ? 0 : j);
        }
    }
    f->scale.data = f->scale_data;
    return 0;
}

int qs_linear_fuse_materialize(const qs_linear_desc *const *parts, int n, qs_fused_linear *f, qs_err *err)
{
    qs_linear_desc *d = &f->desc;
    if (n != f->n_parts)
        return qs_errf(err, "fusing %s: planned for %d parts, given %d", d->name, f->n_parts, n);
    for (int i = 0; i < n; i++) {
        const qs_linear_desc *p = parts[i];
        if (p->n != f->part_rows[i])
            return qs_errf(err, "fusing %s: part %s has %lld rows, planned %lld", d->name, p->name, (long long)p->n,
                           (long long)f->part_rows[i]);
        bool scaled = d->wscale != QS_WSCALE_NONE;
        if (need_data(p->weight, d->name, err) || (scaled && need_data(p->weight_scale, d->name, err)) ||
            (d->bias && need_data(p->bias, d->name, err)))
            return -1;
    }
    f->weight_data = malloc(f->weight.nbytes ? f->weight.nbytes : 1);
    if (!f->weight_data)
        return qs_errf(err, "fusing %s: out of memory for %zu bytes of weights", d->name, f->weight.nbytes);
    uint8_t *dst = f->weight_data;
    for (int i = 0; i < n; i++) {
        size_t bytes = 0;
        if (part_weight_bytes(parts[i], d->name, &bytes, err)) {
            qs_fused_linear_drop_data(f);
            return -1;
        }
        memcpy(dst, parts[i]->weight->data, bytes);
        dst += bytes;
    }
    f->weight.data = f->weight_data;
    if (fill_scales(parts, n, f, err)) {
        qs_fused_linear_drop_data(f);
        return -1;
    }
    if (d->bias) {
        float *b = malloc(sizeof(float) * (size_t)d->n);
        if (!b) {
            qs_fused_linear_drop_data(f);
            return qs_errf(err, "fusing %s: out of memory for the bias", d->name);
        }
        int64_t r = 0;
        for (int i = 0; i < n; i++)
            for (int64_t j = 0; j < parts[i]->n; j++)
                b[r++] = qs_tensor_get_f32(parts[i]->bias, j);
        f->bias_data = b;
        f->bias.data = b;
    }
    return 0;
}

void qs_fused_linear_drop_data(qs_fused_linear *f)
{
    if (!f)
        return;
    free(f->weight_data);
    free(f->scale_data);
    free(f->bias_data);
    f->weight_data = f->scale_data = f->bias_data = NULL;
    f->weight.data = f->scale.data = f->bias.data = NULL;
}
