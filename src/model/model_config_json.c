/* model_config_json.c — the typed config.json field readers (model_config_json.h) and the rope
 * fields every architecture spells the same way. */
#include "model/model_config_json.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

const char *qs_cfg_type_of(const cJSON *v)
{
    if (cJSON_IsString(v)) return "a string";
    if (cJSON_IsNumber(v)) return "a number";
    if (cJSON_IsBool(v)) return "a boolean";
    if (cJSON_IsArray(v)) return "an array";
    if (cJSON_IsObject(v)) return "an object";
    return "null";
}

/* The field, or NULL when absent or null. A key written twice takes its last value, as Python's
 * json module (and so transformers) does. */
const cJSON *qs_cfg_field(const cJSON *obj, const char *key)
{
    const cJSON *v = NULL;
    for (const cJSON *c = obj ? obj->child : NULL; c; c = c->next)
        if (c->string && !strcmp(c->string, key))
            v = c;
    return v && !cJSON_IsNull(v) ? v : NULL;
}

bool qs_cfg_is_int(const cJSON *v) { return cJSON_IsNumber(v) && v->valuedouble == floor(v->valuedouble) && fabs(v->valuedouble) <= INT_MAX; }

/* An integer field: 1 found, 0 absent (and not required), -1 error. */
int qs_cfg_get_int(qs_cfg_ctx *c, const cJSON *obj, const char *prefix, const char *key, bool required, int *out)
{
    const cJSON *v = qs_cfg_field(obj, key);
    if (!v)
        return required ? qs_errf(c->err, "%s: required field '%s%s' is missing", c->fname, prefix, key) : 0;
    if (!qs_cfg_is_int(v))
        return qs_errf(c->err, "%s: field '%s%s' must be an integer, got %s", c->fname, prefix, key,
                       cJSON_IsNumber(v) ? "a fractional or out-of-range number" : qs_cfg_type_of(v));
    *out = (int)v->valuedouble;
    return 1;
}

int qs_cfg_get_pos_int(qs_cfg_ctx *c, const cJSON *obj, const char *key, bool required, int *out)
{
    int rc = qs_cfg_get_int(c, obj, "", key, required, out);
    if (rc == 1 && *out <= 0)
        return qs_errf(c->err, "%s: field '%s' must be positive, got %d", c->fname, key, *out);
    return rc;
}

int qs_cfg_get_num(qs_cfg_ctx *c, const cJSON *obj, const char *prefix, const char *key, bool required, double *out)
{
    const cJSON *v = qs_cfg_field(obj, key);
    if (!v)
        return required ? qs_errf(c->err, "%s: required field '%s%s' is missing", c->fname, prefix, key) : 0;
    if (!cJSON_IsNumber(v))
        return qs_errf(c->err, "%s: field '%s%s' must be a number, got %s", c->fname, prefix, key, qs_cfg_type_of(v));
    *out = v->valuedouble;
    return 1;
}

int qs_cfg_get_bool(qs_cfg_ctx *c, const cJSON *obj, const char *key, bool *out)
{
    const cJSON *v = qs_cfg_field(obj, key);
    if (!v)
        return 0;
    if (!cJSON_IsBool(v))
        return qs_errf(c->err, "%s: field '%s' must be true or false, got %s", c->fname, key, qs_cfg_type_of(v));
    *out = cJSON_IsTrue(v);
    return 1;
}

int qs_cfg_get_str(qs_cfg_ctx *c, const cJSON *obj, const char *key, char *buf, size_t cap)
{
    const cJSON *v = qs_cfg_field(obj, key);
    if (!v)
        return 0;
    if (!cJSON_IsString(v))
        return qs_errf(c->err, "%s: field '%s' must be a string, got %s", c->fname, key, qs_cfg_type_of(v));
    if (strlen(v->valuestring) >= cap)
        return qs_errf(c->err, "%s: field '%s' is too long (\"%.40s...\", at most %zu bytes)", c->fname, key,
                       v->valuestring, cap - 1);
    strcpy(buf, v->valuestring);
    return 1;
}

