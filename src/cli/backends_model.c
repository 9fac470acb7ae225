/* backends_model.c — reads a model directory for `qserve backends` (see backends_model.h):
 * headers only, so a 200 GB checkpoint is described in milliseconds, and every tensor name and
 * shape is still validated by the safetensors and quant layers before the registry sees it. */
#include "cli/backends_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quant/linear_desc.h"

static int add_linear(qs_backends_model *m, const char *module, qs_err *err)
{
    if (qs_linear_desc_build(m->ck, m->has_qc ? &m->qc : NULL, module, &m->linears[m->n_linears], err))
        return -1;
    m->n_linears++;
    return 0;
}

static int add_layer(qs_backends_model *m, int i, qs_err *err)
{
    const qs_model_config *c = &m->mc;
    static const char *const attn[] = {"q_proj", "k_proj", "v_proj", "o_proj"};
    char name[200];
    for (int j = 0; j < 4; j++) {
        snprintf(name, sizeof name, "model.layers.%d.self_attn.%s", i, attn[j]);
        if (add_linear(m, name, err))
            return -1;
    }
    if (!qs_model_layer_is_moe(c, i)) {
        static const char *const mlp[] = {"gate_proj", "up_proj", "down_proj"};
        for (int j = 0; j < 3; j++) {
            snprintf(name, sizeof name, "model.layers.%d.mlp.%s", i, mlp[j]);
            if (add_linear(m, name, err))
                return -1;
        }
        return 0;
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

int qs_backends_model_open(const char *dir, qs_backends_model *m, qs_err *err)
{
    memset(m, 0, sizeof *m);
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
    m->linears = calloc((size_t)L * 7 + 1, sizeof *m->linears);
    m->moes = calloc((size_t)L, sizeof *m->moes);
    if (!m->linears || !m->moes) {
        qs_backends_model_close(m);
        return qs_errf(err, "out of memory describing %d layers", L);
    }
    for (int i = 0; i < L; i++)
        if (add_layer(m, i, err)) {
            qs_backends_model_close(m);
            return -1;
        }
    if (!m->mc.tie_word_embeddings || qs_checkpoint_find(m->ck, "lm_head.weight") ||
        qs_checkpoint_find(m->ck, "lm_head.weight_packed")) {
        if (add_linear(m, "lm_head", err)) {
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
    if (m->ck)
        qs_checkpoint_close(m->ck);
    if (m->has_qc)
        qs_quant_config_free(&m->qc);
    if (m->has_mc)
        qs_model_config_free(&m->mc);
    memset(m, 0, sizeof *m);
}
