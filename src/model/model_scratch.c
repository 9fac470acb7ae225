/* model_scratch.c — the per-step device buffers of the forward pass (activations, index arrays,
 * routing results, logits, sampling parameters and tokens) and their host mirrors. They grow to the largest step seen and are
 * reused, so a decode step allocates nothing. Buffers only fused layers need (the q/k/v and
 * gate/up outputs) exist only in models that have such layers, and the separate gate and up
 * buffers only while some dense layer still runs them, so fusion costs the q+k+v row of one
 * extra buffer and no more. Every reallocation changes s->epoch: a recorded decode-step graph
 * (step_graph.c) holds the old addresses and must be captured again. */
#include <stdlib.h>

#include "model/model_internal.h"

void qs_scratch_free(qs_model *m)
{
    qs_scratch *s = &m->s;
    void *dev[] = {s->x, s->h, s->q, s->k, s->v, s->qkv, s->attn, s->o, s->gate, s->up, s->gate_up, s->act, s->router, s->moe_in, s->shared,
                   s->topk_ids, s->topk_w, s->out_rows, s->logits, s->d_sample, s->d_tokens, s->d_ids, s->d_pos, s->d_seq,
                   s->d_slots, s->d_tables, s->d_out_rows};
    for (size_t i = 0; i < sizeof(dev) / sizeof(dev[0]); i++)
        if (dev[i])
            m->ops->free(dev[i]);
    free(s->h_ids);
    free(s->h_pos);
    free(s->h_seq);
    free(s->h_slots);
    free(s->h_tables);
    free(s->h_out_rows);
    uint64_t epoch = s->epoch;
    *s = (qs_scratch){0};
    s->epoch = epoch + 1;
}

static int grow(qs_scratch *s, const qs_ops *ops, void **buf, size_t bytes, qs_err *err)
{
    s->epoch++;
    if (*buf)
        ops->free(*buf);
    *buf = ops->alloc(bytes, err);
    return *buf ? 0 : -1;
}

/* grow() when the buffer is needed at all (cond), otherwise nothing. */
static int grow_if(bool cond, qs_scratch *s, const qs_ops *ops, void **buf, size_t bytes, qs_err *err)
{
    return cond ? grow(s, ops, buf, bytes, err) : 0;
}

static int grow_host(int32_t **buf, size_t n, qs_err *err)
{
    free(*buf);
    *buf = malloc(sizeof(int32_t) * (n ? n : 1));
    return *buf ? 0 : qs_errf(err, "out of memory for %zu step indices", n);
}

int qs_scratch_reserve(qs_model *m, int64_t n_tokens, int n_seqs, int max_blocks, int n_out, qs_err *err)
{
    qs_scratch *s = &m->s;
    const qs_ops *ops = m->ops;
    const qs_model_config *c = &m->mc;
    size_t a = ops->act_size;
    if (n_tokens > s->cap_tokens) {
        int64_t T = n_tokens > 2 * s->cap_tokens ? n_tokens : 2 * s->cap_tokens;
        int64_t qd = (int64_t)c->num_heads * c->head_dim, kvd = (int64_t)c->num_kv_heads * c->head_dim;
        int64_t inter = c->intermediate_size > c->moe_intermediate_size ? c->intermediate_size
                                                                        : c->moe_intermediate_size;
        int topk = c->num_experts_per_tok > 0 ? c->num_experts_per_tok : 1;
        int experts = c->num_experts > 0 ? c->num_experts : 1;
        const qs_fusion_summary *f = &m->fusion;
        bool any_qkv = f->fused[QS_FUSION_QKV] > 0, any_gate_up = f->fused[QS_FUSION_GATE_UP] > 0;
        bool separate_gate_up = f->fused[QS_FUSION_GATE_UP] < f->groups[QS_FUSION_GATE_UP] || c->llama4;
        if (grow(s, ops, &s->x, a * T * c->hidden_size, err) || grow(s, ops, &s->h, a * T * c->hidden_size, err) ||
            grow(s, ops, &s->q, a * T * qd, err) || grow(s, ops, &s->k, a * T * kvd, err) ||
            grow(s, ops, &s->v, a * T * kvd, err) ||
            grow_if(any_qkv, s, ops, &s->qkv, a * T * (qd + 2 * kvd), err) ||
            grow(s, ops, &s->attn, a * T * qd, err) || grow(s, ops, &s->o, a * T * c->hidden_size, err) ||
            grow_if(separate_gate_up, s, ops, &s->gate, a * T * inter, err) ||
            grow_if(separate_gate_up, s, ops, &s->up, a * T * inter, err) ||
            grow_if(any_gate_up, s, ops, &s->gate_up, a * T * 2 * inter, err) ||
            grow(s, ops, &s->act, a * T * inter, err) ||
            grow_if(c->llama4, s, ops, &s->moe_in, a * T * c->hidden_size, err) ||
            grow_if(c->llama4, s, ops, &s->shared, a * T * c->hidden_size, err) ||
            grow(s, ops, &s->router, a * T * experts, err) ||
            grow(s, ops, (void **)&s->topk_ids, sizeof(int32_t) * T * topk, err) ||
            grow(s, ops, (void **)&s->topk_w, sizeof(float) * T * topk, err) ||
            grow(s, ops, (void **)&s->d_ids, sizeof(int32_t) * T, err) ||
            grow(s, ops, (void **)&s->d_pos, sizeof(int32_t) * T, err) ||
            grow(s, ops, (void **)&s->d_seq, sizeof(int32_t) * T, err) ||
            grow(s, ops, (void **)&s->d_slots, sizeof(int32_t) * T, err) || grow_host(&s->h_ids, T, err) ||
            grow_host(&s->h_pos, T, err) || grow_host(&s->h_seq, T, err) || grow_host(&s->h_slots, T, err)) {
            qs_scratch_free(m);
            return qs_err_prefix(err, "step buffers for %lld tokens: ", (long long)T);
        }
        s->cap_tokens = T;
    }
    int64_t table = (int64_t)n_seqs * (max_blocks > 0 ? max_blocks : 1);
    if (table > s->cap_table) {
        if (grow(s, ops, (void **)&s->d_tables, sizeof(int32_t) * (size_t)table, err) ||
            grow_host(&s->h_tables, (size_t)table, err)) {
            qs_scratch_free(m);
            return qs_err_prefix(err, "block tables for %d sequences: ", n_seqs);
        }
        s->cap_table = table;
    }
    if (n_out > s->cap_out) {
        if (grow(s, ops, &s->out_rows, a * (size_t)n_out * c->hidden_size, err) ||
            grow(s, ops, &s->logits, a * (size_t)n_out * c->vocab_size, err) ||
            grow(s, ops, (void **)&s->d_sample, sizeof(qs_sample_row) * (size_t)n_out, err) ||
            grow(s, ops, (void **)&s->d_tokens, sizeof(int32_t) * (size_t)n_out, err) ||
            grow(s, ops, (void **)&s->d_out_rows, sizeof(int32_t) * (size_t)n_out, err) ||
            grow_host(&s->h_out_rows, (size_t)n_out, err)) {
            qs_scratch_free(m);
            return qs_err_prefix(err, "logits for %d sequences: ", n_out);
        }
        s->cap_out = n_out;
    }
    return 0;
}
