/* backends_model.c — reads a model directory for `qserve backends` (see backends_model.h):
 * headers only, so a 200 GB checkpoint is described in milliseconds, and every tensor name and
 * shape is still validated by the safetensors and quant layers before the registry sees it.
 * Projections are fused by the loader's plan; a fusion that rests on scalar scales the headers do
 * not hold (static input scales, NVFP4 global scales) is shown as fused and counted apart. */
#include "cli/backends_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/model_config_load.h"
#include "quant/linear_desc.h"

static int add_linear(qs_backends_model *m, const char *module, qs_err *err)
{
    if (qs_linear_desc_build(m->ck, m->has_qc ? &m->qc : NULL, module, &m->linears[m->n_linears], err))
        return -1;
    m->linear_is_fused[m->n_linears++] = false;
    return 0;
}

/* Adds the projections `names` of layer i's `block` ("self_attn", "mlp"): as one fused layer when
 * the plan allows, else one by one. */
static int add_group(qs_backends_model *m, int i, qs_fusion_kind kind, const char *block, const char *const *names,
                     int n, qs_platform platform, bool no_fuse, qs_err *err)
{
    qs_linear_desc parts[QS_FUSE_MAX_PARTS];
    const qs_linear_desc *ptrs[QS_FUSE_MAX_PARTS];
    char name[200], prefix[64], fused_name[160], why[2 * QS_REASON_MAX] = "";
    for (int j = 0; j < n; j++) {
        snprintf(name, sizeof name, "%smodel.layers.%d.%s.%s", m->mc.tensor_prefix, i, block, names[j]);
        if (qs_linear_desc_build(m->ck, m->has_qc ? &m->qc : NULL, name, &parts[j], err))
            return -1;
        ptrs[j] = &parts[j];
    }
    snprintf(prefix, sizeof prefix, "%smodel.layers.%d", m->mc.tensor_prefix, i);
    qs_projection_fusion_name(prefix, kind, fused_name, sizeof fused_name);
    qs_fused_linear *f = &m->fused[2 * i + kind];
    qs_fuse_verdict v = QS_FUSE_NO;
    if (!no_fuse) {
        v = qs_projection_fusion_plan(ptrs, n, fused_name, platform, f, why, sizeof why);
        qs_fusion_summary_add(&m->fusion, kind, v, f, fused_name, why);
    } else {
        m->fusion.groups[kind]++;
    }
    if (v != QS_FUSE_NO) {
        m->linears[m->n_linears] = f->desc;
        m->linear_is_fused[m->n_linears++] = true;
        return 0;
    }
    for (int j = 0; j < n; j++) {
        m->linears[m->n_linears] = parts[j];
        m->linear_is_fused[m->n_linears++] = false;
    }
    return 0;
}

/* Llama 4's experts of layer i: per expert, or HF's fused 3-D gate_up_proj / down_proj described
 * as the per-expert [out, in] BF16 layers the loader splits them into. */
