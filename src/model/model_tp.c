/* model_tp.c — the cutting of a model's weights at load to this rank's part of the tensor-parallel
 * layout (tp_layout.h; see model_tp.h): q/k/v and gate/up column-parallel, o and down row-parallel, the embedding and lm_head
 * vocab-parallel, every expert's gate/up and down like a dense MLP's (the router replicated; Llama
 * 4's shared expert cut like a dense MLP), and the communicator for device buffers (NCCL on
 * CUDA). The config is then made local (this rank's heads and MLP width), so the forward pass, the
 * scratch buffers and the KV cache (this rank's KV heads) need no other change. */
#include "model/model_tp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/backends.h"
#include "model/model_internal.h"
#include "model/model_weights.h"
#include "util/log.h"


static qs_comm *g_comm;

qs_comm *qs_tp_comm(int size, qs_err *err)
{
    if (size <= 1)
        return qs_comm_single();
    if (g_comm) {
        if (g_comm->size != size) {
            qs_errf(err, "--tensor-parallel-size %d, but this process already runs %d ranks", size, g_comm->size);
            return NULL;
        }
        return g_comm;
    }
    g_comm = qs_comm_mpi(size, err);
    if (g_comm) {
        char tag[32];
        snprintf(tag, sizeof tag, "rank %d", g_comm->rank);
        qs_log_set_tag(tag);
    }
    return g_comm;
}

qs_comm *qs_tp_comm_current(void) { return g_comm; }

void qs_tp_comm_shutdown(void)
{
    if (g_comm)
        g_comm->destroy(g_comm);
    g_comm = NULL;
}

static int shard(qs_model *m, qs_linear *l, qs_shard_dim dim, int64_t first, int64_t count, qs_err *err)
{
    l->shard = calloc(1, sizeof *l->shard);
    if (!l->shard)
        return qs_errf(err, "out of memory");
    int64_t full = dim == QS_SHARD_ROWS ? l->desc.n : l->desc.k;
    if (qs_linear_shard_make(&l->desc, dim, first, count, m->tp.rank == 0, l->shard, err))
        return qs_err_prefix(err, "--tensor-parallel-size %d, rank %d: ", m->tp.size, m->tp.rank);
    /* one line per layer kind, every rank: the first layer's and the lm_head */
    if (strstr(l->desc.name, "layers.0.") || strstr(l->desc.name, "lm_head") || strstr(l->desc.name, "embed_tokens")) {
        char d[96];
        qs_linear_shard_describe(&l->desc, dim, first, count, d, sizeof d);
        qs_info("tensor parallel: %s %s of %lld %s, %s", l->desc.name, d, (long long)full,
                dim == QS_SHARD_ROWS ? "(column-parallel)" : "(row-parallel)", qs_scheme_name(l->desc.scheme));
    }
    return 0;
}

int qs_tp_shard_attention(qs_model *m, qs_layer *L, qs_err *err)
{
    const qs_tp_layout *t = &m->tp;
    int64_t hd = m->mc.head_dim;
    return shard(m, &L->q, QS_SHARD_ROWS, t->q_head_first * hd, t->heads * hd, err) ||
                   shard(m, &L->k, QS_SHARD_ROWS, t->kv_head_first * hd, t->kv_heads * hd, err) ||
                   shard(m, &L->v, QS_SHARD_ROWS, t->kv_head_first * hd, t->kv_heads * hd, err) ||
                   shard(m, &L->o, QS_SHARD_COLS, t->q_head_first * hd, t->heads * hd, err)
               ? -1
               : 0;
}

int qs_tp_shard_mlp(qs_model *m, qs_layer *L, qs_err *err)
{
    const qs_tp_layout *t = &m->tp;
    return shard(m, &L->gate, QS_SHARD_ROWS, t->inter_first, t->inter, err) ||
                   shard(m, &L->up, QS_SHARD_ROWS, t->inter_first, t->inter, err) ||
                   shard(m, &L->down, QS_SHARD_COLS, t->inter_first, t->inter, err)
               ? -1
               : 0;
}

