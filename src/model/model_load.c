/* model_load.c — qs_model_load: config.json, the checkpoint, every layer's tensors (shapes checked
 * against the config), online quantization, the fusion of q/k/v and gate/up (projection_fusion_load.c),
 * kernel selection through the registry once per (layer kind, scheme) with one log line each, and
 * weight preparation by the chosen kernels. Norms, embeddings and biases are uploaded through the
 * ops of the device the config picks. Llama 4's feed-forward blocks (router, shared expert, fused or
 * per-expert experts) are described by model_llama4.c; its tensors carry config's tensor_prefix. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/backends.h"
#include "device/device.h"
#include "model/model_config_load.h"
#include "model/model_internal.h"
#include "model/model_tp.h"
#include "model/model_weights.h"
#include "model/step_dispatch.h"
#include "model/step_graph.h"
#include "util/log.h"
#include "util/parallel.h"

static int linear_desc(qs_model *m, const char *module, int64_t n, int64_t k, bool bias, qs_linear *l, qs_err *err)
{
    return qs_weights_linear_desc(m->ck, m->has_qc ? &m->qc : NULL, module, n, k, bias, &l->desc, err);
}

/* Biases are added by the ops after the kernel, so every kernel sees the same contract. Done after
 * fusion, which concatenates the parts' biases. */
static int upload_bias(qs_model *m, qs_linear *l, qs_err *err)
{
    if (!l->desc.bias)
        return 0;
    l->bias = m->ops->upload_tensor(l->desc.bias, err);
    if (!l->bias)
        return qs_err_prefix(err, "%s bias: ", l->desc.name);
    l->desc.bias = NULL;
    return 0;
}

static int load_attention(qs_model *m, int i, qs_layer *L, qs_err *err)
{
    const qs_model_config *c = &m->mc;
    char p[160], name[200];
    snprintf(p, sizeof(p), "%smodel.layers.%d", c->tensor_prefix, i);
    int64_t H = c->hidden_size, qd = (int64_t)c->num_heads * c->head_dim, kvd = (int64_t)c->num_kv_heads * c->head_dim;
    snprintf(name, sizeof(name), "%s.input_layernorm.weight", p);
    if (!(L->attn_norm = qs_weights_upload(m->ops, m->ck, name, H, 0, err)))
        return -1;
    snprintf(name, sizeof(name), "%s.post_attention_layernorm.weight", p);
    if (!(L->mlp_norm = qs_weights_upload(m->ops, m->ck, name, H, 0, err)))
        return -1;
    if (c->qk_norm) {
        snprintf(name, sizeof(name), "%s.self_attn.q_norm.weight", p);
        if (!(L->q_norm = qs_weights_upload(m->ops, m->ck, name, c->head_dim, 0, err)))
            return -1;
        snprintf(name, sizeof(name), "%s.self_attn.k_norm.weight", p);
        if (!(L->k_norm = qs_weights_upload(m->ops, m->ck, name, c->head_dim, 0, err)))
            return -1;
    }
    bool b = c->attention_bias;
    snprintf(name, sizeof(name), "%s.self_attn.q_proj", p);
    if (linear_desc(m, name, qd, H, b, &L->q, err))
        return -1;
    snprintf(name, sizeof(name), "%s.self_attn.k_proj", p);
    if (linear_desc(m, name, kvd, H, b, &L->k, err))
        return -1;
    snprintf(name, sizeof(name), "%s.self_attn.v_proj", p);
    if (linear_desc(m, name, kvd, H, b, &L->v, err))
        return -1;
    snprintf(name, sizeof(name), "%s.self_attn.o_proj", p);
    return linear_desc(m, name, H, qd, false, &L->o, err);
}

static int load_mlp(qs_model *m, int i, qs_layer *L, qs_err *err)
{
    const qs_model_config *c = &m->mc;
    char name[200];
    int64_t H = c->hidden_size, I = c->intermediate_size;
    snprintf(name, sizeof(name), "model.layers.%d.mlp.gate_proj", i);
    if (linear_desc(m, name, I, H, false, &L->gate, err))
        return -1;
    snprintf(name, sizeof(name), "model.layers.%d.mlp.up_proj", i);
    if (linear_desc(m, name, I, H, false, &L->up, err))
        return -1;
    snprintf(name, sizeof(name), "model.layers.%d.mlp.down_proj", i);
    return linear_desc(m, name, H, I, false, &L->down, err);
}

