/* chat_template.c — the public face of the chat-template interpreter: compiling a template
 * (lex + parse into an arena owned by the template), rendering it with the variables HF's
 * apply_chat_template passes, and finding a checkpoint's template and special tokens in its
 * tokenizer_config.json (read here with cJSON so it does not depend on the tokenizer). */
#include "tokenizer/chat_template.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jinja/jinja_arena.h"
#include "jinja/jinja_eval.h"
#include "jinja/jinja_lexer.h"
#include "jinja/jinja_methods.h"
#include "jinja/jinja_parser.h"
#include "jinja/jinja_value.h"
#include "tokenizer/tokenizer_config.h"
#include "util/fileio.h"

struct qs_chat_template {
    qs_jj_arena *arena;
    const char *name;
    qs_jj_node **body;
    size_t n_body;
    char *bos_token, *eos_token;
};

int qs_chat_template_compile(const char *source, const char *name, qs_chat_template **out, qs_err *err)
{
    *out = NULL;
    if (!source)
        return qs_errf(err, "%s: no template source", name ? name : "chat template");
    qs_chat_template *t = calloc(1, sizeof *t);
    if (!t)
        return qs_errf(err, "%s: out of memory", name ? name : "chat template");
    t->arena = qs_jj_arena_new();
    t->name = qs_jj_strndup(t->arena, name ? name : "chat template", strlen(name ? name : "chat template"));
    qs_jj_token *toks;
    size_t n;
    if (qs_jj_lex(t->arena, source, t->name, &toks, &n, err) ||
        qs_jj_parse(t->arena, toks, n, t->name, &t->body, &t->n_body, err)) {
        qs_chat_template_free(t);
        return -1;
    }
    *out = t;
    return 0;
}

void qs_chat_template_free(qs_chat_template *t)
{
    if (!t)
        return;
    qs_jj_arena_free(t->arena);
    free(t->bos_token);
    free(t->eos_token);
    free(t);
}

const char *qs_chat_template_bos_token(const qs_chat_template *t) { return t ? t->bos_token : NULL; }
const char *qs_chat_template_eos_token(const qs_chat_template *t) { return t ? t->eos_token : NULL; }

static void set_var(qs_jj_arena *a, qs_jv *vars, const char *name, qs_jv *v)
{
    qs_jv_dict_set(a, vars, qs_jv_cstr(a, name), v);
}

int qs_chat_template_render(const qs_chat_template *t, const cJSON *messages, const cJSON *tools,
                            bool add_generation_prompt, const char *bos_token, const char *eos_token,
                            const cJSON *extra_kwargs, char **out, qs_err *err)
{
    size_t len;
    return qs_chat_template_render_n(t, messages, tools, add_generation_prompt, bos_token, eos_token, extra_kwargs, out,
                                     &len, err);
}

int qs_chat_template_render_n(const qs_chat_template *t, const cJSON *messages, const cJSON *tools,
                              bool add_generation_prompt, const char *bos_token, const char *eos_token,
                              const cJSON *extra_kwargs, char **out, size_t *out_len, qs_err *err)
{
    *out = NULL;
    *out_len = 0;
    if (!messages || !cJSON_IsArray(messages))
        return qs_errf(err, "%s: messages must be a JSON array", t->name);
    if (tools && !cJSON_IsArray(tools) && !cJSON_IsNull(tools))
        return qs_errf(err, "%s: tools must be a JSON array", t->name);
    if (extra_kwargs && !cJSON_IsObject(extra_kwargs) && !cJSON_IsNull(extra_kwargs))
        return qs_errf(err, "%s: template kwargs must be a JSON object", t->name);
    /* HF passes these itself; a duplicate is a TypeError there, an error here. */
    static const char *const RESERVED[] = {"messages", "tools", "documents", "add_generation_prompt"};
    for (size_t k = 0; extra_kwargs && k < sizeof RESERVED / sizeof RESERVED[0]; k++)
        if (cJSON_GetObjectItemCaseSensitive(extra_kwargs, RESERVED[k]))
            return qs_errf(err, "%s: template kwargs may not set '%s' (it has its own parameter)", t->name,
                           RESERVED[k]);
    qs_jj_arena *a = qs_jj_arena_new();
    qs_jj_frame *globals = qs_jj_alloc(a, sizeof *globals);
    globals->vars = qs_jv_dict_new(a);
    qs_jj_define_globals(a, globals->vars);
    qs_jj_frame *root = qs_jj_alloc(a, sizeof *root);
    root->parent = globals;
    root->vars = qs_jv_dict_new(a);
    set_var(a, root->vars, "messages", qs_jv_from_json(a, messages));
    set_var(a, root->vars, "tools", tools ? qs_jv_from_json(a, tools) : qs_jv_none(a));
    set_var(a, root->vars, "documents", qs_jv_none(a));
    set_var(a, root->vars, "add_generation_prompt", qs_jv_bool(a, add_generation_prompt));
    if (bos_token)
        set_var(a, root->vars, "bos_token", qs_jv_cstr(a, bos_token));
    if (eos_token)
        set_var(a, root->vars, "eos_token", qs_jv_cstr(a, eos_token));
    if (extra_kwargs && cJSON_IsObject(extra_kwargs))
        for (const cJSON *c = extra_kwargs->child; c; c = c->next)
            set_var(a, root->vars, c->string, qs_jv_from_json(a, c));

    qs_jj_buf buf = {0};
    qs_jj_ctx ctx = {.arena = a, .out = &buf, .name = t->name, .err = err};
    int rc = qs_jj_render_body(&ctx, root, t->body, t->n_body);
    qs_jj_arena_free(a);
    if (rc) {
        qs_jj_buf_free(&buf);
        return -1;
    }
    if (!buf.data)
        qs_jj_buf_put(&buf, "", 0);
    *out = buf.data;
    *out_len = buf.len;
    return 0;
}

