/* forward.c — qs_model_forward: one step over a batch of sequence slices (prefill chunks and
 * decode tokens mixed), written once over the ops interface and the registry-chosen kernels:
 *   x = embed(tokens)
 *   per layer: h = norm(x); q,k,v = linears(h) (+bias; Qwen3: per-head q/k norm); RoPE (Llama 4:
 *              interleaved on RoPE layers then a weightless q/k norm, temperature on NoPE layers);
 *              write k,v to the paged cache; attention over each sequence's block table;
 *              x += o_proj(attn); h = norm(x); x += mlp(h)  (SwiGLU, or routed experts)
 *   logits = lm_head(norm(x)) for the last token of each sequence that wants them.
 * Where the loader fused them (projection_fusion_load.c), q/k/v come from one qkv_proj GEMM whose output is
 * split by columns, and SwiGLU reads gate and up straight from one gate_up_proj output.
 * The residual add is fused into the following RMSNorm (ops->add_rmsnorm), which, like the SwiGLU
 * before down_proj and the attention before o_proj, writes its output in the order the next
 * linear's kernel reads when that linear is its only reader (core/act_order.h; QSERVE_ACT_ORDER=0:
 * always natural). qs_forward_run_sample adds the device's sampling op (core/sample.h) after the
 * lm_head and qs_forward_outputs brings back token ids, plus logits only for the rows left to the
 * host sampler. Which steps run eagerly and which replay a recorded decode graph (step_graph.c)
 * is model_step.c's choice: this file is the layer math only. */
#include <math.h>
#include <string.h>

#include "model/kv_cache.h"
#include "model/model_internal.h"

/* The kernel that runs l for a step of `rows` (the row of its plan, registry/step_plan.h), and its
 * state. */
static const qs_kernel *kernel_for(const qs_linear *l, int64_t rows, const void **state)
{
    const qs_plan_row *r = qs_plan_row_for(&l->plan, rows);
    *state = r->state;
    return r->kernel;
}

qs_act_order qs_linear_order(const qs_model *m, const qs_linear *l, int64_t rows)
{
    const void *state;
    const qs_kernel *k = kernel_for(l, rows, &state);
    if (!m->act_order || !k->input_order || !k->apply_linear_ordered)
        return QS_ACT_NATURAL;
    return (qs_act_order)k->input_order(state, rows);
}

int qs_linear_apply(const qs_model *m, const qs_linear *l, const void *x, void *y, int64_t rows, qs_act_order order,
                    qs_err *err)
{
    const void *state;
    const qs_kernel *k = kernel_for(l, rows, &state);
    int rc = order == QS_ACT_NATURAL ? k->apply_linear(state, x, y, rows, m->stream, err)
             : k->apply_linear_ordered ? k->apply_linear_ordered(state, x, y, rows, m->stream, err)
                                       : qs_errf(err, "activations in order %d, which the kernel does not read", (int)order);
    if (rc != 0)
        return qs_err_prefix(err, "%s (%s): ", l->desc.name, k->name);
    if (l->bias && m->ops->add_bias(y, l->bias, rows, l->desc.n, err) != 0)
        return qs_err_prefix(err, "%s bias: ", l->desc.name);
    return 0;
}

/* q, k, v [T, heads * head_dim] from h (in h_order: the fused GEMM's, or natural): three GEMMs, or
 * one fused GEMM and a column split. */
static int qkv_projections(qs_model *m, qs_layer *L, int64_t T, qs_act_order h_order, qs_err *err)
{
    qs_scratch *s = &m->s;
    if (!L->qkv_fused)
        return qs_linear_apply(m, &L->q, s->h, s->q, T, QS_ACT_NATURAL, err) ||
                       qs_linear_apply(m, &L->k, s->h, s->k, T, QS_ACT_NATURAL, err) ||
                       qs_linear_apply(m, &L->v, s->h, s->v, T, QS_ACT_NATURAL, err)
                   ? -1
                   : 0;
    const qs_model_config *c = &m->mc;
    int64_t qd = (int64_t)c->num_heads * c->head_dim, kvd = (int64_t)c->num_kv_heads * c->head_dim;
    if (qs_linear_apply(m, &L->qkv, s->h, s->qkv, T, h_order, err) ||
        m->ops->split_qkv(s->q, s->k, s->v, s->qkv, T, qd, kvd, kvd, err))
        return -1;
    return 0;
}

/* Llama 4's q, k and v: RoPE layers rotate interleaved pairs, then take the weightless q/k norm
 * (use_qk_norm); NoPE layers scale q by the attention temperature (attn_temperature_tuning). */