static int load_moe(qs_model *m, int i, qs_layer *L, qs_err *err)
{
    const qs_model_config *c = &m->mc;
    qs_moe_layer *moe = &L->moe;
    bool mixtral = c->arch == QS_ARCH_MIXTRAL;
    const char *block = mixtral ? "block_sparse_moe" : "mlp";
    const char *gn = mixtral ? "w1" : "gate_proj", *un = mixtral ? "w3" : "up_proj", *dn = mixtral ? "w2" : "down_proj";
    int E = c->num_experts;
    int64_t H = c->hidden_size, I = c->moe_intermediate_size;
    char name[200];
    if (E <= 0 || c->num_experts_per_tok <= 0 || c->num_experts_per_tok > E || I <= 0)
        return qs_errf(err, "config.json: MoE layer %d needs num_experts > 0, 0 < num_experts_per_tok <= "
                            "num_experts and an expert intermediate size (got %d, %d, %lld)",
                       i, E, c->num_experts_per_tok, (long long)I);
    snprintf(name, sizeof(name), "model.layers.%d.%s.gate", i, block);
    if (linear_desc(m, name, E, H, false, &moe->router, err))
        return -1;
    moe->gate = calloc((size_t)E, sizeof(qs_linear_desc));
    moe->up = calloc((size_t)E, sizeof(qs_linear_desc));
    moe->down = calloc((size_t)E, sizeof(qs_linear_desc));
    if (!moe->gate || !moe->up || !moe->down)
        return qs_errf(err, "out of memory for %d experts of layer %d", E, i);
    for (int e = 0; e < E; e++) {
        snprintf(name, sizeof(name), "model.layers.%d.%s.experts.%d.%s", i, block, e, gn);
        if (qs_weights_linear_desc(m->ck, m->has_qc ? &m->qc : NULL, name, I, H, false, &moe->gate[e], err))
            return -1;
        snprintf(name, sizeof(name), "model.layers.%d.%s.experts.%d.%s", i, block, e, un);
        if (qs_weights_linear_desc(m->ck, m->has_qc ? &m->qc : NULL, name, I, H, false, &moe->up[e], err))
            return -1;
        snprintf(name, sizeof(name), "model.layers.%d.%s.experts.%d.%s", i, block, e, dn);
        if (qs_weights_linear_desc(m->ck, m->has_qc ? &m->qc : NULL, name, H, I, false, &moe->down[e], err))
            return -1;
        if (moe->gate[e].scheme != moe->gate[0].scheme || moe->up[e].scheme != moe->gate[0].scheme ||
            moe->down[e].scheme != moe->gate[0].scheme)
            return qs_errf(err, "layer %d: experts mix quantization schemes (expert %d differs from expert 0)", i, e);
    }
    qs_moe_desc *d = &moe->desc;
    snprintf(d->name, sizeof(d->name), "model.layers.%d.%s.experts", i, block);
    d->scheme = moe->gate[0].scheme;
    d->num_experts = E;
    d->top_k = c->num_experts_per_tok;
    d->hidden = H;
    d->inter = I;
    d->gate = moe->gate;
    d->up = moe->up;
    d->down = moe->down;
    return 0;
}

/* Every linear layer the forward pass runs, in load order: a fused layer instead of its parts. */
static int collect_linears(qs_model *m, qs_linear **out)
{
    int n = 0;
    for (int i = 0; i < m->mc.num_layers; i++) {
        qs_layer *L = &m->layers[i];
        if (L->qkv_fused) {
            out[n++] = &L->qkv;
        } else {
            out[n++] = &L->q;
            out[n++] = &L->k;
            out[n++] = &L->v;
        }
        out[n++] = &L->o;
        if (L->is_moe) {
            out[n++] = &L->moe.router;
            if (L->has_shared) {
                out[n++] = &L->sh_gate;
                out[n++] = &L->sh_up;
                out[n++] = &L->sh_down;
            }
        } else {
            if (L->gate_up_fused) {
                out[n++] = &L->gate_up;
            } else {
                out[n++] = &L->gate;
                out[n++] = &L->up;
            }
            out[n++] = &L->down;
        }
    }
    out[n++] = &m->lm_head;
    return n;
}

