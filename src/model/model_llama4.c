/* model_llama4.c — the Llama 4 parts of the model loader: a dense layer's feed_forward
 * (intermediate_size_mlp wide), and a MoE layer's feed_forward.router, its always-on
 * feed_forward.shared_expert and its experts. Experts come in two layouts (docs/formats.md):
 * per expert, feed_forward.experts.E.{gate,up,down}_proj as [out, in] Linear weights (the ModelOpt
 * and compressed-tensors releases, and what `qserve quantize` writes), or Hugging Face's fused 3-D
 * tensors feed_forward.experts.gate_up_proj [E, hidden, 2 x inter] (gate columns, then up) and
 * feed_forward.experts.down_proj [E, inter, hidden], transposed against Linear. The fused ones are
 * split and transposed here into per-expert [out, in] tensors the model owns, so every expert
 * kernel reads one layout. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/model_internal.h"
#include "model/model_weights.h"
#include "util/log.h"

static int desc(qs_model *m, const char *module, int64_t n, int64_t k, qs_linear_desc *d, qs_err *err)
{
    return qs_weights_linear_desc(m->ck, m->has_qc ? &m->qc : NULL, module, n, k, false, d, err);
}

int qs_llama4_load_mlp(qs_model *m, int i, qs_layer *L, qs_err *err)
{
    const qs_model_config *c = &m->mc;
    char name[200];
    int64_t H = c->hidden_size, I = c->intermediate_size;
    const char *P = c->tensor_prefix;
    snprintf(name, sizeof name, "%smodel.layers.%d.feed_forward.gate_proj", P, i);
    if (desc(m, name, I, H, &L->gate.desc, err))
        return -1;
    snprintf(name, sizeof name, "%smodel.layers.%d.feed_forward.up_proj", P, i);
    if (desc(m, name, I, H, &L->up.desc, err))
        return -1;
    snprintf(name, sizeof name, "%smodel.layers.%d.feed_forward.down_proj", P, i);
    return desc(m, name, H, I, &L->down.desc, err);
}

static bool float_dtype(qs_dtype d) { return d == QS_DT_F32 || d == QS_DT_F16 || d == QS_DT_BF16; }

/* The fused 3-D experts of layer i split into moe->gate/up/down (already allocated). */
static int split_fused(qs_model *m, int i, qs_moe_layer *moe, const qs_tensor *gu, const qs_tensor *dn, qs_err *err)
{
    const qs_model_config *c = &m->mc;
    int E = c->num_experts;
    int64_t H = c->hidden_size, I = c->moe_intermediate_size;
    if (!dn)
        return qs_errf(err, "layer %d: %s is present but feed_forward.experts.down_proj is missing", i, gu->name);
    if (gu->ndim != 3 || gu->shape[0] != E || gu->shape[1] != H || gu->shape[2] != 2 * I)
        return qs_errf(err, "tensor %s must be [%d, %lld, %lld] (experts, hidden, 2 x intermediate_size)", gu->name, E,
                       (long long)H, (long long)(2 * I));
    if (dn->ndim != 3 || dn->shape[0] != E || dn->shape[1] != I || dn->shape[2] != H)
        return qs_errf(err, "tensor %s must be [%d, %lld, %lld] (experts, intermediate_size, hidden)", dn->name, E,
                       (long long)I, (long long)H);
    if (!float_dtype(gu->dtype) || dn->dtype != gu->dtype)
        return qs_errf(err, "tensors %s (%s) and %s (%s): fused 3-D experts must be one float dtype (quantized "
                            "releases store experts per expert)", gu->name, qs_dtype_name(gu->dtype), dn->name,
                       qs_dtype_name(dn->dtype));
    size_t es = (size_t)qs_dtype_bits(gu->dtype) / 8, per = (size_t)(H * I) * es;
    moe->split = calloc((size_t)3 * E, sizeof(qs_tensor));
    moe->split_data = malloc(per * 3 * (size_t)E);
    moe->split_names = calloc((size_t)3 * E, 200);
    if (!moe->split || !moe->split_data || !moe->split_names)
        return qs_errf(err, "layer %d: out of memory splitting the fused experts", i);
    const char *src_gu = gu->data, *src_dn = dn->data;
    const char *kind[3] = {"gate_proj", "up_proj", "down_proj"};
    for (int e = 0; e < E; e++)
        for (int j = 0; j < 3; j++) {
            qs_tensor *t = &moe->split[3 * e + j];
            char *nm = moe->split_names + (size_t)(3 * e + j) * 200;
            char *dst = (char *)moe->split_data + per * (size_t)(3 * e + j);
            snprintf(nm, 200, "%smodel.layers.%d.feed_forward.experts.%d.%s.weight (split from %s)",
                     c->tensor_prefix, i, e, kind[j], j < 2 ? gu->name : dn->name);
            int64_t rows = j < 2 ? I : H, cols = j < 2 ? H : I;
            for (int64_t r = 0; r < rows; r++)
                for (int64_t k = 0; k < cols; k++) {
                    /* gate/up: W[r][k] = gate_up[e][k][r (+ I)]; down: W[r][k] = down[e][k][r] */
                    const char *s = j < 2 ? src_gu + (((size_t)e * H + k) * 2 * I + (size_t)(j * I + r)) * es
                                          : src_dn + (((size_t)e * I + k) * H + (size_t)r) * es;
                    memcpy(dst + ((size_t)r * cols + k) * es, s, es);
                }
            *t = (qs_tensor){.name = nm, .dtype = gu->dtype, .ndim = 2, .shape = {rows, cols}, .numel = rows * cols,
                             .data = dst, .nbytes = per, .file = gu->file};
            qs_linear_desc *d = j == 0 ? &moe->gate[e] : j == 1 ? &moe->up[e] : &moe->down[e];
            memset(d, 0, sizeof *d);
            snprintf(d->name, sizeof d->name, "%smodel.layers.%d.feed_forward.experts.%d.%s", c->tensor_prefix, i, e,
                     kind[j]);
            d->scheme = QS_SCHEME_BF16;
            d->n = rows;
            d->k = cols;
            d->weight = t;
            d->weight_global_scale = 1.0f;
        }
    return 0;
}