static int llama4_qkv(qs_model *m, qs_layer *L, void *kc, void *vc, const qs_attn_batch *b, qs_act_order h_order,
                      qs_err *err)
{
    const qs_model_config *c = &m->mc;
    const qs_ops *ops = m->ops;
    qs_scratch *s = &m->s;
    int64_t T = b->n_tokens;
    if (qkv_projections(m, L, T, h_order, err))
        return -1;
    if (L->rope) {
        if (ops->rope_interleaved(s->q, b->tok_pos, m->inv_freq, T, c->num_heads, c->head_dim, err) ||
            ops->rope_interleaved(s->k, b->tok_pos, m->inv_freq, T, c->num_kv_heads, c->head_dim, err))
            return -1;
        if (c->l2_qk_norm &&
            (ops->rmsnorm(s->q, s->q, m->ones_head, T * c->num_heads, c->head_dim, c->rms_norm_eps, err) ||
             ops->rmsnorm(s->k, s->k, m->ones_head, T * c->num_kv_heads, c->head_dim, c->rms_norm_eps, err)))
            return -1;
    } else if (c->attn_temperature_tuning &&
               ops->attn_temperature(s->q, b->tok_pos, T, (int64_t)c->num_heads * c->head_dim, (float)c->floor_scale,
                                     (float)c->attn_scale, err)) {
        return -1;
    }
    return ops->kv_write(kc, vc, s->k, s->v, b, c->num_kv_heads, c->head_dim, err);
}

/* q, k and v of the step: q into s->q, k and v into the layer's caches, RoPE applied to q and k.
 * A fused q/k/v layer on a device with qkv_rope_cache does it in one op after its GEMM. */
static int qkv_rope_cache(qs_model *m, qs_layer *L, void *kc, void *vc, const qs_attn_batch *b, qs_act_order h_order,
                          qs_err *err)
{
    const qs_model_config *c = &m->mc;
    const qs_ops *ops = m->ops;
    qs_scratch *s = &m->s;
    int64_t T = b->n_tokens;
    if (c->llama4)
        return llama4_qkv(m, L, kc, vc, b, h_order, err);
    if (L->qkv_fused && !c->qk_norm && ops->qkv_rope_cache)
        return qs_linear_apply(m, &L->qkv, s->h, s->qkv, T, h_order, err) ||
                       ops->qkv_rope_cache(s->q, kc, vc, s->qkv, b, m->inv_freq, c->num_heads, c->num_kv_heads,
                                           c->head_dim, err)
                   ? -1
                   : 0;
    if (qkv_projections(m, L, T, h_order, err))
        return -1;
    if (c->qk_norm && (ops->rmsnorm(s->q, s->q, L->q_norm, T * c->num_heads, c->head_dim, c->rms_norm_eps, err) ||
                       ops->rmsnorm(s->k, s->k, L->k_norm, T * c->num_kv_heads, c->head_dim, c->rms_norm_eps, err)))
        return -1;
    return ops->rope(s->q, b->tok_pos, m->inv_freq, T, c->num_heads, c->head_dim, err) ||
                   ops->rope(s->k, b->tok_pos, m->inv_freq, T, c->num_kv_heads, c->head_dim, err) ||
                   ops->kv_write(kc, vc, s->k, s->v, b, c->num_kv_heads, c->head_dim, err)
               ? -1
               : 0;
}

static int attention_block(qs_model *m, qs_kv_cache *kv, int li, const qs_attn_batch *step, qs_act_order h_order,
                           qs_err *err)
{
    qs_attn_batch layer_batch = *step; /* the cache's element type and this layer's KV scales */
    qs_kv_attn_params(kv, li, &layer_batch);
    const qs_attn_batch *b = &layer_batch;
    const qs_model_config *c = &m->mc;
    const qs_ops *ops = m->ops;
    qs_layer *L = &m->layers[li];
    qs_scratch *s = &m->s;
    int64_t T = b->n_tokens;
    void *kc = qs_kv_cache_k(kv, li), *vc = qs_kv_cache_v(kv, li);
    if (!kc || !vc)
        return qs_errf(err, "forward: the KV cache has no layer %d", li);
    if (qkv_rope_cache(m, L, kc, vc, b, h_order, err))
        return -1;
    qs_act_order o_order = qs_linear_order(m, &L->o, T);
    qs_attn_batch lb = *b; /* Llama 4: RoPE layers attend within their chunk, NoPE layers to everything */
    lb.attention_chunk = c->llama4 && L->rope ? c->attention_chunk_size : 0;
    if (ops->attention(s->attn, s->q, kc, vc, &lb, c->num_heads, c->num_kv_heads, c->head_dim,
                       (float)(1.0 / sqrt((double)c->head_dim)), o_order, err))
        return -1;
    if (qs_linear_apply(m, &L->o, s->attn, s->o, T, o_order, err))
        return -1;
    return qs_tp_all_reduce(m, s->o, T * c->hidden_size, err); /* o_proj is row-parallel */
}