static int upload_biases(qs_model *m, qs_err *err)
{
    qs_linear **all = calloc((size_t)m->mc.num_layers * 10 + 1, sizeof *all);
    if (!all)
        return qs_errf(err, "out of memory uploading biases");
    int n = collect_linears(m, all), rc = 0;
    for (int i = 0; i < n && rc == 0; i++)
        rc = upload_bias(m, all[i], err);
    free(all);
    return rc;
}

static int select_and_prepare_linears(qs_model *m, const qs_config *cfg, qs_err *err)
{
    int cap = m->mc.num_layers * 10 + 1, n;
    qs_linear **all = calloc((size_t)cap, sizeof(*all));
    const qs_linear_desc **descs = calloc((size_t)cap, sizeof(*descs));
    if (!all || !descs) {
        free(all);
        free(descs);
        return qs_errf(err, "out of memory selecting kernels");
    }
    n = collect_linears(m, all);
    int rc = 0;
    for (int s = 0; s < QS_SCHEME_COUNT && rc == 0; s++) {
        int k = 0, fused = 0;
        for (int i = 0; i < n; i++)
            if ((int)all[i]->desc.scheme == s) {
                descs[k++] = &all[i]->desc;
                fused += all[i]->fused != NULL;
            }
        if (k == 0)
            continue;
        qs_selection sel;
        if (qs_registry_select_for_layers(&cfg->kernels, &m->dev, QS_KIND_LINEAR, (qs_scheme)s, descs, k, NULL, 0,
                                          &sel, err) != 0) {
            qs_selection_log_fused(&sel, QS_KIND_LINEAR, (qs_scheme)s, k, fused);
            rc = -1;
            break;
        }
        qs_selection_log_fused(&sel, QS_KIND_LINEAR, (qs_scheme)s, k, fused);
        for (int i = 0; i < n && rc == 0; i++) {
            if ((int)all[i]->desc.scheme != s)
                continue;
            all[i]->kernel = sel.kernel;
            if (sel.kernel->prepare_linear(&all[i]->desc, &all[i]->state, err) != 0) {
                qs_err_prefix(err, "kernel %s preparing %s: ", sel.kernel->name, all[i]->desc.name);
                all[i]->kernel = NULL;
                rc = -1;
            }
        }
        if (rc == 0) {
            qs_linear **mine = calloc((size_t)k, sizeof(*mine));
            int j = 0;
            for (int i = 0; mine && i < n; i++)
                if ((int)all[i]->desc.scheme == s)
                    mine[j++] = all[i];
            rc = mine ? qs_step_dispatch_prepare(m, cfg, &sel, (qs_scheme)s, mine, j, err)
                      : qs_errf(err, "out of memory preparing the per-step dispatch");
            free(mine);
        }
        /* Every kernel copies what it needs in prepare: the concatenated host copies can go. */
        for (int i = 0; i < n; i++)
            if ((int)all[i]->desc.scheme == s)
                qs_fused_linear_drop_data(all[i]->fused);
    }
    free(all);
    free(descs);
    return rc;
}

static int select_and_prepare_moe(qs_model *m, const qs_config *cfg, qs_err *err)
{
    const qs_moe_desc **descs = calloc((size_t)m->mc.num_layers + 1, sizeof(*descs));
    if (!descs)
        return qs_errf(err, "out of memory selecting MoE kernels");
    int rc = 0;
    for (int s = 0; s < QS_SCHEME_COUNT && rc == 0; s++) {
        int k = 0;
        for (int i = 0; i < m->mc.num_layers; i++)
            if (m->layers[i].is_moe && (int)m->layers[i].moe.desc.scheme == s)
                descs[k++] = &m->layers[i].moe.desc;
        if (k == 0)
            continue;
        qs_selection sel;
        if (qs_registry_select_for_layers(&cfg->kernels, &m->dev, QS_KIND_MOE, (qs_scheme)s, NULL, 0, descs, k, &sel,
                                          err) != 0) {
            qs_selection_log(&sel, QS_KIND_MOE, (qs_scheme)s, k);
            rc = -1;
            break;
        }
        qs_selection_log(&sel, QS_KIND_MOE, (qs_scheme)s, k);
        for (int i = 0; i < m->mc.num_layers && rc == 0; i++) {
            qs_moe_layer *moe = &m->layers[i].moe;
            if (!m->layers[i].is_moe || (int)moe->desc.scheme != s)
                continue;
            moe->kernel = sel.kernel;
            if (sel.kernel->prepare_moe(&moe->desc, &moe->state, err) != 0) {
                qs_err_prefix(err, "kernel %s preparing %s: ", sel.kernel->name, moe->desc.name);
                moe->kernel = NULL;
                rc = -1;
            }
        }
    }
    free(descs);
    return rc;
}

