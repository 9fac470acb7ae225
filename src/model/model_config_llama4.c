/* model_config_llama4.c — Llama 4's text config (transformers' Llama4TextConfig): the text_config
 * of Llama4ForConditionalGeneration (vision_config is not read: qserve serves the text model) or
 * the top level of Llama4ForCausalLM. Beyond the Llama shape fields it reads iRoPE (no_rope_layers,
 * attention_chunk_size), the NoPE temperature tuning (attn_temperature_tuning, floor_scale,
 * attn_scale), use_qk_norm, the MoE layout (num_local_experts, num_experts_per_tok,
 * interleave_moe_layer_step or moe_layers, intermediate_size for experts and the shared expert,
 * intermediate_size_mlp for dense layers). Defaults are Llama4TextConfig's; a value qserve does
 * not implement is an error naming the field. */
#include "model/model_config_llama4.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "model/model_config_json.h"

/* A list of 0/1 flags, one per layer (no_rope_layers). */
static int layer_flags(qs_cfg_ctx *c, const cJSON *v, const char *key, int n_layers, unsigned char *out)
{
    if (!cJSON_IsArray(v))
        return qs_errf(c->err, "%s: field '%s' must be a list, got %s", c->fname, key, qs_cfg_type_of(v));
    int i = 0;
    for (const cJSON *e = v->child; e; e = e->next, i++) {
        if (i >= n_layers)
            return qs_errf(c->err, "%s: field '%s' has more entries than the %d layers", c->fname, key, n_layers);
        if (!qs_cfg_is_int(e) || (e->valuedouble != 0 && e->valuedouble != 1))
            return qs_errf(c->err, "%s: field '%s[%d]' must be 0 or 1", c->fname, key, i);
        out[i] = (unsigned char)e->valuedouble;
    }
    if (i != n_layers)
        return qs_errf(c->err, "%s: field '%s' has %d entries for %d layers", c->fname, key, i, n_layers);
    return 0;
}

static int parse_layers(qs_cfg_ctx *c, const cJSON *t, qs_model_config *cfg)
{
    int L = cfg->num_layers;
    if (L > QS_MAX_LAYERS)
        return qs_errf(c->err, "%s: field 'num_hidden_layers' is %d; at most %d are supported", c->fname, L,
                       QS_MAX_LAYERS);
    /* no_rope_layers: 1 = the layer uses RoPE. Absent or empty: every no_rope_layer_interval-th is NoPE. */
    const cJSON *nr = qs_cfg_field(t, "no_rope_layers");
    if (nr && !(cJSON_IsArray(nr) && !nr->child)) {
        if (layer_flags(c, nr, "no_rope_layers", L, cfg->layer_rope))
            return -1;
    } else {
        int interval = 4;
        if (qs_cfg_get_pos_int(c, t, "no_rope_layer_interval", false, &interval) < 0)
            return -1;
        for (int i = 0; i < L; i++)
            cfg->layer_rope[i] = (i + 1) % interval != 0;
    }
    /* layer_types (newer transformers writes it): must agree with no_rope_layers, RoPE layers being
     * "chunked_attention" (when there is a chunk) and NoPE ones "full_attention" */
    const cJSON *lt = qs_cfg_field(t, "layer_types");
    if (lt) {
        if (!cJSON_IsArray(lt) || cJSON_GetArraySize(lt) != L)
            return qs_errf(c->err, "%s: field 'layer_types' must be a list of %d layer types", c->fname, L);
        int i = 0;
        for (const cJSON *e = lt->child; e; e = e->next, i++) {
            bool chunked = cJSON_IsString(e) && !strcmp(e->valuestring, "chunked_attention");
            bool full = cJSON_IsString(e) && !strcmp(e->valuestring, "full_attention");
            if (!chunked && !full)
                return qs_errf(c->err, "%s: field 'layer_types[%d]' must be \"chunked_attention\" or "
                                       "\"full_attention\"", c->fname, i);
            if (chunked != (cfg->layer_rope[i] && cfg->attention_chunk_size > 0))
                return qs_errf(c->err, "%s: field 'layer_types[%d]' is \"%s\" but no_rope_layers and "
                                       "attention_chunk_size make layer %d %s", c->fname, i, e->valuestring, i,
                               chunked ? "full attention" : "chunked");
        }
    }
    /* moe_layers, else every interleave_moe_layer_step-th layer (step - 1, 2 step - 1, ...). */
    int step = 1;
    if (qs_cfg_get_pos_int(c, t, "interleave_moe_layer_step", false, &step) < 0)
        return -1;
    cfg->decoder_sparse_step = step;
    const cJSON *ml = qs_cfg_field(t, "moe_layers");
    if (ml) {
        if (!cJSON_IsArray(ml))
            return qs_errf(c->err, "%s: field 'moe_layers' must be a list of layer indices, got %s", c->fname,
                           qs_cfg_type_of(ml));
        int i = 0;
        for (const cJSON *e = ml->child; e; e = e->next, i++) {
            if (!qs_cfg_is_int(e) || e->valuedouble < 0 || e->valuedouble >= L)
                return qs_errf(c->err, "%s: field 'moe_layers[%d]' must be a layer index in [0, %d)", c->fname, i, L);
            cfg->layer_moe[(int)e->valuedouble] = 1;
        }
    } else {
        for (int i = step - 1; i < L; i += step)
            cfg->layer_moe[i] = 1;
    }
    return 0;
}