int qs_tp_shard_moe(qs_model *m, qs_layer *L, qs_err *err)
{
    qs_moe_layer *moe = &L->moe;
    const qs_tp_layout *t = &m->tp;
    int E = moe->desc.num_experts;
    moe->shards = calloc((size_t)E * 3, sizeof *moe->shards);
    if (!moe->shards)
        return qs_errf(err, "out of memory for the expert shards");
    for (int e = 0; e < E; e++) {
        qs_linear_desc *parts[3] = {&moe->gate[e], &moe->up[e], &moe->down[e]};
        for (int j = 0; j < 3; j++) {
            qs_shard_dim dim = j < 2 ? QS_SHARD_ROWS : QS_SHARD_COLS;
            int64_t full = dim == QS_SHARD_ROWS ? parts[j]->n : parts[j]->k;
            if (qs_linear_shard_make(parts[j], dim, t->moe_inter_first, t->moe_inter, t->rank == 0,
                                     &moe->shards[3 * e + j], err))
                return qs_err_prefix(err, "--tensor-parallel-size %d, rank %d: ", t->size, t->rank);
            if (e == 0 && strstr(parts[j]->name, "layers.0.")) {
                char d[96];
                qs_linear_shard_describe(parts[j], dim, t->moe_inter_first, t->moe_inter, d, sizeof d);
                qs_info("tensor parallel: %s %s of %lld (each of %d experts, %s), %s", parts[j]->name, d,
                        (long long)full, E, dim == QS_SHARD_ROWS ? "column-parallel" : "row-parallel",
                        qs_scheme_name(parts[j]->scheme));
            }
        }
    }
    moe->desc.inter = t->moe_inter;
    return 0;
}

int qs_tp_shard_feed_forward(qs_model *m, qs_layer *L, qs_err *err)
{
    const qs_tp_layout *t = &m->tp;
    if (!L->is_moe)
        return qs_tp_shard_mlp(m, L, err);
    if (!t->expert_parallel && qs_tp_shard_moe(m, L, err))
        return -1;
    if (!L->has_shared) /* Llama 4's shared expert: a dense MLP moe_intermediate_size wide */
        return 0;
    return shard(m, &L->sh_gate, QS_SHARD_ROWS, t->moe_inter_first, t->moe_inter, err) ||
                   shard(m, &L->sh_up, QS_SHARD_ROWS, t->moe_inter_first, t->moe_inter, err) ||
                   shard(m, &L->sh_down, QS_SHARD_COLS, t->moe_inter_first, t->moe_inter, err)
               ? -1
               : 0;
}

int qs_tp_expert_slice(qs_model *m, qs_err *err)
{
    const qs_tp_layout *t = &m->tp;
    for (int i = 0; i < m->mc.num_layers; i++) {
        qs_moe_layer *moe = &m->layers[i].moe;
        if (!m->layers[i].is_moe)
            continue;
        if (moe->desc.num_experts != m->mc.num_experts)
            return qs_errf(err, "layer %d has %d experts, config.json %d", i, moe->desc.num_experts,
                           m->mc.num_experts);
        moe->desc.gate = moe->gate + t->expert_first;
        moe->desc.up = moe->up + t->expert_first;
        moe->desc.down = moe->down + t->expert_first;
        moe->desc.num_experts = t->experts;
    }
    qs_info("tensor parallel: expert parallel, experts %d..%d of %d on rank %d (router replicated; other experts' "
            "routing slots weigh 0 here)",
            t->expert_first, t->expert_first + t->experts, m->mc.num_experts, t->rank);
    return 0;
}

int qs_tp_shard_lm_head(qs_model *m, qs_err *err)
{
    return shard(m, &m->lm_head, QS_SHARD_ROWS, m->tp.vocab_first, m->tp.vocab, err);
}