/* Token ids: an integer or a list of integers (eos_token_id). */
int qs_cfg_get_ids(qs_cfg_ctx *c, const cJSON *obj, const char *key, int *ids, int *n)
{
    const cJSON *v = qs_cfg_field(obj, key);
    *n = 0;
    if (!v)
        return 0;
    if (qs_cfg_is_int(v)) {
        ids[(*n)++] = (int)v->valuedouble;
        return 1;
    }
    if (!cJSON_IsArray(v))
        return qs_errf(c->err, "%s: field '%s' must be a token id or a list of token ids, got %s", c->fname, key,
                       qs_cfg_type_of(v));
    int i = 0;
    for (const cJSON *e = v->child; e; e = e->next, i++) {
        if (!qs_cfg_is_int(e) || e->valuedouble < 0)
            return qs_errf(c->err, "%s: field '%s[%d]' must be a token id (a non-negative integer), got %s", c->fname,
                           key, i, qs_cfg_type_of(e));
        if (*n == QS_MAX_EOS)
            return qs_errf(c->err, "%s: field '%s' lists more than %d token ids", c->fname, key, QS_MAX_EOS);
        ids[(*n)++] = (int)e->valuedouble;
    }
    return 1;
}

/* ---- rope ----------------------------------------------------------------------------------- */

int qs_cfg_parse_rope(qs_cfg_ctx *c, const cJSON *root, qs_model_config *cfg)
{
    const cJSON *params = qs_cfg_field(root, "rope_parameters");
    if (params && !cJSON_IsObject(params))
        return qs_errf(c->err, "%s: field 'rope_parameters' must be an object, got %s", c->fname, qs_cfg_type_of(params));
    /* theta: top level, else rope_parameters.rope_theta, else the architecture default. */
    int rc = qs_cfg_get_num(c, root, "", "rope_theta", false, &cfg->rope_theta);
    if (rc < 0 || (rc == 0 && params && qs_cfg_get_num(c, params, "rope_parameters.", "rope_theta", false, &cfg->rope_theta) < 0))
        return -1;
    if (!(cfg->rope_theta > 0))
        return qs_errf(c->err, "%s: field 'rope_theta' must be positive", c->fname);
    /* scaling: rope_scaling, else rope_parameters (transformers v5 folds both into it). */
    const cJSON *sc = qs_cfg_field(root, "rope_scaling");
    const char *where = "rope_scaling.";
    if (sc && !cJSON_IsObject(sc))
        return qs_errf(c->err, "%s: field 'rope_scaling' must be an object or null, got %s", c->fname, qs_cfg_type_of(sc));
    if (!sc) {
        sc = params;
        where = "rope_parameters.";
    }
    cfg->rope_type = QS_ROPE_DEFAULT;
    if (!sc)
        return 0;
    const cJSON *ty = qs_cfg_field(sc, "rope_type");
    const char *tkey = "rope_type";
    if (!ty) {
        ty = qs_cfg_field(sc, "type");
        tkey = "type";
    }
    if (!ty)
        return 0; /* rope_parameters with only rope_theta */
    if (!cJSON_IsString(ty))
        return qs_errf(c->err, "%s: field '%s%s' must be a string, got %s", c->fname, where, tkey, qs_cfg_type_of(ty));
    if (!strcmp(ty->valuestring, "default"))
        return 0;
    if (strcmp(ty->valuestring, "llama3"))
        return qs_errf(c->err, "%s: field '%s%s': rope scaling type '%.64s' is not supported (supported: default, llama3)",
                       c->fname, where, tkey, ty->valuestring);
    cfg->rope_type = QS_ROPE_LLAMA3;
    if (qs_cfg_get_num(c, sc, where, "factor", true, &cfg->rope_factor) < 0 ||
        qs_cfg_get_num(c, sc, where, "low_freq_factor", true, &cfg->rope_low_freq_factor) < 0 ||
        qs_cfg_get_num(c, sc, where, "high_freq_factor", true, &cfg->rope_high_freq_factor) < 0 ||
        qs_cfg_get_int(c, sc, where, "original_max_position_embeddings", true, &cfg->rope_original_max_position) < 0)
        return -1;
    if (!(cfg->rope_factor > 0) || !(cfg->rope_low_freq_factor > 0) ||
        !(cfg->rope_high_freq_factor >= cfg->rope_low_freq_factor) || cfg->rope_original_max_position <= 0)
        return qs_errf(c->err, "%s: field '%s': llama3 scaling needs factor > 0, 0 < low_freq_factor <= high_freq_factor "
                               "and original_max_position_embeddings > 0",
                       c->fname, where);
    return 0;
}
