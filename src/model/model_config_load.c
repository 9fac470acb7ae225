/* model_config_load.c — reads config.json and generation_config.json (model_config_load.h).
 *
 * One table-free reader for the six supported architectures; where they differ (defaults, MoE
 * keys, Qwen2's implicit q/k/v bias, Qwen3's q/k norm) the code says so inline. Shape fields are
 * required; everything else falls back to the transformers default of that architecture. JSON
 * null counts as absent (transformers writes `"head_dim": null`, `"rope_scaling": null`). A field
 * of the wrong type, a missing required field, an unsupported architecture or rope scaling type is
 * an error naming the file and the field (../shared/reference/checkpoint-formats.md §7). Llama 4
 * (text_config, iRoPE, its MoE layout) is read by model_config_llama4.c with the same field readers
 * (model_config_json.h). */
#include "model/model_config_load.h"

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/model_config_json.h"
#include "model/model_config_llama4.h"
#include "util/fileio.h"

/* ---- config.json ---------------------------------------------------------------------------- */

static int parse_moe(qs_cfg_ctx *c, const cJSON *root, qs_model_config *cfg)
{
    bool qwen = cfg->arch == QS_ARCH_QWEN3_MOE;
    /* Expert count: Qwen3-MoE writes num_experts, Mixtral num_local_experts; accept either. */
    int rc = qs_cfg_get_pos_int(c, root, qwen ? "num_experts" : "num_local_experts", false, &cfg->num_experts);
    if (rc == 0)
        rc = qs_cfg_get_pos_int(c, root, qwen ? "num_local_experts" : "num_experts", false, &cfg->num_experts);
    if (rc < 0)
        return -1;
    if (rc == 0)
        return qs_errf(c->err, "%s: required field '%s' is missing", c->fname, qwen ? "num_experts" : "num_local_experts");
    if (qs_cfg_get_pos_int(c, root, "num_experts_per_tok", true, &cfg->num_experts_per_tok) < 0)
        return -1;
    if (cfg->num_experts_per_tok > cfg->num_experts)
        return qs_errf(c->err, "%s: field 'num_experts_per_tok' (%d) exceeds the number of experts (%d)", c->fname,
                       cfg->num_experts_per_tok, cfg->num_experts);
    if (!qwen) { /* Mixtral: every layer MoE, expert width = intermediate_size, always renormalised */
        cfg->moe_intermediate_size = cfg->intermediate_size;
        cfg->norm_topk_prob = true;
        cfg->decoder_sparse_step = 1;
        return 0;
    }
    if (qs_cfg_get_pos_int(c, root, "moe_intermediate_size", true, &cfg->moe_intermediate_size) < 0)
        return -1;
    cfg->norm_topk_prob = false; /* Qwen3MoeConfig default */
    cfg->decoder_sparse_step = 1;
    if (qs_cfg_get_bool(c, root, "norm_topk_prob", &cfg->norm_topk_prob) < 0 ||
        qs_cfg_get_pos_int(c, root, "decoder_sparse_step", false, &cfg->decoder_sparse_step) < 0)
        return -1;
    const cJSON *m = qs_cfg_field(root, "mlp_only_layers");
    if (m) {
        if (!cJSON_IsArray(m))
            return qs_errf(c->err, "%s: field 'mlp_only_layers' must be a list of layer indices, got %s", c->fname, qs_cfg_type_of(m));
        int i = 0;
        for (const cJSON *e = m->child; e; e = e->next, i++) {
            if (!qs_cfg_is_int(e) || e->valuedouble < 0 || e->valuedouble >= cfg->num_layers)
                return qs_errf(c->err, "%s: field 'mlp_only_layers[%d]' must be a layer index in [0, %d)", c->fname, i,
                               cfg->num_layers);
            if (cfg->n_mlp_only_layers == (int)(sizeof cfg->mlp_only_layers / sizeof cfg->mlp_only_layers[0]))
                return qs_errf(c->err, "%s: field 'mlp_only_layers' lists more than %zu layers", c->fname,
                               sizeof cfg->mlp_only_layers / sizeof cfg->mlp_only_layers[0]);
            cfg->mlp_only_layers[cfg->n_mlp_only_layers++] = (int)e->valuedouble;
        }
    }
    return 0;
}

static int parse_quantization(qs_cfg_ctx *c, const cJSON *root, qs_model_config *cfg);