/* --quantization fp8: every attention, MLP and expert projection becomes FP8 per-channel. */
static int quantize_online(qs_model *m, qs_err *err)
{
    for (int i = 0; i < m->mc.num_layers; i++) {
        qs_layer *L = &m->layers[i];
        qs_linear *moe_ls[] = {&L->q, &L->k, &L->v, &L->o, &L->sh_gate, &L->sh_up, &L->sh_down};
        qs_linear *dense_ls[] = {&L->q, &L->k, &L->v, &L->o, &L->gate, &L->up, &L->down};
        qs_linear **ls = L->is_moe ? moe_ls : dense_ls;
        int n = L->is_moe ? (L->has_shared ? 7 : 4) : 7;
        for (int j = 0; j < n; j++) {
            ls[j]->online = calloc(1, sizeof(qs_online_fp8));
            if (!ls[j]->online)
                return qs_errf(err, "out of memory");
            if (qs_online_fp8_quantize(&ls[j]->desc, ls[j]->online, err))
                return -1;
        }
        if (!L->is_moe)
            continue;
        qs_moe_layer *moe = &L->moe;
        int E = moe->desc.num_experts;
        moe->online = calloc((size_t)E * 3, sizeof(qs_online_fp8));
        if (!moe->online)
            return qs_errf(err, "out of memory");
        for (int e = 0; e < E; e++)
            if (qs_online_fp8_quantize(&moe->gate[e], &moe->online[3 * e], err) ||
                qs_online_fp8_quantize(&moe->up[e], &moe->online[3 * e + 1], err) ||
                qs_online_fp8_quantize(&moe->down[e], &moe->online[3 * e + 2], err))
                return -1;
        moe->desc.scheme = moe->gate[0].scheme;
    }
    qs_info("--quantization fp8: attention, MLP and expert weights quantized to FP8 per channel "
            "(activations dynamic per token); embeddings, lm_head and routers unquantized");
    return 0;
}

static int check_config(const qs_model_config *c, qs_err *err)
{
    if (c->hidden_size <= 0 || c->num_layers <= 0 || c->num_heads <= 0 || c->num_kv_heads <= 0 ||
        c->head_dim <= 0 || c->vocab_size <= 0)
        return qs_errf(err, "config.json: hidden_size %d, num_hidden_layers %d, num_attention_heads %d, "
                            "num_key_value_heads %d, head_dim %d and vocab_size %d must all be positive",
                       c->hidden_size, c->num_layers, c->num_heads, c->num_kv_heads, c->head_dim, c->vocab_size);
    if (c->num_heads % c->num_kv_heads != 0)
        return qs_errf(err, "config.json: num_attention_heads %d is not a multiple of num_key_value_heads %d",
                       c->num_heads, c->num_kv_heads);
    if (c->head_dim % 2 != 0)
        return qs_errf(err, "config.json: head_dim %d must be even for rotary embeddings", c->head_dim);
    if (c->rope_theta <= 0)
        return qs_errf(err, "config.json: rope_theta %g must be positive", c->rope_theta);
    return 0;
}

/* config.json's layer count against the tensor index, before any weight is read: a config that
 * claims more layers than the checkpoint holds fails at once instead of after loading them all. */
static int check_layer_count(const qs_checkpoint *ck, const char *prefix, int num_layers, qs_err *err)
{
    char name[192];
    int have = 0;
    for (; have < num_layers; have++) { /* prefix: "language_model." for Llama4ForConditionalGeneration */
        snprintf(name, sizeof name, "%smodel.layers.%d.input_layernorm.weight", prefix, have);
        if (!qs_checkpoint_find(ck, name))
            break;
    }
    if (have < num_layers)
        return qs_errf(err,
                       "config.json: num_hidden_layers is %d but the checkpoint's tensors stop at layer %d "
                       "(tensor %smodel.layers.%d.input_layernorm.weight is missing)",
                       num_layers, have - 1, prefix, have);
    return 0;
}