int qs_llama4_load_moe(qs_model *m, int i, qs_layer *L, qs_err *err)
{
    const qs_model_config *c = &m->mc;
    qs_moe_layer *moe = &L->moe;
    const char *P = c->tensor_prefix;
    int E = c->num_experts;
    int64_t H = c->hidden_size, I = c->moe_intermediate_size;
    char name[200];
    snprintf(name, sizeof name, "%smodel.layers.%d.feed_forward.router", P, i);
    if (desc(m, name, E, H, &moe->router.desc, err))
        return -1;
    const char *sh[3] = {"gate_proj", "up_proj", "down_proj"};
    qs_linear *shl[3] = {&L->sh_gate, &L->sh_up, &L->sh_down};
    for (int j = 0; j < 3; j++) {
        snprintf(name, sizeof name, "%smodel.layers.%d.feed_forward.shared_expert.%s", P, i, sh[j]);
        if (desc(m, name, j < 2 ? I : H, j < 2 ? H : I, &shl[j]->desc, err))
            return -1;
    }
    L->has_shared = true;
    moe->gate = calloc((size_t)E, sizeof(qs_linear_desc));
    moe->up = calloc((size_t)E, sizeof(qs_linear_desc));
    moe->down = calloc((size_t)E, sizeof(qs_linear_desc));
    if (!moe->gate || !moe->up || !moe->down)
        return qs_errf(err, "out of memory for %d experts of layer %d", E, i);
    snprintf(name, sizeof name, "%smodel.layers.%d.feed_forward.experts.gate_up_proj", P, i);
    const qs_tensor *gu = qs_checkpoint_find(m->ck, name);
    if (gu) {
        snprintf(name, sizeof name, "%smodel.layers.%d.feed_forward.experts.down_proj", P, i);
        if (split_fused(m, i, moe, gu, qs_checkpoint_find(m->ck, name), err))
            return -1;
    } else {
        for (int e = 0; e < E; e++)
            for (int j = 0; j < 3; j++) {
                qs_linear_desc *d = j == 0 ? &moe->gate[e] : j == 1 ? &moe->up[e] : &moe->down[e];
                snprintf(name, sizeof name, "%smodel.layers.%d.feed_forward.experts.%d.%s", P, i, e, sh[j]);
                if (desc(m, name, j < 2 ? I : H, j < 2 ? H : I, d, err))
                    return -1;
                if (d->scheme != moe->gate[0].scheme)
                    return qs_errf(err, "layer %d: experts mix quantization schemes (%s differs from expert 0)", i,
                                   d->name);
            }
    }
    qs_moe_desc *d = &moe->desc;
    snprintf(d->name, sizeof d->name, "%smodel.layers.%d.feed_forward.experts", P, i);
    d->scheme = moe->gate[0].scheme;
    d->num_experts = E;
    d->top_k = 1;
    d->hidden = H;
    d->inter = I;
    d->gate = moe->gate;
    d->up = moe->up;
    d->down = moe->down;
    return 0;
}

int qs_llama4_check_device(const qs_model *m, qs_err *err)
{
    const qs_ops *o = m->ops;
    const char *missing = !o->rope_interleaved ? "rope_interleaved" : !o->attn_temperature ? "attn_temperature"
                          : !o->moe_route_scale_input                 ? "moe_route_scale_input"
                          : !o->add                                  ? "add"
                                                                     : NULL;
    if (missing)
        return qs_errf(err, "%s: Llama 4 needs the op %s, which the %s device does not have (run with --device cpu)",
                       m->mc.arch_name, missing, o->name);
    size_t vision = 0;
    for (size_t t = 0; t < qs_checkpoint_count(m->ck); t++) {
        const char *n = qs_checkpoint_tensor(m->ck, t)->name;
        vision += !strncmp(n, "vision_model.", 13) || !strncmp(n, "multi_modal_projector.", 22);
    }
    if (vision)
        qs_info("%s: %zu vision tensors (vision_model., multi_modal_projector.) skipped: qserve serves the text "
                "model", m->mc.arch_name, vision);
    return 0;
}

void qs_llama4_free_split(qs_moe_layer *moe)
{
    free(moe->split);
    free(moe->split_data);
    free(moe->split_names);
    moe->split = NULL;
    moe->split_data = NULL;
    moe->split_names = NULL;
}
