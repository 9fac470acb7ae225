/* linear_desc.c — per-layer scheme detection and scale validation (see linear_desc.h).
 * Conventions of the result: weight scales multiply (fp8's weight_scale_inv too, despite its name);
 * compressed-tensors NVFP4 global scales are divisors on disk and are inverted here, so
 * weight_global_scale and input_scale always multiply. */
#include "quant/linear_desc.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fp8.h"
#include "util/log.h"

static const qs_tensor *find(const qs_checkpoint *ck, const char *prefix, const char *suffix)
{
    char name[512];
    snprintf(name, sizeof name, "%s.%s", prefix, suffix);
    return qs_checkpoint_find(ck, name);
}

static bool is_float_dtype(qs_dtype dt)
{
    return dt == QS_DT_F32 || dt == QS_DT_F16 || dt == QS_DT_BF16 || dt == QS_DT_F64;
}

static void shape_str(const qs_tensor *t, char *buf, size_t cap)
{
    size_t n = (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < t->ndim && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%lld", i ? ", " : "", (long long)t->shape[i]);
    if (n < cap)
        snprintf(buf + n, cap - n, "]");
}

/* Reads a scalar scale tensor ([] or [1]); 0 when data is not loaded. */
static int read_scalar(const qs_tensor *t, bool invert, float *out, qs_err *err)
{
    char sh[64];
    shape_str(t, sh, sizeof sh);
    if (t->numel != 1)
        return qs_errf(err, "tensor %s: expected a scalar scale of shape [] or [1], found %s", t->name, sh);
    if (!is_float_dtype(t->dtype))
        return qs_errf(err, "tensor %s: scale dtype %s is not supported (expected F32, BF16 or F16)", t->name,
                       qs_dtype_name(t->dtype));
    if (!t->data) {
        *out = 0.0f;
        return 0;
    }
    float v = qs_scale_get(t, 0);
    if (!(v > 0.0f) || !isfinite(v))
        return qs_errf(err, "tensor %s: scale %g is not a positive finite number", t->name, (double)v);
    *out = invert ? 1.0f / v : v;
    return 0;
}

static bool is_scalar_shape(const qs_tensor *t) { return t->numel == 1; }

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* FP8 weight: weight-scale layout, activation quantization, scheme. */
static int build_fp8(const qs_checkpoint *ck, const qs_layer_quant *lq, const char *prefix, const qs_tensor *w,
                     qs_linear_desc *d, qs_err *err)
{
    const qs_tensor *s = find(ck, prefix, "weight_scale_inv");
    if (!s)
        s = find(ck, prefix, "weight_scale");
    if (!s)
        return qs_errf(err, "tensor %s.weight_scale missing: the F8_E4M3 weight %s needs a scale ([1] per-tensor, "
                       "[%lld, 1] per-channel or [%lld, %lld] for 128x128 blocks; fp8 checkpoints name it "
                       "weight_scale_inv)", prefix, w->name, (long long)d->n, (long long)cdiv(d->n, 128),
                       (long long)cdiv(d->k, 128));
    if (!is_float_dtype(s->dtype) && s->dtype != QS_DT_F8_E8M0)
        return qs_errf(err, "tensor %s: scale dtype %s is not supported (expected F32, BF16, F16 or F8_E8M0)", s->name,
                       qs_dtype_name(s->dtype));
    d->weight_scale = s;
    char sh[64];
    shape_str(s, sh, sizeof sh);
    bool cfg = lq->format == QS_LQ_FP8;
    qs_quant_strategy st;
    if (cfg) {
        st = lq->weights.strategy;
    } else if (is_scalar_shape(s)) {
        st = QS_QSTRAT_TENSOR;
    } else if ((s->ndim == 1 && s->shape[0] == d->n) || (s->ndim == 2 && s->shape[0] == d->n && s->shape[1] == 1)) {
        st = QS_QSTRAT_CHANNEL;
    } else {
        st = QS_QSTRAT_BLOCK;
    }
    switch (st) {
    case QS_QSTRAT_TENSOR:
        if (!is_scalar_shape(s))
            return qs_errf(err, "tensor %s: per-tensor scale (%s) must have shape [] or [1], found %s", s->name,
                           cfg ? lq->source : "inferred", sh);
        d->wscale = QS_WSCALE_TENSOR;
        break;
    case QS_QSTRAT_CHANNEL:
        if (!((s->ndim == 1 && s->shape[0] == d->n) || (s->ndim == 2 && s->shape[0] == d->n && s->shape[1] == 1)))
            return qs_errf(err, "tensor %s: per-channel scale (%s) must have shape [%lld, 1] or [%lld], found %s",
                           s->name, cfg ? lq->source : "inferred", (long long)d->n, (long long)d->n, sh);
        d->wscale = QS_WSCALE_CHANNEL;
        break;
    case QS_QSTRAT_BLOCK: {
        int bn = cfg ? lq->weights.block_n : 128, bk = cfg ? lq->weights.block_k : 128;
        int64_t rn = cdiv(d->n, bn), rk = cdiv(d->k, bk);
        bool ok2 = s->ndim == 2 && s->shape[0] == rn && s->shape[1] == rk;
        bool ok4 = s->ndim == 4 && s->shape[0] == rn && s->shape[1] == 1 && s->shape[2] == rk && s->shape[3] == 1;
        if (!ok2 && !ok4)
            return qs_errf(err, "tensor %s: %dx%d block scale (%s) for weight [%lld, %lld] must have shape [%lld, %lld], "
                           "found %s", s->name, bn, bk, cfg ? lq->source : "inferred", (long long)d->n,
                           (long long)d->k, (long long)rn, (long long)rk, sh);
        d->wscale = QS_WSCALE_BLOCK;
        d->block_n = bn;
        d->block_k = bk;
        break;
    }
    default:
        return qs_errf(err, "%s: weight strategy %s is not supported for FP8 weights", prefix,
                       qs_quant_strategy_name(st));
    }
    /* Activations. */
    const qs_tensor *in = find(ck, prefix, "input_scale");
    if (cfg) {
        const qs_quant_args *a = &lq->input;
        if (!a->present) {
            d->aquant = QS_AQUANT_NONE;
        } else if (a->strategy == QS_QSTRAT_TENSOR && !a->dynamic) {
            if (!in)
                return qs_errf(err, "tensor %s.input_scale missing: %s quantizes activations statically and needs a "
                               "per-tensor input_scale of shape [] or [1]", prefix, lq->source);
            d->aquant = QS_AQUANT_STATIC_TENSOR;
        } else if (a->strategy == QS_QSTRAT_TENSOR) {
            d->aquant = QS_AQUANT_DYNAMIC_TENSOR;
        } else if (a->strategy == QS_QSTRAT_TOKEN) {
            d->aquant = QS_AQUANT_DYNAMIC_TOKEN;
        } else {
            d->aquant = QS_AQUANT_DYNAMIC_GROUP;
            d->act_group_size = a->group_size;
        }
    } else if (in) {
        d->aquant = QS_AQUANT_STATIC_TENSOR;
    } else if (d->wscale == QS_WSCALE_BLOCK) {
        d->aquant = QS_AQUANT_DYNAMIC_GROUP;
        d->act_group_size = d->block_k;
    } else {
        d->aquant = QS_AQUANT_DYNAMIC_TOKEN;
    }
    if (d->aquant == QS_AQUANT_STATIC_TENSOR && read_scalar(in, false, &d->input_scale, err))
        return -1;
    if (d->aquant == QS_AQUANT_NONE)
        d->scheme = QS_SCHEME_W8A16_FP8;
    else
        d->scheme = d->wscale == QS_WSCALE_BLOCK ? QS_SCHEME_FP8_BLOCK_W8A8 : QS_SCHEME_FP8_W8A8;
    return 0;
}

/* NVFP4 weight (ModelOpt "weight" or compressed-tensors "weight_packed"). */
static int build_nvfp4(const qs_checkpoint *ck, const qs_layer_quant *lq, const char *prefix, const qs_tensor *w,
                       qs_linear_desc *d, qs_err *err)
{
    char sh[64];
    if (w->ndim != 2)
        return qs_errf(err, "tensor %s: packed NVFP4 weight must be 2-D [out, in/2]", w->name);
    d->n = w->shape[0];
    d->k = w->shape[1] * 2;
    const qs_tensor *s = find(ck, prefix, "weight_scale");
    if (!s || s->dtype != QS_DT_F8_E4M3)
        return qs_errf(err, "tensor %s.weight_scale %s: the U8 weight %s is read as NVFP4 and needs an F8_E4M3 block "
                       "scale of shape [%lld, %lld] (MX formats with E8M0 scales are not supported)", prefix,
                       s ? "has the wrong dtype" : "is missing", w->name, (long long)d->n, (long long)(d->k / 16));
    if (d->k % 16)
        return qs_errf(err, "tensor %s: NVFP4 needs in_features (%lld) to be a multiple of 16", w->name, (long long)d->k);
    shape_str(s, sh, sizeof sh);
    if (s->ndim != 2 || s->shape[0] != d->n || s->shape[1] != d->k / 16)
        return qs_errf(err, "tensor %s: NVFP4 block scale must have shape [%lld, %lld] (one E4M3 per 16 inputs), found %s",
                       s->name, (long long)d->n, (long long)(d->k / 16), sh);
    d->weight_scale = s;
    d->wscale = QS_WSCALE_NVFP4;
    const qs_tensor *g2 = find(ck, prefix, "weight_scale_2");
    const qs_tensor *gct = find(ck, prefix, "weight_global_scale");
    if (g2) {
        if (read_scalar(g2, false, &d->weight_global_scale, err))
            return -1;
    } else if (gct) {
        if (read_scalar(gct, true, &d->weight_global_scale, err))
            return -1;
    } else {
        return qs_errf(err, "tensor %s.weight_scale_2 (ModelOpt) or %s.weight_global_scale (compressed-tensors) "
                       "missing: NVFP4 weights need an FP32 global scale of shape [] or [1]", prefix, prefix);
    }
    const qs_tensor *in = find(ck, prefix, "input_scale");
    bool in_invert = false;
    if (!in) {
        in = find(ck, prefix, "input_global_scale");
        in_invert = in != NULL;
    }
    bool want_act = lq->format == QS_LQ_NVFP4 ? lq->input.present : in != NULL;
    if (want_act && !in) {
        if (lq->format == QS_LQ_NVFP4 && !strncmp(lq->source, "quant_algo", 10)) {
            qs_debug("%s: no input_scale, running the NVFP4 layer weight-only (W4A16)", prefix);
            want_act = false;
        } else {
            return qs_errf(err, "tensor %s.input_global_scale missing: %s quantizes activations to NVFP4 and needs "
                           "the input global scale of shape [1]", prefix, lq->source);
        }
    }
    if (want_act) {
        if (read_scalar(in, in_invert, &d->input_scale, err))
            return -1;
        d->aquant = QS_AQUANT_NVFP4;
        d->scheme = QS_SCHEME_NVFP4_W4A4;
    } else {
        d->aquant = QS_AQUANT_NONE;
        d->scheme = QS_SCHEME_NVFP4_W4A16;
    }
    return 0;
}

int qs_linear_desc_build(const qs_checkpoint *ck, const qs_quant_config *qc, const char *prefix, qs_linear_desc *out,
                         qs_err *err)
{
    memset(out, 0, sizeof *out);
    if (strlen(prefix) >= sizeof out->name)
        return qs_errf(err, "layer name %s is too long (%zu characters, at most %zu)", prefix, strlen(prefix),
                       sizeof out->name - 1);
    snprintf(out->name, sizeof out->name, "%s", prefix);
    out->weight_global_scale = 1.0f;
    qs_layer_quant lq;
    if (qc)
        qs_quant_config_layer(qc, prefix, &lq);
    else
        memset(&lq, 0, sizeof lq);
    const qs_tensor *w = find(ck, prefix, "weight");
    if (!w)
        w = find(ck, prefix, "weight_packed");
    if (!w)
        return qs_errf(err, "tensor %s.weight (or %s.weight_packed) not found in the checkpoint", prefix, prefix);
    out->weight = w;
    int rc;
    if (w->dtype == QS_DT_U8) {
        rc = build_nvfp4(ck, &lq, prefix, w, out, err);
    } else {
        if (w->ndim != 2)
            return qs_errf(err, "tensor %s: a linear weight must be 2-D [out, in], found %d dimensions", w->name,
                           w->ndim);
        out->n = w->shape[0];
        out->k = w->shape[1];
        if (w->dtype == QS_DT_F8_E4M3) {
            rc = build_fp8(ck, &lq, prefix, w, out, err);
        } else if (w->dtype == QS_DT_F32 || w->dtype == QS_DT_F16 || w->dtype == QS_DT_BF16) {
            out->scheme = QS_SCHEME_BF16;
            rc = 0;
        } else {
            return qs_errf(err, "tensor %s: weight dtype %s is not supported (supported: F32, F16, BF16, F8_E4M3, U8 "
                           "packed NVFP4)", w->name, qs_dtype_name(w->dtype));
        }
    }
    if (rc)
        return -1;
    if (out->n <= 0 || out->k <= 0)
        return qs_errf(err, "tensor %s: empty weight [%lld, %lld]", w->name, (long long)out->n, (long long)out->k);
    const qs_tensor *b = find(ck, prefix, "bias");
    if (b) {
        if (!is_float_dtype(b->dtype) || b->numel != out->n || b->ndim != 1)
            return qs_errf(err, "tensor %s: bias must be a float vector of shape [%lld]", b->name, (long long)out->n);
        out->bias = b;
    }
    return 0;
}

void qs_linear_desc_describe(const qs_linear_desc *d, char *buf, size_t cap)
{
    char wl[64] = "";
    if (d->wscale == QS_WSCALE_BLOCK)
        snprintf(wl, sizeof wl, " %dx%d", d->block_n, d->block_k);
    snprintf(buf, cap, "%s [%lldx%lld] weights %s%s%s, activations %s", qs_scheme_name(d->scheme), (long long)d->n,
             (long long)d->k, d->weight ? qs_dtype_name(d->weight->dtype) : "?",
             d->wscale == QS_WSCALE_NONE ? "" : " ", d->wscale == QS_WSCALE_NONE ? "" : qs_weight_scale_layout_name(d->wscale),
             qs_act_quant_name(d->aquant));
    if (*wl && strlen(buf) + strlen(wl) < cap)
        strcat(buf, wl);
}

int qs_moe_desc_build(const qs_checkpoint *ck, const qs_quant_config *qc, const char *experts_prefix,
                      const char *gate_name, const char *up_name, const char *down_name, int num_experts, int top_k,
                      qs_moe_desc *out, qs_err *err)
{
    memset(out, 0, sizeof *out);
    if (num_experts <= 0 || top_k <= 0 || top_k > num_experts)
        return qs_errf(err, "%s: invalid expert count %d / top-k %d", experts_prefix, num_experts, top_k);
    snprintf(out->name, sizeof out->name, "%s", experts_prefix);
    out->num_experts = num_experts;
    out->top_k = top_k;
    qs_linear_desc *g = calloc((size_t)num_experts, sizeof *g);
    qs_linear_desc *u = calloc((size_t)num_experts, sizeof *u);
    qs_linear_desc *dn = calloc((size_t)num_experts, sizeof *dn);
    out->gate = g;
    out->up = u;
    out->down = dn;
    if (!g || !u || !dn) {
        qs_moe_desc_free(out);
        return qs_errf(err, "%s: out of memory for %d expert descriptions", experts_prefix, num_experts);
    }
    char p[512];
    for (int e = 0; e < num_experts; e++) {
        const char *names[3] = {gate_name, up_name, down_name};
        qs_linear_desc *dst[3] = {&g[e], &u[e], &dn[e]};
        for (int j = 0; j < 3; j++) {
            snprintf(p, sizeof p, "%s.%d.%s", experts_prefix, e, names[j]);
            if (qs_linear_desc_build(ck, qc, p, dst[j], err)) {
                qs_moe_desc_free(out);
                return -1;
            }
        }
        if (e == 0) {
            out->scheme = g[0].scheme;
            out->hidden = g[0].k;
            out->inter = g[0].n;
        }
        for (int j = 0; j < 3; j++)
            if (dst[j]->scheme != out->scheme) {
                qs_errf(err, "%s: scheme %s differs from expert 0's %s (all experts of a layer must share one scheme)",
                        dst[j]->name, qs_scheme_name(dst[j]->scheme), qs_scheme_name(out->scheme));
                qs_moe_desc_free(out);
                return -1;
            }
        if (g[e].n != out->inter || g[e].k != out->hidden || u[e].n != out->inter || u[e].k != out->hidden ||
            dn[e].n != out->hidden || dn[e].k != out->inter) {
            qs_errf(err, "%s.%d: expert shapes gate [%lld, %lld], up [%lld, %lld], down [%lld, %lld] do not match "
                    "hidden %lld / intermediate %lld", experts_prefix, e, (long long)g[e].n, (long long)g[e].k,
                    (long long)u[e].n, (long long)u[e].k, (long long)dn[e].n, (long long)dn[e].k,
                    (long long)out->hidden, (long long)out->inter);
            qs_moe_desc_free(out);
            return -1;
        }
    }
    return 0;
}

void qs_moe_desc_free(qs_moe_desc *d)
{
    if (!d)
        return;
    free((void *)d->gate);
    free((void *)d->up);
    free((void *)d->down);
    d->gate = d->up = d->down = NULL;
}