static int parse_config(qs_cfg_ctx *c, const cJSON *root, qs_model_config *cfg)
{
    if (!cJSON_IsObject(root))
        return qs_errf(c->err, "%s: not a JSON object", c->fname);

    /* Architecture. */
    const cJSON *archs = qs_cfg_field(root, "architectures");
    if (!archs)
        return qs_errf(c->err, "%s: required field 'architectures' is missing (supported: %s)", c->fname,
                       qs_supported_architectures());
    if (!cJSON_IsArray(archs) || !cJSON_IsString(archs->child))
        return qs_errf(c->err, "%s: field 'architectures' must be a list of class names like [\"LlamaForCausalLM\"]",
                       c->fname);
    const char *an = archs->child->valuestring;
    int arch = -1;
    for (int i = 0; i < QS_ARCH_COUNT; i++)
        if (!strcmp(an, qs_arch_name((qs_arch)i)))
            arch = i;
    if (arch < 0)
        return qs_errf(c->err, "%s: architecture '%.64s' is not supported (supported: %s)", c->fname, an,
                       qs_supported_architectures());
    cfg->arch = (qs_arch)arch;
    snprintf(cfg->arch_name, sizeof cfg->arch_name, "%s", an);
    if (qs_cfg_get_str(c, root, "model_type", cfg->model_type, sizeof cfg->model_type) < 0)
        return -1;
    if (arch == QS_ARCH_LLAMA4 || arch == QS_ARCH_LLAMA4_TEXT)
        return qs_model_config_parse_llama4(root, c->fname, cfg, c->err) ? -1 : parse_quantization(c, root, cfg);
    bool qwen2 = arch == QS_ARCH_QWEN2, qwen3 = arch == QS_ARCH_QWEN3 || arch == QS_ARCH_QWEN3_MOE;
    bool mixtral = arch == QS_ARCH_MIXTRAL;

    /* Shapes: required. */
    if (qs_cfg_get_pos_int(c, root, "vocab_size", true, &cfg->vocab_size) < 0 ||
        qs_cfg_get_pos_int(c, root, "hidden_size", true, &cfg->hidden_size) < 0 ||
        qs_cfg_get_pos_int(c, root, "intermediate_size", true, &cfg->intermediate_size) < 0 ||
        qs_cfg_get_pos_int(c, root, "num_hidden_layers", true, &cfg->num_layers) < 0 ||
        qs_cfg_get_pos_int(c, root, "num_attention_heads", true, &cfg->num_heads) < 0)
        return -1;
    int rc = qs_cfg_get_pos_int(c, root, "num_key_value_heads", false, &cfg->num_kv_heads);
    if (rc < 0)
        return -1;
    if (rc == 0)
        cfg->num_kv_heads = cfg->num_heads;
    if (cfg->num_heads % cfg->num_kv_heads)
        return qs_errf(c->err, "%s: field 'num_attention_heads' (%d) is not a multiple of 'num_key_value_heads' (%d)",
                       c->fname, cfg->num_heads, cfg->num_kv_heads);
    rc = qs_cfg_get_pos_int(c, root, "head_dim", false, &cfg->head_dim);
    if (rc < 0)
        return -1;
    if (rc == 0) {
        if (cfg->hidden_size % cfg->num_heads)
            return qs_errf(c->err, "%s: field 'head_dim' is missing and hidden_size %d is not a multiple of "
                                   "num_attention_heads %d", c->fname, cfg->hidden_size, cfg->num_heads);
        cfg->head_dim = cfg->hidden_size / cfg->num_heads;
    }
    if (cfg->head_dim % 2)
        return qs_errf(c->err, "%s: field 'head_dim' must be even for rotary embeddings, got %d", c->fname, cfg->head_dim);

    /* Defaults of each transformers config class. */
    double eps = mixtral ? 1e-5 : 1e-6;
    cfg->rope_theta = mixtral ? 1e6 : 10000.0;
    cfg->max_position_embeddings = arch == QS_ARCH_LLAMA ? 2048 : (arch == QS_ARCH_MISTRAL || mixtral) ? 131072 : 32768;
    if (qs_cfg_get_num(c, root, "", "rms_norm_eps", false, &eps) < 0 ||
        qs_cfg_get_pos_int(c, root, "max_position_embeddings", false, &cfg->max_position_embeddings) < 0)
        return -1;
    if (!(eps > 0) || eps > 1)
        return qs_errf(c->err, "%s: field 'rms_norm_eps' must be in (0, 1], got %g", c->fname, eps);
    cfg->rms_norm_eps = (float)eps;
    if (qs_cfg_parse_rope(c, root, cfg))
        return -1;

    char act[32] = "silu";
    if (qs_cfg_get_str(c, root, "hidden_act", act, sizeof act) < 0)
        return -1;
    if (strcmp(act, "silu"))
        return qs_errf(c->err, "%s: field 'hidden_act' is '%s'; only 'silu' (SwiGLU) is supported", c->fname, act);

    cfg->tie_word_embeddings = false;
    if (qs_cfg_get_bool(c, root, "tie_word_embeddings", &cfg->tie_word_embeddings) < 0)
        return -1;
    /* Qwen2 hard-codes bias=True on q/k/v; the others follow attention_bias (default false). */
    cfg->attention_bias = qwen2;
    if (!qwen2 && qs_cfg_get_bool(c, root, "attention_bias", &cfg->attention_bias) < 0)
        return -1;
    bool mlp_bias = false;
    if (qs_cfg_get_bool(c, root, "mlp_bias", &mlp_bias) < 0)
        return -1;
    if (mlp_bias)
        return qs_errf(c->err, "%s: field 'mlp_bias' is true; MLP biases are not supported", c->fname);
    cfg->qk_norm = qwen3;

    /* Sliding window: Mistral/Mixtral use sliding_window when set; Qwen only with use_sliding_window,
     * and then only above max_window_layers, which qserve does not model. */
    cfg->sliding_window = 0;
    if (qwen2 || qwen3) {
        bool use = false;
        if (qs_cfg_get_bool(c, root, "use_sliding_window", &use) < 0)
            return -1;
        if (use)
            return qs_errf(c->err, "%s: field 'use_sliding_window' is true; per-layer sliding window attention "
                                   "(max_window_layers) is not supported", c->fname);
    } else if (arch != QS_ARCH_LLAMA) {
        if (qs_cfg_get_int(c, root, "", "sliding_window", false, &cfg->sliding_window) < 0)
            return -1;
        if (cfg->sliding_window < 0)
            return qs_errf(c->err, "%s: field 'sliding_window' must not be negative", c->fname);
    }

    cfg->torch_dtype[0] = '\0';
    rc = qs_cfg_get_str(c, root, "torch_dtype", cfg->torch_dtype, sizeof cfg->torch_dtype);
    if (rc == 0)
        rc = qs_cfg_get_str(c, root, "dtype", cfg->torch_dtype, sizeof cfg->torch_dtype); /* transformers v5 */
    if (rc < 0)
        return -1;

    if (arch == QS_ARCH_QWEN3_MOE || mixtral) {
        if (parse_moe(c, root, cfg))
            return -1;
    }

    cfg->bos_token_id = -1;
    if (qs_cfg_get_int(c, root, "", "bos_token_id", false, &cfg->bos_token_id) < 0 ||
        qs_cfg_get_ids(c, root, "eos_token_id", cfg->eos_token_ids, &cfg->n_eos) < 0)
        return -1;

    return parse_quantization(c, root, cfg);
}