static int llama4_experts(qs_backends_model *m, int i, const char *prefix, qs_moe_desc *d, qs_err *err)
{
    const qs_model_config *c = &m->mc;
    char name[200];
    snprintf(name, sizeof name, "%s.gate_up_proj", prefix);
    const qs_tensor *gu = qs_checkpoint_find(m->ck, name);
    if (!gu)
        return qs_moe_desc_build(m->ck, m->has_qc ? &m->qc : NULL, prefix, "gate_proj", "up_proj", "down_proj",
                                 c->num_experts, c->num_experts_per_tok, d, err);
    int E = c->num_experts;
    int64_t H = c->hidden_size, I = c->moe_intermediate_size;
    if (gu->ndim != 3 || gu->shape[0] != E || gu->shape[1] != H || gu->shape[2] != 2 * I)
        return qs_errf(err, "tensor %s must be [%d, %lld, %lld]", gu->name, E, (long long)H, (long long)(2 * I));
    qs_tensor *shp = &m->expert_shapes[3 * i];
    for (int j = 0; j < 3; j++)
        shp[j] = (qs_tensor){.name = gu->name, .dtype = gu->dtype, .ndim = 2, .shape = {j < 2 ? I : H, j < 2 ? H : I},
                             .numel = H * I, .file = gu->file};
    memset(d, 0, sizeof *d);
    snprintf(d->name, sizeof d->name, "%s", prefix);
    d->num_experts = E;
    d->top_k = c->num_experts_per_tok;
    d->hidden = H;
    d->inter = I;
    qs_linear_desc *g = calloc((size_t)E, sizeof *g), *u = calloc((size_t)E, sizeof *u),
                   *dn = calloc((size_t)E, sizeof *dn);
    d->gate = g;
    d->up = u;
    d->down = dn;
    if (!g || !u || !dn) {
        qs_moe_desc_free(d);
        return qs_errf(err, "out of memory for %d expert descriptions", E);
    }
    for (int e = 0; e < E; e++) {
        qs_linear_desc *ds[3] = {&g[e], &u[e], &dn[e]};
        for (int j = 0; j < 3; j++) {
            snprintf(ds[j]->name, sizeof ds[j]->name, "%s.%d.%s", prefix, e, j == 0 ? "gate_proj" : j == 1 ? "up_proj"
                                                                                                     : "down_proj");
            ds[j]->scheme = QS_SCHEME_BF16;
            ds[j]->n = shp[j].shape[0];
            ds[j]->k = shp[j].shape[1];
            ds[j]->weight = &shp[j];
            ds[j]->weight_global_scale = 1.0f;
        }
    }
    d->scheme = QS_SCHEME_BF16;
    return 0;
}

/* A Llama 4 layer: attention, then a dense feed_forward (intermediate_size_mlp) or the MoE's
 * router, shared expert and experts. */
static int add_llama4_layer(qs_backends_model *m, int i, qs_platform platform, bool no_fuse, qs_err *err)
{
    static const char *const gate_up[] = {"gate_proj", "up_proj"};
    const char *P = m->mc.tensor_prefix;
    char name[200];
    if (!qs_model_layer_is_moe(&m->mc, i)) {
        if (add_group(m, i, QS_FUSION_GATE_UP, "feed_forward", gate_up, 2, platform, no_fuse, err))
            return -1;
        snprintf(name, sizeof name, "%smodel.layers.%d.feed_forward.down_proj", P, i);
        return add_linear(m, name, err);
    }
    const char *parts[] = {"router", "shared_expert.gate_proj", "shared_expert.up_proj", "shared_expert.down_proj"};
    for (int j = 0; j < 4; j++) {
        snprintf(name, sizeof name, "%smodel.layers.%d.feed_forward.%s", P, i, parts[j]);
        if (add_linear(m, name, err))
            return -1;
    }
    snprintf(name, sizeof name, "%smodel.layers.%d.feed_forward.experts", P, i);
    if (llama4_experts(m, i, name, &m->moes[m->n_moes], err))
        return -1;
    m->n_moes++;
    return 0;
}