/* A special token in tokenizer_config.json (see qs_tokenizer_config_token), copied. */
static int read_token(const cJSON *cfg, const char *key, const char *path, char **out, qs_err *err)
{
    *out = NULL;
    const char *text;
    if (qs_tokenizer_config_token(cfg, key, &text))
        return qs_errf(err, "%s: %s must be a string or an object with a string \"content\"", path, key);
    if (!text)
        return 0;
    *out = strdup(text);
    return *out ? 0 : qs_errf(err, "%s: out of memory", path);
}

/* chat_template as a string, or HF's list of named templates whose "default" entry is used. */
static int pick_template(const cJSON *v, const char *path, const char **out, qs_err *err)
{
    if (cJSON_IsString(v)) {
        *out = v->valuestring;
        return 0;
    }
    if (cJSON_IsArray(v)) {
        char names[512] = "";
        for (const cJSON *e = v->child; e; e = e->next) {
            const cJSON *name = cJSON_GetObjectItemCaseSensitive(e, "name");
            const cJSON *tmpl = cJSON_GetObjectItemCaseSensitive(e, "template");
            if (!cJSON_IsString(name) || !cJSON_IsString(tmpl))
                return qs_errf(err, "%s: chat_template list entries need string \"name\" and \"template\"", path);
            if (!strcmp(name->valuestring, "default")) {
                *out = tmpl->valuestring;
                return 0;
            }
            size_t len = strlen(names);
            snprintf(names + len, sizeof names - len, "%s%s", len ? ", " : "", name->valuestring);
        }
        return qs_errf(err, "%s: chat_template has no \"default\" entry (found: %s)", path, names);
    }
    return qs_errf(err, "%s: chat_template must be a string or a list of {name, template}", path);
}

static int load_template_file(const char *dir, char **source, char *name, size_t name_cap, qs_err *err)
{
    char path[4096];
    qs_path_join(path, sizeof path, dir, "chat_template.jinja");
    if (qs_file_exists(path)) {
        snprintf(name, name_cap, "%s", path);
        return qs_read_file(path, source, NULL, err);
    }
    qs_path_join(path, sizeof path, dir, "chat_template.json");
    if (qs_file_exists(path)) {
        char *text;
        if (qs_read_file(path, &text, NULL, err))
            return -1;
        cJSON *j = cJSON_Parse(text);
        free(text);
        const cJSON *v = j ? cJSON_GetObjectItemCaseSensitive(j, "chat_template") : NULL;
        const char *src = NULL;
        int rc = v ? pick_template(v, path, &src, err) : qs_errf(err, "%s: no \"chat_template\" string in it", path);
        if (rc == 0 && !(*source = strdup(src)))
            rc = qs_errf(err, "%s: out of memory", path);
        cJSON_Delete(j);
        snprintf(name, name_cap, "%s", path);
        return rc;
    }
    return qs_errf(err, "%s: no chat template (no chat_template in tokenizer_config.json, no chat_template.jinja)",
                   dir);
}

int qs_chat_template_load_from_dir(const char *model_dir, qs_chat_template **out, qs_err *err)
{
    *out = NULL;
    char path[4096];
    qs_path_join(path, sizeof path, model_dir, "tokenizer_config.json");
    char *text;
    if (qs_read_file(path, &text, NULL, err))
        return -1;
    cJSON *cfg = cJSON_Parse(text);
    free(text);
    if (!cfg || !cJSON_IsObject(cfg)) {
        cJSON_Delete(cfg);
        return qs_errf(err, "%s: not a JSON object", path);
    }
    char *bos = NULL, *eos = NULL, *source = NULL;
    char name[4200];
    int rc = read_token(cfg, "bos_token", path, &bos, err);
    if (rc == 0)
        rc = read_token(cfg, "eos_token", path, &eos, err);
    if (rc == 0) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, "chat_template");
        if (v && !cJSON_IsNull(v)) {
            const char *src = NULL;
            rc = pick_template(v, path, &src, err);
            if (rc == 0 && !(source = strdup(src)))
                rc = qs_errf(err, "%s: out of memory", path);
            snprintf(name, sizeof name, "%s chat_template", path);
        } else {
            rc = load_template_file(model_dir, &source, name, sizeof name, err);
        }
    }
    cJSON_Delete(cfg);
    if (rc == 0)
        rc = qs_chat_template_compile(source, name, out, err);
    free(source);
    if (rc) {
        free(bos);
        free(eos);
        return -1;
    }
    (*out)->bos_token = bos;
    (*out)->eos_token = eos;
    return 0;
}