/* The order the op before the attention (mlp) block writes h in: the fused q/k/v (gate/up)
 * GEMM's when it is h's only reader, else natural. */
static qs_act_order attn_input_order(const qs_model *m, const qs_layer *L, int64_t T)
{
    return L->qkv_fused ? qs_linear_order(m, &L->qkv, T) : QS_ACT_NATURAL;
}
static qs_act_order mlp_input_order(const qs_model *m, const qs_layer *L, int64_t T)
{
    return !L->is_moe && L->gate_up_fused ? qs_linear_order(m, &L->gate_up, T) : QS_ACT_NATURAL;
}

/* Llama 4's MoE: the top-1 expert runs on its input scaled by sigmoid(router score), and the
 * shared expert on the unscaled input adds to it. */
static int llama4_moe(qs_model *m, int li, int64_t T, qs_err *err)
{
    const qs_model_config *c = &m->mc;
    const qs_ops *ops = m->ops;
    qs_layer *L = &m->layers[li];
    qs_moe_layer *moe = &L->moe;
    qs_scratch *s = &m->s;
    int64_t H = c->hidden_size;
    if (qs_linear_apply(m, &moe->router, s->h, s->router, T, QS_ACT_NATURAL, err) ||
        ops->moe_route_scale_input(s->router, s->h, s->moe_in, s->topk_ids, s->topk_w, T, c->num_experts, H, err) ||
        (m->tp.expert_parallel && /* this rank's experts only (top-1) */
         ops->moe_expert_slice(s->topk_ids, s->topk_w, T, m->tp.expert_first, m->tp.experts, err)))
        return qs_err_prefix(err, "layer %d routing: ", li);
    if (moe->kernel->apply_moe(moe->state, s->moe_in, s->topk_ids, s->topk_w, s->o, T, m->stream, err) != 0)
        return qs_err_prefix(err, "%s (%s): ", moe->desc.name, moe->kernel->name);
    return qs_linear_apply(m, &L->sh_gate, s->h, s->gate, T, QS_ACT_NATURAL, err) ||
                   qs_linear_apply(m, &L->sh_up, s->h, s->up, T, QS_ACT_NATURAL, err) ||
                   ops->swiglu(s->act, s->gate, s->up, T, c->moe_intermediate_size, err) ||
                   qs_linear_apply(m, &L->sh_down, s->act, s->shared, T, QS_ACT_NATURAL, err) ||
                   ops->add(s->o, s->shared, T * H, err)
               ? -1
               : 0;
}

static int mlp_block(qs_model *m, int li, int64_t T, qs_act_order h_order, qs_err *err)
{
    const qs_model_config *c = &m->mc;
    const qs_ops *ops = m->ops;
    qs_layer *L = &m->layers[li];
    qs_scratch *s = &m->s;
    if (!L->is_moe && L->gate_up_fused) {
        qs_act_order act_order = qs_linear_order(m, &L->down, T);
        return qs_linear_apply(m, &L->gate_up, s->h, s->gate_up, T, h_order, err) ||
                       ops->swiglu_gate_up(s->act, s->gate_up, T, c->intermediate_size, act_order, err) ||
                       qs_linear_apply(m, &L->down, s->act, s->o, T, act_order, err)
                   ? -1
                   : 0;
    }
    if (!L->is_moe) {
        return qs_linear_apply(m, &L->gate, s->h, s->gate, T, QS_ACT_NATURAL, err) ||
               qs_linear_apply(m, &L->up, s->h, s->up, T, QS_ACT_NATURAL, err) ||
               ops->swiglu(s->act, s->gate, s->up, T, c->intermediate_size, err) ||
               qs_linear_apply(m, &L->down, s->act, s->o, T, QS_ACT_NATURAL, err)
                   ? -1
                   : 0;
    }
    qs_moe_layer *moe = &L->moe;
    if (c->llama4)
        return llama4_moe(m, li, T, err);
    bool norm = c->arch == QS_ARCH_MIXTRAL || c->norm_topk_prob;
    if (qs_linear_apply(m, &moe->router, s->h, s->router, T, QS_ACT_NATURAL, err) ||
        ops->moe_route(s->router, s->topk_ids, s->topk_w, T, c->num_experts, c->num_experts_per_tok, norm, err) ||
        (m->tp.expert_parallel && /* this rank's experts only; the all-reduce after the block sums them */
         ops->moe_expert_slice(s->topk_ids, s->topk_w, T * c->num_experts_per_tok, m->tp.expert_first,
                               m->tp.experts, err)))
        return qs_err_prefix(err, "layer %d routing: ", li);
    if (moe->kernel->apply_moe(moe->state, s->h, s->topk_ids, s->topk_w, s->o, T, m->stream, err) != 0)
        return qs_err_prefix(err, "%s (%s): ", moe->desc.name, moe->kernel->name);
    return 0;
}

