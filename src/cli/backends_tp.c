/* backends_tp.c — the tensor-parallel part of `qserve backends` (see backends_tp.h). The shards
 * are cut by the loader's own code (model_tp's layout, quant/linear_shard) on header-only
 * descriptions, so a shape serve would refuse is refused here with the same message. */
#include "cli/backends_tp.h"

#include <string.h>

#include "model/model_tp.h"
#include "quant/linear_desc.h"
#include "quant/linear_shard.h"
#include "registry/registry.h"

typedef struct {
    const char *module; /* under model.layers.0 */
    qs_shard_dim dim;
} tp_part;

static const tp_part PARTS[] = {
    {"self_attn.q_proj", QS_SHARD_ROWS}, {"self_attn.k_proj", QS_SHARD_ROWS}, {"self_attn.v_proj", QS_SHARD_ROWS},
    {"self_attn.o_proj", QS_SHARD_COLS}, {"mlp.gate_proj", QS_SHARD_ROWS},    {"mlp.up_proj", QS_SHARD_ROWS},
    {"mlp.down_proj", QS_SHARD_COLS},
};

static void range_of(const qs_tp_layout *t, int64_t hd, const char *module, int64_t *first, int64_t *count)
{
    if (strstr(module, "q_proj") || strstr(module, "o_proj")) {
        *first = t->q_head_first * hd;
        *count = t->heads * hd;
    } else if (strstr(module, "k_proj") || strstr(module, "v_proj")) {
        *first = t->kv_head_first * hd;
        *count = t->kv_heads * hd;
    } else if (strstr(module, "mlp.")) {
        *first = t->inter_first;
        *count = t->inter;
    } else {
        *first = t->vocab_first;
        *count = t->vocab;
    }
}

/* One projection's shard on one rank: its shape and the kernel chosen for it. */
static int print_part(FILE *out, const qs_kernel_config *kc, const qs_device_caps *dev, const qs_backends_model *m,
                      const qs_tp_layout *t, const char *module, qs_shard_dim dim)
{
    qs_err err;
    qs_linear_desc d;
    qs_linear_shard sh;
    int64_t first, count;
    range_of(t, m->mc.head_dim, module, &first, &count);
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
    int rc = qs_registry_select_for_layers(kc, dev, QS_KIND_LINEAR, d.scheme, one, 1, NULL, 0, &sel, &err);
    fprintf(out, "    %-32s %-34s of %-6lld %-17s %-14s kernel %s\n", module, shape, (long long)full,
            dim == QS_SHARD_ROWS ? "column-parallel" : "row-parallel", qs_scheme_name(d.scheme),
            rc ? "none" : sel.kernel->name);
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
        if (qs_tp_layout_plan(&m->mc, r, tp, &t, &err)) {
            fprintf(out, "  %s\n", err.msg);
            return 1;
        }
        fprintf(out, "  rank %d of %d: attention heads %d..%d, KV heads %d..%d%s, MLP columns %lld..%lld, vocabulary "
                     "%lld..%lld\n",
                r, tp, t.q_head_first, t.q_head_first + t.heads, t.kv_head_first, t.kv_head_first + t.kv_heads,
                tp > m->mc.num_kv_heads ? " (replicated)" : "", (long long)t.inter_first,
                (long long)(t.inter_first + t.inter), (long long)t.vocab_first, (long long)(t.vocab_first + t.vocab));
        char name[200];
        for (size_t i = 0; i < sizeof PARTS / sizeof *PARTS; i++) {
            snprintf(name, sizeof name, "%smodel.layers.0.%s", m->mc.tensor_prefix, PARTS[i].module);
            rc |= print_part(out, kc, dev, m, &t, name, PARTS[i].dim);
        }
        snprintf(name, sizeof name, "%slm_head", m->mc.tensor_prefix);
        if (m->mc.tie_word_embeddings || !qs_checkpoint_find(m->ck, "lm_head.weight"))
            snprintf(name, sizeof name, "%smodel.embed_tokens", m->mc.tensor_prefix);
        rc |= print_part(out, kc, dev, m, &t, name, QS_SHARD_ROWS);
    }
    return rc;
}