static int parse_quantization(qs_cfg_ctx *c, const cJSON *root, qs_model_config *cfg)
{
    const cJSON *q = qs_cfg_field(root, "quantization_config");
    if (q) {
        if (!cJSON_IsObject(q))
            return qs_errf(c->err, "%s: field 'quantization_config' must be an object, got %s", c->fname, qs_cfg_type_of(q));
        char *text = cJSON_PrintUnformatted(q);
        cfg->quantization_config_json = text ? strdup(text) : NULL;
        cJSON_free(text);
        if (!cfg->quantization_config_json)
            return qs_errf(c->err, "%s: out of memory", c->fname);
    }
    return 0;
}

int qs_model_config_parse(const char *json, const char *fname, qs_model_config *cfg, qs_err *err)
{
    memset(cfg, 0, sizeof *cfg);
    qs_cfg_ctx c = {fname ? fname : "config.json", err};
    const char *at = NULL;
    cJSON *root = cJSON_ParseWithOpts(json, &at, false);
    if (!root)
        return qs_errf(err, "%s: not valid JSON (error at byte %td)", c.fname, at ? at - json : (ptrdiff_t)0);
    int rc = parse_config(&c, root, cfg);
    cJSON_Delete(root);
    if (rc)
        qs_model_config_free(cfg);
    return rc;
}