static int pick_device(const qs_config *cfg, qs_model *m, qs_err *err)
{
    if (cfg->threads > 0)
        qs_parallel_set_threads(cfg->threads);
    if (qs_device_detect(cfg->device, &m->dev, err) != 0)
        return -1;
    m->ops = qs_ops_for_platform(m->dev.platform, err);
    return m->ops ? 0 : -1;
}

/* A switch from the environment: *on stays true when `name` is unset or empty. */
static int env_switch(const char *name, bool *on, qs_err *err)
{
    const char *v = getenv(name);
    *on = true;
    if (v && *v && qs_parse_bool(v, on))
        return qs_errf(err, "%s: expected 1 or 0 (or true/false), got '%s'", name, v);
    return 0;
}

int qs_act_orders_from_env(bool *on, qs_err *err) { return env_switch("QSERVE_ACT_ORDER", on, err); }

/* Sampling on the device (core/sample.h) when the device has the op, unless QSERVE_DEVICE_SAMPLING=0
 * (then every row's logits go to the host sampler, as before the op existed); activations written
 * in the order their linear reads (forward.c) unless QSERVE_ACT_ORDER=0. */
static int device_switches_init(qs_model *m, qs_err *err)
{
    bool on;
    if (env_switch("QSERVE_DEVICE_SAMPLING", &on, err))
        return -1;
    m->sample_on_device = on && m->ops->sample && m->tp.size == 1; /* tp: logits are gathered to the host */
    if (m->ops->sample && !on)
        qs_info("QSERVE_DEVICE_SAMPLING=0: every row's logits go to the host sampler");
    if (qs_act_orders_from_env(&m->act_order, err))
        return -1;
    if (!m->act_order)
        qs_info("QSERVE_ACT_ORDER=0: activations in natural order only (a linear kernel reorders them itself)");
    return 0;
}