int qs_forward_run(qs_model *m, qs_kv_cache *kv, const qs_attn_batch *b, const int32_t *ids, const int32_t *out_rows,
                   int n_out, qs_err *err)
{
    const qs_model_config *c = &m->mc;
    const qs_ops *ops = m->ops;
    qs_scratch *s = &m->s;
    int64_t T = b->n_tokens, H = c->hidden_size;
    float eps = c->rms_norm_eps;
    if (ops->embedding(s->x, m->embed, ids, T, H, err) || qs_tp_all_reduce(m, s->x, T * H, err) ||
        ops->rmsnorm(s->h, s->x, m->layers[0].attn_norm, T, H, eps, err))
        return -1;
    for (int li = 0; li < c->num_layers; li++) {
        qs_layer *L = &m->layers[li];
        /* (layer 0's norm is a plain one, in natural order) */
        qs_act_order attn_order = li > 0 ? attn_input_order(m, L, T) : QS_ACT_NATURAL;
        if (li > 0 && ops->add_rmsnorm(s->x, s->o, s->h, L->attn_norm, T, H, eps, attn_order, err))
            return -1;
        qs_act_order mlp_order = mlp_input_order(m, L, T);
        if (attention_block(m, kv, li, b, attn_order, err) ||
            ops->add_rmsnorm(s->x, s->o, s->h, L->mlp_norm, T, H, eps, mlp_order, err) ||
            mlp_block(m, li, T, mlp_order, err) || qs_tp_all_reduce(m, s->o, T * H, err)) /* down: row-parallel */
            return qs_err_prefix(err, "layer %d: ", li);
    }
    if (ops->add_rmsnorm(s->x, s->o, s->h, m->final_norm, T, H, eps, QS_ACT_NATURAL, err))
        return -1;
    if (n_out == 0)
        return 0;
    if (ops->gather_rows(s->out_rows, s->h, out_rows, n_out, H, err) ||
        qs_linear_apply(m, &m->lm_head, s->out_rows, s->logits, n_out, QS_ACT_NATURAL, err))
        return -1;
    return 0;
}

int qs_forward_run_sample(qs_model *m, qs_kv_cache *kv, const qs_attn_batch *b, const int32_t *ids,
                          const int32_t *out_rows, int n_out, const qs_sample_row *d_sample, qs_err *err)
{
    if (qs_forward_run(m, kv, b, ids, out_rows, n_out, err))
        return -1;
    if (!d_sample || n_out == 0)
        return 0;
    if (m->ops->sample(m->s.d_tokens, m->s.logits, d_sample, n_out, m->mc.vocab_size, err))
        return qs_err_prefix(err, "sampling %d rows: ", n_out);
    return 0;
}

int qs_forward_outputs(qs_model *m, const qs_sample_row *sample, int n_out, float *logits, int32_t *tokens,
                       qs_err *err)
{
    const qs_ops *ops = m->ops;
    int64_t V = m->mc.vocab_size;
    if (n_out == 0)
        return 0;
    if (!sample)
        return ops->acts_to_host_f32(logits, m->s.logits, (int64_t)n_out * V, err);
    if (ops->copy_to_host(tokens, m->s.d_tokens, sizeof(int32_t) * (size_t)n_out, err))
        return -1;
    /* the skipped rows' logits, one copy per run of consecutive skipped rows */
    for (int r = 0; r < n_out;) {
        if (!sample[r].skip) {
            r++;
            continue;
        }
        int end = r;
        while (end < n_out && sample[end].skip)
            end++;
        const char *src = (const char *)m->s.logits + (size_t)r * (size_t)V * ops->act_size;
        if (ops->acts_to_host_f32(logits + (size_t)r * (size_t)V, src, (int64_t)(end - r) * V, err))
            return -1;
        r = end;
    }
    return 0;
}
