/* backends_tp.c — the tensor-parallel part of `qserve backends` (see backends_tp.h). The shards
 * are cut by the loader's own code (model_tp's layout, quant/linear_shard) on header-only
 * descriptions, so a shape serve would refuse is refused here with the same message. */
#include "cli/backends_tp.h"

#include <stdbool.h>
#include <string.h>

#include "model/model_tp.h"
#include "quant/linear_desc.h"
#include "quant/linear_shard.h"
#include "registry/registry.h"

typedef enum { PART_Q, PART_KV, PART_MLP, PART_EXPERT, PART_VOCAB } part_kind;

static void range_of(const qs_tp_layout *t, int64_t hd, part_kind kind, int64_t *first, int64_t *count)
{
    switch (kind) {
    case PART_Q:
        *first = t->q_head_first * hd;
        *count = t->heads * hd;
        break;
    case PART_KV:
        *first = t->kv_head_first * hd;
        *count = t->kv_heads * hd;
        break;
    case PART_MLP:
        *first = t->inter_first;
        *count = t->inter;
        break;
    case PART_EXPERT:
        *first = t->moe_inter_first;
        *count = t->moe_inter;
        break;
    default:
        *first = t->vocab_first;
        *count = t->vocab;
    }
}

/* One projection's shard on one rank: its shape and the kernel chosen for it. */
static int print_part(FILE *out, const qs_kernel_config *kc, const qs_device_caps *dev, const qs_backends_model *m,
                      const qs_tp_layout *t, const char *module, part_kind kind, qs_shard_dim dim)
{
    qs_err err;
    qs_linear_desc d;
    qs_linear_shard sh;
    int64_t first, count;
    range_of(t, m->mc.head_dim, kind, &first, &count);
    if (qs_linear_desc_build(m->ck, m->has_qc ? &m->qc : NULL, module, &d, &err)) {
        fprintf(out, "    %s: %s\n", module, err.msg);
        return 1;
    }
    int64_t full = dim == QS_SHARD_ROWS ? d.n : d.k;
    if (qs_linear_shard_make(&d, dim, first, count, t->rank == 0, &sh, &err)) {
        fprintf(out, "    %s: %s\n", module, err.msg);
        return 1;
    }
    char shape[96];
    qs_linear_shard_describe(&d, dim, first, count, shape, sizeof shape);
    const qs_linear_desc *one[1] = {&d};
    qs_selection sel;
    /* experts run in the MoE kernel of the table above, over every expert's shard alike */
    int rc = kind == PART_EXPERT ? 0
                                 : qs_registry_select_for_layers(kc, dev, QS_KIND_LINEAR, d.scheme, one, 1, NULL, 0,
                                                                 &sel, &err);
    fprintf(out, "    %-44s %-30s of %-6lld %-16s %-14s kernel %s\n", module, shape, (long long)full,
            dim == QS_SHARD_ROWS ? "column-parallel" : "row-parallel", qs_scheme_name(d.scheme),
            kind == PART_EXPERT ? "(the MoE kernel)" : rc ? "none" : sel.kernel->name);
    qs_linear_shard_free(&sh);
    return rc ? 1 : 0;
}

int qs_backends_print_tp(FILE *out, const qs_kernel_config *kc, const qs_device_caps *dev, const qs_backends_model *m,
                         int tp)
{
    fprintf(out, "\ntensor parallel (--tensor-parallel-size %d), layer 0 and the lm_head per rank:\n", tp);
    int rc = 0;
    for (int r = 0; r < tp; r++) {
        qs_tp_layout t;
        qs_err err;
        if (qs_tp_layout_plan(&m->mc, r, tp, false, &t, &err)) {
            fprintf(out, "  %s\n", err.msg);
            return 1;
        }
        fprintf(out, "  rank %d of %d: attention heads %d..%d, KV heads %d..%d%s, MLP columns %lld..%lld, vocabulary "
                     "%lld..%lld\n",
                r, tp, t.q_head_first, t.q_head_first + t.heads, t.kv_head_first, t.kv_head_first + t.kv_heads,
                tp > m->mc.num_kv_heads ? " (replicated)" : "", (long long)t.inter_first,
                (long long)(t.inter_first + t.inter), (long long)t.vocab_first, (long long)(t.vocab_first + t.vocab));
        /* layer 0: attention, then its dense MLP or expert 0 (every expert is cut alike) */
        bool moe = m->mc.num_experts > 0 && qs_model_layer_is_moe(&m->mc, 0);
        bool mixtral = m->mc.arch == QS_ARCH_MIXTRAL;
        const char *mlp = moe ? (mixtral ? "block_sparse_moe.experts.0." : "mlp.experts.0.") : "mlp.";
        part_kind mk = moe ? PART_EXPERT : PART_MLP;
        struct {
            const char *block, *proj;
            part_kind kind;
            qs_shard_dim dim;
        } parts[] = {
            {"self_attn.", "q_proj", PART_Q, QS_SHARD_ROWS},
            {"self_attn.", "k_proj", PART_KV, QS_SHARD_ROWS},
            {"self_attn.", "v_proj", PART_KV, QS_SHARD_ROWS},
            {"self_attn.", "o_proj", PART_Q, QS_SHARD_COLS},
            {mlp, moe && mixtral ? "w1" : "gate_proj", mk, QS_SHARD_ROWS},
            {mlp, moe && mixtral ? "w3" : "up_proj", mk, QS_SHARD_ROWS},
            {mlp, moe && mixtral ? "w2" : "down_proj", mk, QS_SHARD_COLS},
        };
        char name[200];
        for (size_t i = 0; i < sizeof parts / sizeof *parts; i++) {
            snprintf(name, sizeof name, "%smodel.layers.0.%s%s", m->mc.tensor_prefix, parts[i].block, parts[i].proj);
            rc |= print_part(out, kc, dev, m, &t, name, parts[i].kind, parts[i].dim);
        }
        snprintf(name, sizeof name, "%slm_head", m->mc.tensor_prefix);
        if (m->mc.tie_word_embeddings || !qs_checkpoint_find(m->ck, "lm_head.weight"))
            snprintf(name, sizeof name, "%smodel.embed_tokens", m->mc.tensor_prefix);
        rc |= print_part(out, kc, dev, m, &t, name, PART_VOCAB, QS_SHARD_ROWS);
    }
    return rc;
}