static int add_layer(qs_backends_model *m, int i, qs_platform platform, bool no_fuse, qs_err *err)
{
    const qs_model_config *c = &m->mc;
    static const char *const qkv[] = {"q_proj", "k_proj", "v_proj"}, *const gate_up[] = {"gate_proj", "up_proj"};
    char name[200];
    if (add_group(m, i, QS_FUSION_QKV, "self_attn", qkv, 3, platform, no_fuse, err))
        return -1;
    snprintf(name, sizeof name, "%smodel.layers.%d.self_attn.o_proj", c->tensor_prefix, i);
    if (add_linear(m, name, err))
        return -1;
    if (c->llama4)
        return add_llama4_layer(m, i, platform, no_fuse, err);
    if (!qs_model_layer_is_moe(c, i)) {
        if (add_group(m, i, QS_FUSION_GATE_UP, "mlp", gate_up, 2, platform, no_fuse, err))
            return -1;
        snprintf(name, sizeof name, "model.layers.%d.mlp.down_proj", i);
        return add_linear(m, name, err);
    }
    bool mixtral = c->arch == QS_ARCH_MIXTRAL;
    const char *block = mixtral ? "block_sparse_moe" : "mlp";
    snprintf(name, sizeof name, "model.layers.%d.%s.gate", i, block);
    if (add_linear(m, name, err))
        return -1;
    snprintf(name, sizeof name, "model.layers.%d.%s.experts", i, block);
    if (c->num_experts <= 0 || c->num_experts_per_tok <= 0)
        return qs_errf(err, "config.json: layer %d is an MoE layer but num_experts is %d and num_experts_per_tok %d", i,
                       c->num_experts, c->num_experts_per_tok);
    if (qs_moe_desc_build(m->ck, m->has_qc ? &m->qc : NULL, name, mixtral ? "w1" : "gate_proj",
                          mixtral ? "w3" : "up_proj", mixtral ? "w2" : "down_proj", c->num_experts,
                          c->num_experts_per_tok, &m->moes[m->n_moes], err))
        return -1;
    m->n_moes++;
    return 0;
}

int qs_backends_model_open(const char *dir, qs_platform platform, bool no_fuse, qs_backends_model *m, qs_err *err)
{
    memset(m, 0, sizeof *m);
    m->fusion.disabled = no_fuse;
    if (qs_model_config_load(dir, &m->mc, err))
        return -1;
    m->has_mc = true;
    if (qs_quant_config_parse(m->mc.quantization_config_json, dir, &m->qc, err)) {
        qs_backends_model_close(m);
        return -1;
    }
    m->has_qc = true;
    if (qs_checkpoint_open(dir, true, &m->ck, err)) {
        qs_backends_model_close(m);
        return -1;
    }
    int L = m->mc.num_layers;
    if (L <= 0 || L > 100000) {
        qs_backends_model_close(m);
        return qs_errf(err, "%s/config.json: num_hidden_layers %d is out of range", dir, L);
    }
    m->linears = calloc((size_t)L * 10 + 1, sizeof *m->linears);
    m->linear_is_fused = calloc((size_t)L * 10 + 1, sizeof *m->linear_is_fused);
    m->expert_shapes = calloc((size_t)L * 3, sizeof *m->expert_shapes);
    m->fused = calloc((size_t)L * 2, sizeof *m->fused);
    m->moes = calloc((size_t)L, sizeof *m->moes);
    if (!m->linears || !m->linear_is_fused || !m->fused || !m->moes || !m->expert_shapes) {
        qs_backends_model_close(m);
        return qs_errf(err, "out of memory describing %d layers", L);
    }
    for (int i = 0; i < L; i++)
        if (add_layer(m, i, platform, no_fuse, err)) {
            qs_backends_model_close(m);
            return -1;
        }
    char lm[64], lmw[80], lmp[80];
    snprintf(lm, sizeof lm, "%slm_head", m->mc.tensor_prefix);
    snprintf(lmw, sizeof lmw, "%s.weight", lm);
    snprintf(lmp, sizeof lmp, "%s.weight_packed", lm);
    if (!m->mc.tie_word_embeddings || qs_checkpoint_find(m->ck, lmw) || qs_checkpoint_find(m->ck, lmp)) {
        if (add_linear(m, lm, err)) {
            qs_backends_model_close(m);
            return -1;
        }
    }
    return 0;
}

void qs_backends_model_close(qs_backends_model *m)
{
    for (int i = 0; i < m->n_moes; i++)
        qs_moe_desc_free(&m->moes[i]);
    free(m->moes);
    free(m->linears);
    free(m->linear_is_fused);
    free(m->fused);
    free(m->expert_shapes);
    if (m->ck)
        qs_checkpoint_close(m->ck);
    if (m->has_qc)
        qs_quant_config_free(&m->qc);
    if (m->has_mc)
        qs_model_config_free(&m->mc);
    memset(m, 0, sizeof *m);
}