void *qs_tp_upload_embedding(qs_model *m, const char *name, qs_err *err)
{
    int64_t V = m->mc.vocab_size, H = m->mc.hidden_size, Vl = m->tp.vocab;
    const qs_tensor *t = qs_weights_find(m->ck, name, V, H, err);
    if (!t)
        return NULL;
    /* this rank's rows and one row of zeros, which every token outside them reads: the
     * all-reduce after the lookup then sums exactly one real row per token */
    size_t row = (size_t)H * (size_t)(qs_dtype_bits(t->dtype) / 8);
    uint8_t *rows = calloc((size_t)(Vl + 1), row);
    if (!rows) {
        qs_errf(err, "out of memory for the embedding shard");
        return NULL;
    }
    memcpy(rows, (const uint8_t *)t->data + (size_t)m->tp.vocab_first * row, (size_t)Vl * row);
    qs_tensor shard_t = *t;
    shard_t.shape[0] = Vl + 1;
    shard_t.numel = (Vl + 1) * H;
    shard_t.nbytes = (size_t)(Vl + 1) * row;
    shard_t.data = rows;
    void *dev = m->ops->upload_tensor(&shard_t, err);
    free(rows);
    if (dev)
        qs_info("tensor parallel: %s rows %lld..%lld of %lld (vocab-parallel) and a zero row", name,
                (long long)m->tp.vocab_first, (long long)(m->tp.vocab_first + Vl), (long long)V);
    return dev;
}

int32_t qs_tp_local_token(const qs_model *m, int32_t id)
{
    int64_t local = (int64_t)id - m->tp.vocab_first;
    return local >= 0 && local < m->tp.vocab ? (int32_t)local : (int32_t)m->tp.vocab;
}

void qs_tp_localize_config(qs_model *m)
{
    qs_info("tensor parallel rank %d of %d: attention heads %d..%d, KV heads %d..%d%s, MLP columns %lld..%lld, "
            "vocabulary %lld..%lld",
            m->tp.rank, m->tp.size, m->tp.q_head_first, m->tp.q_head_first + m->tp.heads, m->tp.kv_head_first,
            m->tp.kv_head_first + m->tp.kv_heads, m->tp.size > m->mc.num_kv_heads ? " (replicated)" : "",
            (long long)m->tp.inter_first, (long long)(m->tp.inter_first + m->tp.inter),
            (long long)m->tp.vocab_first, (long long)(m->tp.vocab_first + m->tp.vocab));
    m->mc.num_heads = m->tp.heads;
    m->mc.num_kv_heads = m->tp.kv_heads;
    m->mc.intermediate_size = (int)m->tp.inter;
    if (m->mc.num_experts > 0 && (!m->tp.expert_parallel || m->mc.llama4)) /* (Llama 4: its shared expert's) */
        m->mc.moe_intermediate_size = (int)m->tp.moe_inter;
}

int qs_tp_device_comm(qs_model *m, qs_err *err)
{
    m->dev_comm = m->comm;
    const qs_backend *b = qs_backend_for_platform(m->dev.platform);
    if (m->tp.size <= 1 || (b && !b->device_comm)) /* the host communicator serves this device's buffers */
        return 0;
    m->dev_comm = NULL;
    if (!b)
        return qs_errf(err, "--tensor-parallel-size %d on %s: no communicator for this device", m->tp.size,
                       m->dev.name);
    if (!(m->dev_comm = b->device_comm(m->comm, err)))
        return qs_err_prefix(err, "--tensor-parallel-size %d on %s: ", m->tp.size, m->dev.name);
    /* the step's collectives and their waits are not recorded into decode graphs (yet) */
    qs_info("tensor parallel: %s communicator, rank %d of %d on %s; steps run eagerly (no decode graphs), "
            "sampling on the host of rank 0",
            m->dev_comm->name, m->tp.rank, m->tp.size, m->dev.name);
    return 0;
}

void qs_tp_device_free(qs_model *m)
{
    if (m->tp_gather)
        m->ops->free(m->tp_gather);
    m->tp_gather = NULL;
    m->tp_gather_bytes = 0;
    if (m->dev_comm && m->dev_comm != m->comm)
        m->dev_comm->destroy(m->dev_comm);
    m->dev_comm = NULL;
}

int qs_model_tp_rank(const qs_model *m) { return m->tp.rank; }
int qs_model_tp_size(const qs_model *m) { return m->tp.size; }