int qs_model_config_load(const char *model_dir, qs_model_config *cfg, qs_err *err)
{
    char path[4096];
    char *text;
    memset(cfg, 0, sizeof *cfg);
    qs_path_join(path, sizeof path, model_dir, "config.json");
    if (qs_read_file(path, &text, NULL, err))
        return -1;
    int rc = qs_model_config_parse(text, path, cfg, err);
    free(text);
    return rc;
}

/* ---- generation_config.json ----------------------------------------------------------------- */

static int parse_generation(qs_cfg_ctx *c, const cJSON *root, qs_generation_config *gen)
{
    if (!cJSON_IsObject(root))
        return qs_errf(c->err, "%s: not a JSON object", c->fname);
    int rc;
    if (qs_cfg_get_ids(c, root, "eos_token_id", gen->eos_token_ids, &gen->n_eos) < 0 ||
        qs_cfg_get_int(c, root, "", "bos_token_id", false, &gen->bos_token_id) < 0 ||
        (rc = qs_cfg_get_num(c, root, "", "temperature", false, &gen->temperature)) < 0)
        return -1;
    gen->has_temperature = rc == 1;
    if ((rc = qs_cfg_get_num(c, root, "", "top_p", false, &gen->top_p)) < 0)
        return -1;
    gen->has_top_p = rc == 1;
    if ((rc = qs_cfg_get_int(c, root, "", "top_k", false, &gen->top_k)) < 0)
        return -1;
    gen->has_top_k = rc == 1;
    if ((rc = qs_cfg_get_num(c, root, "", "min_p", false, &gen->min_p)) < 0)
        return -1;
    gen->has_min_p = rc == 1;
    if ((rc = qs_cfg_get_num(c, root, "", "repetition_penalty", false, &gen->repetition_penalty)) < 0)
        return -1;
    gen->has_repetition_penalty = rc == 1;
    if ((rc = qs_cfg_get_int(c, root, "", "max_new_tokens", false, &gen->max_new_tokens)) < 0)
        return -1;
    gen->has_max_new_tokens = rc == 1;
    if (qs_cfg_get_bool(c, root, "do_sample", &gen->do_sample) < 0)
        return -1;
    if (gen->has_max_new_tokens && gen->max_new_tokens < 1)
        return qs_errf(c->err, "%s: field 'max_new_tokens' must be at least 1, got %d", c->fname, gen->max_new_tokens);
    if (gen->has_temperature && gen->temperature < 0)
        return qs_errf(c->err, "%s: field 'temperature' must not be negative", c->fname);
    if (gen->has_top_p && !(gen->top_p > 0 && gen->top_p <= 1))
        return qs_errf(c->err, "%s: field 'top_p' must be in (0, 1], got %g", c->fname, gen->top_p);
    if (gen->has_min_p && !(gen->min_p >= 0 && gen->min_p <= 1))
        return qs_errf(c->err, "%s: field 'min_p' must be in [0, 1], got %g", c->fname, gen->min_p);
    if (gen->has_top_k && gen->top_k < 0)
        return qs_errf(c->err, "%s: field 'top_k' must not be negative", c->fname);
    if (gen->has_repetition_penalty && !(gen->repetition_penalty > 0))
        return qs_errf(c->err, "%s: field 'repetition_penalty' must be positive", c->fname);
    return 0;
}

int qs_generation_config_parse(const char *json, const char *fname, qs_generation_config *gen, qs_err *err)
{
    memset(gen, 0, sizeof *gen);
    gen->bos_token_id = -1;
    qs_cfg_ctx c = {fname ? fname : "generation_config.json", err};
    const char *at = NULL;
    cJSON *root = cJSON_ParseWithOpts(json, &at, false);
    if (!root)
        return qs_errf(err, "%s: not valid JSON (error at byte %td)", c.fname, at ? at - json : (ptrdiff_t)0);
    int rc = parse_generation(&c, root, gen);
    cJSON_Delete(root);
    if (rc) {
        memset(gen, 0, sizeof *gen);
        gen->bos_token_id = -1;
    }
    return rc;
}

int qs_generation_config_load(const char *model_dir, qs_generation_config *gen, qs_err *err)
{
    char path[4096];
    char *text;
    memset(gen, 0, sizeof *gen);
    gen->bos_token_id = -1;
    qs_path_join(path, sizeof path, model_dir, "generation_config.json");
    if (!qs_file_exists(path))
        return 0;
    if (qs_read_file(path, &text, NULL, err))
        return -1;
    int rc = qs_generation_config_parse(text, path, gen, err);
    free(text);
    return rc;
}
