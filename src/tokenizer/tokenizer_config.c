/* tokenizer_config.c — tokenizer_config.json: bos_token / eos_token (a string or an AddedToken
 * object {"content": ...}), add_bos_token / add_eos_token (used only when tokenizer.json has no
 * TemplateProcessing of its own), chat_template (a string, or a list of {name, template} where
 * "default" wins), and chat_template.jinja beside it, which takes precedence as in transformers. */
#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tokenizer_config.h"
#include "util/fileio.h"

int qs_tokenizer_config_token(const cJSON *cfg, const char *key, const char **text)
{
    *text = NULL;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, key);
    if (!v || cJSON_IsNull(v))
        return 0;
    if (cJSON_IsObject(v))
        v = cJSON_GetObjectItemCaseSensitive(v, "content");
    if (!cJSON_IsString(v))
        return -1;
    *text = v->valuestring;
    return 0;
}

static int token_field(const cJSON *cfg, const char *key, char **out, qs_err *err)
{
    const char *text;
    if (qs_tokenizer_config_token(cfg, key, &text))
        return qs_errf(err, "%s: expected a string or an object with \"content\"", key);
    if (!text)
        return 0;
    *out = strdup(text);
    return *out ? 0 : qs_errf(err, "%s: out of memory", key);
}

static int chat_template_field(const cJSON *cfg, char **out, qs_err *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, "chat_template");
    if (!v || cJSON_IsNull(v))
        return 0;
    if (cJSON_IsString(v)) {
        *out = strdup(v->valuestring);
        return 0;
    }
    if (!cJSON_IsArray(v))
        return qs_errf(err, "chat_template: expected a string or a list of {name, template}");
    const cJSON *pick = NULL;
    for (const cJSON *e = v->child; e; e = e->next) {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(e, "name");
        const cJSON *tpl = cJSON_GetObjectItemCaseSensitive(e, "template");
        if (!cJSON_IsString(name) || !cJSON_IsString(tpl))
            return qs_errf(err, "chat_template: every entry needs string \"name\" and \"template\"");
        if (!strcmp(name->valuestring, "default"))
            pick = tpl;
    }
    if (!pick)
        return qs_errf(err, "chat_template: the list has no template named \"default\"");
    *out = strdup(pick->valuestring);
    return 0;
}

static int32_t find_token(const qs_tokenizer *tok, const char *s) { return s ? qs_vocab_find(&tok->vocab, s, strlen(s)) : -1; }

static int read_config(qs_tokenizer *tok, const char *path, bool *add_bos, bool *add_eos, qs_err *err)
{
    char *text;
    size_t len;
    if (qs_read_file(path, &text, &len, err))
        return -1;
    cJSON *cfg = cJSON_ParseWithLength(text, len);
    free(text);
    if (!cJSON_IsObject(cfg)) {
        cJSON_Delete(cfg);
        return qs_errf(err, "%s: not a JSON object", path);
    }
    int rc = 0;
    if (token_field(cfg, "bos_token", &tok->bos_token, err) || token_field(cfg, "eos_token", &tok->eos_token, err) ||
        chat_template_field(cfg, &tok->chat_template, err))
        rc = qs_err_prefix(err, "%s: ", path);
    *add_bos = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(cfg, "add_bos_token"));
    *add_eos = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(cfg, "add_eos_token"));
    cJSON_Delete(cfg);
    return rc;
}

static int append_id(int32_t **arr, size_t *n, int32_t id)
{
    int32_t *a = realloc(*arr, (*n + 1) * sizeof *a);
    if (!a)
        return -1;
    a[(*n)++] = id;
    *arr = a;
    return 0;
}

int qs_tokenizer_load_config(qs_tokenizer *tok, const char *json_path, const char *config_path, qs_err *err)
{
    bool add_bos = false, add_eos = false;
    if (config_path && read_config(tok, config_path, &add_bos, &add_eos, err))
        return -1;
    tok->bos_id = find_token(tok, tok->bos_token);
    tok->eos_id = find_token(tok, tok->eos_token);
    if (tok->bos_token && tok->bos_id < 0)
        return qs_errf(err, "%s: bos_token '%s' is not in the vocab", config_path, tok->bos_token);
    if (tok->eos_token && tok->eos_id < 0)
        return qs_errf(err, "%s: eos_token '%s' is not in the vocab", config_path, tok->eos_token);
    /* tokenizer.json's TemplateProcessing is authoritative; the flags fill in when it has none. */
    if (!tok->n_post_prefix && !tok->n_post_suffix) {
        if (add_bos && tok->bos_id >= 0 && append_id(&tok->post_prefix, &tok->n_post_prefix, tok->bos_id))
            return qs_errf(err, "out of memory");
        if (add_eos && tok->eos_id >= 0 && append_id(&tok->post_suffix, &tok->n_post_suffix, tok->eos_id))
            return qs_errf(err, "out of memory");
    }
    tok->adds_bos = tok->n_post_prefix > 0 && (tok->bos_id < 0 || tok->post_prefix[0] == tok->bos_id);

    /* chat_template.jinja beside tokenizer.json overrides the config's template. */
    char dir[4096], jinja[4200];
    snprintf(dir, sizeof dir, "%s", json_path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    else
        snprintf(dir, sizeof dir, ".");
    qs_path_join(jinja, sizeof jinja, dir, "chat_template.jinja");
    if (qs_file_exists(jinja)) {
        char *text;
        if (qs_read_file(jinja, &text, NULL, err))
            return -1;
        free(tok->chat_template);
        tok->chat_template = text;
    }
    return 0;
}