static int load_all(qs_model *m, const qs_config *cfg, qs_err *err)
{
    if (qs_model_config_load(cfg->model_dir, &m->mc, err) != 0)
        return -1;
    const qs_model_config *c = &m->mc;
    if (check_config(c, err) != 0 || pick_device(cfg, m, err) != 0)
        return -1;
    if (!(m->comm = qs_tp_comm(cfg->tensor_parallel_size, err)) ||
        qs_tp_layout_plan(c, m->comm->rank, m->comm->size, cfg->enable_expert_parallel, &m->tp, err))
        return -1;
    if (m->tp.expert_parallel && !m->ops->moe_expert_slice)
        return qs_errf(err, "--enable-expert-parallel: %s has no moe_expert_slice op", m->dev.name);
    bool tp = m->tp.size > 1;
    if (qs_tp_device_comm(m, err))
        return -1;
    if (qs_quant_config_parse(c->quantization_config_json, cfg->model_dir, &m->qc, err) != 0)
        return qs_err_prefix(err, "%s: ", cfg->model_dir);
    m->has_qc = true;
    bool online_fp8 = false;
    if (cfg->quantization[0]) {
        if (strcmp(cfg->quantization, "fp8") != 0)
            return qs_errf(err, "--quantization %s: unknown online quantization (supported: fp8)", cfg->quantization);
        online_fp8 = true;
    }
    if (qs_checkpoint_open_for_model(cfg->model_dir, &m->ck, err) != 0)
        return -1;
    if (check_layer_count(m->ck, c->tensor_prefix, c->num_layers, err) != 0)
        return -1;
    int64_t H = c->hidden_size, V = c->vocab_size;
    const char *P = c->tensor_prefix; /* "language_model." for Llama4ForConditionalGeneration */
    char nm[96], nm2[96];
    if (c->llama4 && qs_llama4_check_device(m, err))
        return -1;
    snprintf(nm, sizeof nm, "%smodel.embed_tokens.weight", P);
    if (!(m->embed = tp ? qs_tp_upload_embedding(m, nm, err) : qs_weights_upload(m->ops, m->ck, nm, V, H, err)))
        return -1;
    snprintf(nm, sizeof nm, "%smodel.norm.weight", P);
    if (!(m->final_norm = qs_weights_upload(m->ops, m->ck, nm, H, 0, err)))
        return -1;
    snprintf(nm, sizeof nm, "%slm_head.weight", P);
    if (c->tie_word_embeddings || !qs_checkpoint_find(m->ck, nm)) {
        if (!c->tie_word_embeddings)
            qs_warn("%s: no %s; using the tied embedding", cfg->model_dir, nm);
        snprintf(nm2, sizeof nm2, "%smodel.embed_tokens", P);
        if (linear_desc(m, nm2, V, H, false, &m->lm_head, err))
            return -1;
        snprintf(m->lm_head.desc.name, sizeof(m->lm_head.desc.name), "lm_head (tied to %s)", nm2);
    } else {
        snprintf(nm2, sizeof nm2, "%slm_head", P);
        if (linear_desc(m, nm2, V, H, false, &m->lm_head, err))
            return -1;
    }
    if (tp && qs_tp_shard_lm_head(m, err))
        return -1;
    if (c->llama4 && c->l2_qk_norm) { /* the weightless q/k norm runs as rmsnorm with weight 1 */
        float *ones = malloc(sizeof(float) * (size_t)c->head_dim);
        if (!ones)
            return qs_errf(err, "out of memory");
        for (int i = 0; i < c->head_dim; i++)
            ones[i] = 1.0f;
        /* through upload_tensor: the device's norm-weight format (BF16 on CUDA) */
        qs_tensor t = {.name = "llama4 q/k norm (ones)", .dtype = QS_DT_F32, .ndim = 1, .shape = {c->head_dim},
                       .numel = c->head_dim, .data = ones, .nbytes = sizeof(float) * (size_t)c->head_dim,
                       .file = "(built in)"};
        m->ones_head = m->ops->upload_tensor(&t, err);
        free(ones);
        if (!m->ones_head)
            return -1;
    }
    float *inv = malloc(sizeof(float) * (size_t)(c->head_dim / 2));
    if (!inv)
        return qs_errf(err, "out of memory");
    qs_rope_inv_freq(c, inv);
    m->inv_freq = m->ops->alloc(sizeof(float) * (size_t)(c->head_dim / 2), err);
    int rc = m->inv_freq ? m->ops->copy_to_device(m->inv_freq, inv, sizeof(float) * (size_t)(c->head_dim / 2), err) : -1;
    free(inv);
    if (rc)
        return -1;
    m->layers = calloc((size_t)c->num_layers, sizeof(qs_layer));
    if (!m->layers)
        return qs_errf(err, "out of memory for %d layers", c->num_layers);
    for (int i = 0; i < c->num_layers; i++) {
        qs_layer *L = &m->layers[i];
        L->is_moe = c->num_experts > 0 && qs_model_layer_is_moe(c, i);
        L->rope = !c->llama4 || c->layer_rope[i];
        if (load_attention(m, i, L, err) || (tp && qs_tp_shard_attention(m, L, err)))
            return -1;
        if (c->llama4 ? (L->is_moe ? qs_llama4_load_moe(m, i, L, err) : qs_llama4_load_mlp(m, i, L, err))
                      : (L->is_moe ? load_moe(m, i, L, err) : load_mlp(m, i, L, err)))
            return -1;
        if (tp && qs_tp_shard_feed_forward(m, L, err))
            return -1;
    }
    if (tp)
        qs_tp_localize_config(m);
    if (online_fp8 && quantize_online(m, err) != 0)
        return -1;
    if (m->tp.expert_parallel && qs_tp_expert_slice(m, err))
        return -1;
    if (qs_model_fuse_projections(m, cfg->no_fuse_projections || qs_projection_fusion_disabled_by_env(), err) != 0 ||
        upload_biases(m, err) != 0)
        return -1;
    /* (the switches first: per-step dispatch depends on the activation orders) */
    if (device_switches_init(m, err) != 0 || select_and_prepare_linears(m, cfg, err) != 0 ||
        select_and_prepare_moe(m, cfg, err) != 0 || (!tp && qs_step_graphs_init(m, cfg, err) != 0))
        return -1;
    m->tp_loaded = true;
    qs_info("loaded %s (%s): %d layers, hidden %d, %d heads / %d kv heads, head_dim %d, vocab %d%s on %s",
            cfg->model_dir, c->arch_name, c->num_layers, c->hidden_size, c->num_heads, c->num_kv_heads, c->head_dim,
            c->vocab_size, c->num_experts ? ", MoE" : "", m->dev.name);
    return 0;
}