static int parse_text(qs_cfg_ctx *c, const cJSON *root, const cJSON *t, qs_model_config *cfg)
{
    cfg->llama4 = true;
    if (qs_cfg_get_pos_int(c, t, "vocab_size", true, &cfg->vocab_size) < 0 ||
        qs_cfg_get_pos_int(c, t, "hidden_size", true, &cfg->hidden_size) < 0 ||
        qs_cfg_get_pos_int(c, t, "num_hidden_layers", true, &cfg->num_layers) < 0 ||
        qs_cfg_get_pos_int(c, t, "num_attention_heads", true, &cfg->num_heads) < 0)
        return -1;
    cfg->num_kv_heads = 8;
    cfg->head_dim = cfg->hidden_size / cfg->num_heads;
    cfg->moe_intermediate_size = 8192;
    cfg->intermediate_size = 16384;
    cfg->max_position_embeddings = 4096 * 32;
    double eps = 1e-5;
    if (qs_cfg_get_pos_int(c, t, "num_key_value_heads", false, &cfg->num_kv_heads) < 0 ||
        qs_cfg_get_pos_int(c, t, "head_dim", false, &cfg->head_dim) < 0 ||
        qs_cfg_get_pos_int(c, t, "intermediate_size", false, &cfg->moe_intermediate_size) < 0 ||
        qs_cfg_get_pos_int(c, t, "intermediate_size_mlp", false, &cfg->intermediate_size) < 0 ||
        qs_cfg_get_pos_int(c, t, "max_position_embeddings", false, &cfg->max_position_embeddings) < 0 ||
        qs_cfg_get_num(c, t, "", "rms_norm_eps", false, &eps) < 0)
        return -1;
    if (cfg->num_heads % cfg->num_kv_heads)
        return qs_errf(c->err, "%s: field 'num_attention_heads' (%d) is not a multiple of 'num_key_value_heads' (%d)",
                       c->fname, cfg->num_heads, cfg->num_kv_heads);
    if (cfg->head_dim <= 0 || cfg->head_dim % 2)
        return qs_errf(c->err, "%s: field 'head_dim' must be even and positive, got %d", c->fname, cfg->head_dim);
    if (!(eps > 0) || eps > 1)
        return qs_errf(c->err, "%s: field 'rms_norm_eps' must be in (0, 1], got %g", c->fname, eps);
    cfg->rms_norm_eps = (float)eps;
    cfg->rope_theta = 500000.0;
    if (qs_cfg_parse_rope(c, t, cfg))
        return -1;

    char act[32] = "silu";
    if (qs_cfg_get_str(c, t, "hidden_act", act, sizeof act) < 0)
        return -1;
    if (strcmp(act, "silu"))
        return qs_errf(c->err, "%s: field 'hidden_act' is '%s'; only 'silu' (SwiGLU) is supported", c->fname, act);
    bool bias = false;
    if (qs_cfg_get_bool(c, t, "attention_bias", &bias) < 0)
        return -1;
    if (bias)
        return qs_errf(c->err, "%s: field 'attention_bias' is true; Llama 4 attention biases are not supported",
                       c->fname);
    /* tie_word_embeddings: the text config's, else the top level's (default false) */
    if (qs_cfg_get_bool(c, t, "tie_word_embeddings", &cfg->tie_word_embeddings) == 0 && t != root &&
        qs_cfg_get_bool(c, root, "tie_word_embeddings", &cfg->tie_word_embeddings) < 0)
        return -1;

    /* iRoPE */
    cfg->attention_chunk_size = 8192;
    const cJSON *ch = qs_cfg_field(t, "attention_chunk_size");
    if (!ch && cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(t, "attention_chunk_size")))
        cfg->attention_chunk_size = 0; /* written as null: no chunking */
    else if (qs_cfg_get_pos_int(c, t, "attention_chunk_size", false, &cfg->attention_chunk_size) < 0)
        return -1;
    if (parse_layers(c, t, cfg))
        return -1;
    cfg->l2_qk_norm = true;
    if (qs_cfg_get_bool(c, t, "use_qk_norm", &cfg->l2_qk_norm) < 0)
        return -1;
    /* attn_temperature_tuning: a boolean, or (early releases) a number read for its truth */
    cfg->attn_temperature_tuning = true;
    const cJSON *tt = qs_cfg_field(t, "attn_temperature_tuning");
    if (tt && cJSON_IsNumber(tt))
        cfg->attn_temperature_tuning = tt->valuedouble != 0;
    else if (qs_cfg_get_bool(c, t, "attn_temperature_tuning", &cfg->attn_temperature_tuning) < 0)
        return -1;
    cfg->floor_scale = 8192;
    cfg->attn_scale = 0.1;
    if (qs_cfg_get_num(c, t, "", "floor_scale", false, &cfg->floor_scale) < 0 ||
        qs_cfg_get_num(c, t, "", "attn_scale", false, &cfg->attn_scale) < 0)
        return -1;
    if (!(cfg->floor_scale >= 1) || !isfinite(cfg->attn_scale))
        return qs_errf(c->err, "%s: fields 'floor_scale' (%g) must be >= 1 and 'attn_scale' (%g) finite", c->fname,
                       cfg->floor_scale, cfg->attn_scale);

    /* MoE */
    cfg->num_experts = 16;
    cfg->num_experts_per_tok = 1;
    if (qs_cfg_get_pos_int(c, t, "num_local_experts", false, &cfg->num_experts) < 0 ||
        qs_cfg_get_pos_int(c, t, "num_experts_per_tok", false, &cfg->num_experts_per_tok) < 0)
        return -1;
    if (cfg->num_experts_per_tok != 1)
        return qs_errf(c->err, "%s: field 'num_experts_per_tok' is %d; Llama 4 is implemented for top-1 routing "
                               "(Scout and Maverick) only", c->fname, cfg->num_experts_per_tok);

    cfg->bos_token_id = -1;
    const cJSON *ids_from = qs_cfg_field(t, "eos_token_id") ? t : root;
    if (qs_cfg_get_int(c, qs_cfg_field(t, "bos_token_id") ? t : root, "", "bos_token_id", false, &cfg->bos_token_id) < 0 ||
        qs_cfg_get_ids(c, ids_from, "eos_token_id", cfg->eos_token_ids, &cfg->n_eos) < 0)
        return -1;
    int rc = qs_cfg_get_str(c, root, "torch_dtype", cfg->torch_dtype, sizeof cfg->torch_dtype);
    if (rc == 0)
        rc = qs_cfg_get_str(c, t, "torch_dtype", cfg->torch_dtype, sizeof cfg->torch_dtype);
    return rc < 0 ? -1 : 0;
}

int qs_model_config_parse_llama4(const void *root_json, const char *fname, qs_model_config *cfg, qs_err *err)
{
    const cJSON *root = root_json;
    qs_cfg_ctx c = {fname, err};
    if (cfg->arch == QS_ARCH_LLAMA4_TEXT)
        return parse_text(&c, root, root, cfg);
    const cJSON *t = qs_cfg_field(root, "text_config");
    if (!t || !cJSON_IsObject(t))
        return qs_errf(err, "%s: Llama4ForConditionalGeneration needs a 'text_config' object", fname);
    snprintf(cfg->tensor_prefix, sizeof cfg->tensor_prefix, "language_model.");
    char where[600];
    snprintf(where, sizeof where, "%s (text_config)", fname);
    c.fname = where;
    return parse_text(&c, root, t, cfg);
}