int qs_model_load(const qs_config *cfg, qs_model **out, qs_err *err)
{
    *out = NULL;
    qs_model *m = calloc(1, sizeof(*m));
    if (!m)
        return qs_errf(err, "out of memory loading %s", cfg->model_dir);
    int rc = load_all(m, cfg, err);
    /* Data no tensor claims: after a failure it explains a missing tensor (dropped from the
     * header); after a success it is still a corrupt file. */
    const char *gap = qs_checkpoint_gap(m->ck);
    if (gap && rc != 0) {
        char first[QS_ERR_MSG_MAX];
        snprintf(first, sizeof first, "%s", err->msg);
        qs_errf(err, "%.700s; note: %.600s (was the missing tensor dropped from the header?)", first, gap);
    }
    else if (gap)
        rc = qs_errf(err, "%s", gap);
    if (rc != 0) {
        qs_model_free(m);
        return -1;
    }
    *out = m;
    return 0;
}

static void free_linear(const qs_ops *ops, qs_linear *l)
{
    if (l->kernel && l->state)
        l->kernel->release(l->state);
    for (int i = 0; i < l->plan.n_rows; i++) /* the rows' own prepared copies */
        if (l->plan.rows[i].state && l->plan.rows[i].state != l->state)
            l->plan.rows[i].kernel->release(l->plan.rows[i].state);
    if (ops && l->bias)
        ops->free(l->bias);
    qs_online_fp8_free(l->online);
    free(l->online);
    qs_fused_linear_drop_data(l->fused);
    free(l->fused);
    qs_linear_shard_free(l->shard);
    free(l->shard);
}

void qs_model_free(qs_model *m)
{
    if (!m)
        return;
    const qs_ops *ops = m->ops;
    qs_tp_send_stop(m); /* rank 0: the other ranks leave their step loop */
    qs_step_graphs_free(m); /* first: the graphs hold the buffers freed below */
    qs_tp_device_free(m);
    if (m->layers) {
        for (int i = 0; i < m->mc.num_layers; i++) {
            qs_layer *L = &m->layers[i];
            void *bufs[] = {L->attn_norm, L->mlp_norm, L->q_norm, L->k_norm};
            for (int j = 0; j < 4; j++)
                if (bufs[j])
                    ops->free(bufs[j]);
            qs_linear *ls[] = {&L->q,  &L->k,    &L->v,       &L->qkv,         &L->o,
                               &L->gate, &L->up, &L->gate_up, &L->down, &L->moe.router,
                               &L->sh_gate, &L->sh_up, &L->sh_down};
            for (size_t j = 0; j < sizeof ls / sizeof *ls; j++)
                free_linear(ops, ls[j]);
            if (L->moe.kernel && L->moe.state)
                L->moe.kernel->release(L->moe.state);
            int all_experts = m->mc.num_experts; /* (expert parallelism narrows desc.num_experts) */
            for (int e = 0; L->moe.online && e < 3 * all_experts; e++)
                qs_online_fp8_free(&L->moe.online[e]);
            free(L->moe.online);
            for (int e = 0; L->moe.shards && e < 3 * all_experts; e++)
                qs_linear_shard_free(&L->moe.shards[e]);
            free(L->moe.shards);
            free(L->moe.gate);
            free(L->moe.up);
            free(L->moe.down);
            qs_llama4_free_split(&L->moe);
        }
        free(m->layers);
    }
    free_linear(ops, &m->lm_head);
    if (ops) {
        if (m->embed)
            ops->free(m->embed);
        if (m->final_norm)
            ops->free(m->final_norm);
        if (m->inv_freq)
            ops->free(m->inv_freq);
        if (m->ones_head)
            ops->free(m->ones_head);
        qs_scratch_free(m);
    }
    if (m->ck)
        qs_checkpoint_close(m->ck);
    if (m->has_qc)
        qs_quant_config_free(&m->qc);
    qs_model_config_free(&m->mc);
    free(m);
}

const qs_model_config *qs_model_get_config(const qs_model *m) { return &m->mc; }
const qs_device_caps *qs_model_device(const qs_model *m) { return &m->dev; }
const qs_fusion_summary *qs_model_fusion(const qs_model *m) { return &m->fusion; }
