/* eval_config.c — reads a gsm8k eval YAML (libyaml's document API, so every node keeps its line)
 * into struct qs_eval_config. Plain scalars are typed the way PyYAML types them (null, bool, int,
 * float), so a quoted "0.5" for a number key is the same type error vLLM's runner would hit. */
#include "eval/eval_config.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "eval/shell_split.h"
#include "util/fileio.h"

typedef enum { KEY_STRING, KEY_NUMBER, KEY_INT, KEY_LLONG, KEY_BOOL, KEY_ENV } key_kind;

typedef struct {
    const char *name;
    key_kind kind;
    bool required;
    size_t offset; /* into qs_eval_config; unused for KEY_ENV */
    const char *note; /* read but not acted on: why (added to warnings) */
} key_spec;

#define F(field) offsetof(qs_eval_config, field)
static const key_spec KEYS[] = {
    {"model_name", KEY_STRING, true, F(model_name), NULL},
    {"accuracy_threshold", KEY_NUMBER, true, F(accuracy_threshold), NULL},
    {"num_questions", KEY_INT, true, F(num_questions), NULL},
    {"num_fewshot", KEY_INT, true, F(num_fewshot), NULL},
    {"server_args", KEY_STRING, false, F(server_args), NULL},
    {"env", KEY_ENV, false, 0, NULL},
    {"tolerance", KEY_NUMBER, false, F(tolerance), NULL},
    {"startup_max_wait_seconds", KEY_NUMBER, false, F(startup_max_wait_seconds), NULL},
    {"max_tokens", KEY_INT, false, F(max_tokens), NULL},
    {"temperature", KEY_NUMBER, false, F(temperature), NULL},
    {"seed", KEY_LLONG, false, F(seed), NULL},
    {"request_timeout_seconds", KEY_NUMBER, false, F(request_timeout_seconds), NULL},
    {"rocm_request_timeout_seconds", KEY_NUMBER, false, F(rocm_request_timeout_seconds), "it applies to ROCm only; qserve runs on CUDA or CPU"},
    {"use_chat_completions", KEY_BOOL, false, F(use_chat_completions), NULL},
    {"max_concurrency", KEY_INT, false, F(max_concurrency), NULL},
    {"gen_prefix", KEY_STRING, false, F(gen_prefix), NULL},
    {"min_acceptance_length", KEY_NUMBER, false, F(min_acceptance_length),
     "qserve has no speculative decoding, so the acceptance-length check does not apply"},
};
#undef F
#define N_KEYS (sizeof KEYS / sizeof KEYS[0])

void qs_eval_config_defaults(qs_eval_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->tolerance = 0.08;
    cfg->startup_max_wait_seconds = 1200;
    cfg->max_tokens = 256;
    cfg->temperature = 0.0;
    cfg->seed = 42;
    cfg->request_timeout_seconds = 600;
}

void qs_eval_config_free(qs_eval_config *cfg)
{
    free(cfg->model_name);
    free(cfg->server_args);
    free(cfg->gen_prefix);
    qs_eval_strlist_free(&cfg->server_argv);
    qs_eval_strlist_free(&cfg->env);
    cfg->model_name = cfg->server_args = cfg->gen_prefix = NULL;
}

static void add_warning(qs_eval_config *cfg, const char *fmt, const char *a, size_t line, const char *b)
{
    size_t n = strlen(cfg->warnings);
    char msg[512];
    snprintf(msg, sizeof msg, fmt, cfg->path, line, a, b);
    snprintf(cfg->warnings + n, sizeof cfg->warnings - n, "%s\n", msg);
}

char *qs_eval_expand_env(const char *s, qs_err *err)
{
    size_t cap = strlen(s) + 1, n = 0;
    char *out = malloc(cap);
    if (!out) {
        qs_errf(err, "out of memory");
        return NULL;
    }
    for (const char *p = s; *p;) {
        const char *piece = p;
        size_t piece_len = 1;
        char name[256];
        if (p[0] == '$' && p[1] == '{') {
            const char *close = strchr(p, '}');
            if (!close) {
                qs_errf(err, "'%s': '${' without a closing '}'", s);
                free(out);
                return NULL;
            }
            const char *def = strstr(p, ":-");
            if (def && def > close)
                def = NULL;
            size_t name_len = (size_t)((def ? def : close) - (p + 2));
            if (name_len == 0 || name_len >= sizeof name) {
                qs_errf(err, "'%s': bad variable name in ${...}", s);
                free(out);
                return NULL;
            }
            memcpy(name, p + 2, name_len);
            name[name_len] = '\0';
            const char *val = getenv(name);
            if (val && *val) {
                piece = val;
                piece_len = strlen(val);
            } else if (def) {
                piece = def + 2;
                piece_len = (size_t)(close - piece);
            } else {
                qs_errf(err, "'%s': environment variable %s is not set (write ${%s:-default} for a fallback)", s,
                        name, name);
                free(out);
                return NULL;
            }
            p = close + 1;
        } else {
            p++;
        }
        if (n + piece_len + 1 > cap) {
            cap = (n + piece_len + 1) * 2;
            char *grown = realloc(out, cap);
            if (!grown) {
                free(out);
                qs_errf(err, "out of memory");
                return NULL;
            }
            out = grown;
        }
        memcpy(out + n, piece, piece_len);
        n += piece_len;
    }
    out[n] = '\0';
    return out;
}

/* --- PyYAML-style typing of a scalar node --- */

static bool is_plain(const yaml_node_t *node)
{
    return node->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
}

static const char *scalar_text(const yaml_node_t *node)
{
    return (const char *)node->data.scalar.value;
}

static bool plain_is_null(const yaml_node_t *node)
{
    if (node->type != YAML_SCALAR_NODE || !is_plain(node))
        return false;
    const char *s = scalar_text(node);
    return !*s || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") || !strcmp(s, "NULL");
}

static int parse_bool(const char *s, bool *out)
{
    static const char *const T[] = {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON"};
    static const char *const Fs[] = {"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF"};
    for (size_t i = 0; i < sizeof T / sizeof T[0]; i++) {
        if (!strcmp(s, T[i])) {
            *out = true;
            return 0;
        }
        if (!strcmp(s, Fs[i])) {
            *out = false;
            return 0;
        }
    }
    return -1;
}

static int parse_llong(const char *s, long long *out)
{
    if (!*s)
        return -1;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (*end || errno)
        return -1;
    *out = v;
    return 0;
}

static int parse_number(const char *s, double *out)
{
    if (!*s || strchr(s, 'x') || strchr(s, 'X'))
        return -1;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (*end || errno || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

static const char *kind_words(key_kind k)
{
    switch (k) {
    case KEY_STRING: return "a string";
    case KEY_NUMBER: return "a number";
    case KEY_INT:
    case KEY_LLONG: return "an integer";
    case KEY_BOOL: return "true or false";
    case KEY_ENV: return "a mapping of variable names to strings";
    }
    return "?";
}

static const char *node_desc(const yaml_node_t *node, char *buf, size_t cap)
{
    if (node->type == YAML_MAPPING_NODE)
        return "a mapping";
    if (node->type == YAML_SEQUENCE_NODE)
        return "a list";
    snprintf(buf, cap, "%s'%.200s'", is_plain(node) ? "" : "the quoted string ", scalar_text(node));
    return buf;
}

static int set_env(qs_eval_config *cfg, yaml_document_t *doc, yaml_node_t *map, qs_err *err)
{
    for (yaml_node_pair_t *pr = map->data.mapping.pairs.start; pr < map->data.mapping.pairs.top; pr++) {
        yaml_node_t *k = yaml_document_get_node(doc, pr->key);
        yaml_node_t *v = yaml_document_get_node(doc, pr->value);
        size_t line = k->start_mark.line + 1;
        if (k->type != YAML_SCALAR_NODE || !*scalar_text(k) || strchr(scalar_text(k), '='))
            return qs_errf(err, "%s:%zu: key 'env': variable names must be non-empty strings without '='", cfg->path,
                           line);
        if (v->type != YAML_SCALAR_NODE || plain_is_null(v))
            return qs_errf(err, "%s:%zu: key 'env': the value of %s must be a string", cfg->path,
                           v->start_mark.line + 1, scalar_text(k));
        size_t len = strlen(scalar_text(k)) + strlen(scalar_text(v)) + 2;
        char *kv = malloc(len);
        if (!kv)
            return qs_errf(err, "out of memory");
        snprintf(kv, len, "%s=%s", scalar_text(k), scalar_text(v));
        int rc = qs_eval_strlist_push(&cfg->env, kv);
        free(kv);
        if (rc != 0)
            return qs_errf(err, "out of memory");
    }
    return 0;
}

static int set_key(qs_eval_config *cfg, const key_spec *ks, yaml_document_t *doc, yaml_node_t *v, qs_err *err)
{
    size_t line = v->start_mark.line + 1;
    char desc[256];
    void *field = (char *)cfg + ks->offset;
    if (plain_is_null(v)) {
        if (ks->required)
            return qs_errf(err, "%s:%zu: key '%s' must be %s, not null", cfg->path, line, ks->name, kind_words(ks->kind));
        return 0; /* None: the default stays (max_concurrency: null = unlimited, as in vLLM) */
    }
    if (ks->kind == KEY_ENV) {
        if (v->type != YAML_MAPPING_NODE)
            return qs_errf(err, "%s:%zu: key 'env' must be %s, got %s", cfg->path, line, kind_words(ks->kind),
                           node_desc(v, desc, sizeof desc));
        return set_env(cfg, doc, v, err);
    }
    if (v->type != YAML_SCALAR_NODE)
        return qs_errf(err, "%s:%zu: key '%s' must be %s, got %s", cfg->path, line, ks->name, kind_words(ks->kind),
                       node_desc(v, desc, sizeof desc));
    const char *s = scalar_text(v);
    bool ok = true;
    switch (ks->kind) {
    case KEY_STRING: {
        char **dst = field;
        free(*dst);
        *dst = strdup(s);
        if (!*dst)
            return qs_errf(err, "out of memory");
        break;
    }
    case KEY_NUMBER:
        ok = is_plain(v) && parse_number(s, field) == 0;
        break;
    case KEY_INT: {
        long long x;
        ok = is_plain(v) && parse_llong(s, &x) == 0 && x >= -2147483647LL && x <= 2147483647LL;
        if (ok)
            *(int *)field = (int)x;
        break;
    }
    case KEY_LLONG:
        ok = is_plain(v) && parse_llong(s, field) == 0;
        break;
    case KEY_BOOL:
        ok = is_plain(v) && parse_bool(s, field) == 0;
        break;
    case KEY_ENV:
        break;
    }
    if (!ok)
        return qs_errf(err, "%s:%zu: key '%s' must be %s, got %s", cfg->path, line, ks->name, kind_words(ks->kind),
                       node_desc(v, desc, sizeof desc));
    return 0;
}

/* The line where `name` was set (0 = absent). */
static size_t key_line(const size_t *lines, const char *name)
{
    for (size_t k = 0; k < N_KEYS; k++)
        if (!strcmp(KEYS[k].name, name))
            return lines[k];
    return 0;
}

/* Range checks and derived fields once every key is read. */
static int finish(qs_eval_config *cfg, const size_t *lines, qs_err *err)
{
    struct {
        const char *key;
        bool bad;
        const char *want;
    } checks[] = {
        {"num_questions", cfg->num_questions < 0, "at least 0"},
        {"num_fewshot", cfg->num_fewshot < 0, "at least 0"},
        {"max_tokens", cfg->max_tokens < 1, "at least 1"},
        {"tolerance", cfg->tolerance < 0, "at least 0"},
        {"temperature", cfg->temperature < 0, "at least 0"},
        {"startup_max_wait_seconds", cfg->startup_max_wait_seconds <= 0, "greater than 0"},
        {"request_timeout_seconds", cfg->request_timeout_seconds <= 0, "greater than 0"},
        {"max_concurrency", key_line(lines, "max_concurrency") && cfg->max_concurrency < 1, "at least 1 (or null for no limit)"},
    };
    for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++) {
        if (checks[i].bad)
            return qs_errf(err, "%s:%zu: key '%s' must be %s", cfg->path, key_line(lines, checks[i].key),
                           checks[i].key, checks[i].want);
    }
    if (!cfg->server_args && !(cfg->server_args = strdup("")))
        return qs_errf(err, "out of memory");
    if (!cfg->gen_prefix && !(cfg->gen_prefix = strdup("")))
        return qs_errf(err, "out of memory");
    size_t args_line = key_line(lines, "server_args");
    if (qs_shell_split(cfg->server_args, &cfg->server_argv, err) != 0)
        return qs_err_prefix(err, "%s:%zu: key 'server_args': ", cfg->path, args_line);
    for (size_t i = 0; i < cfg->server_argv.count; i++) {
        const char *a = cfg->server_argv.items[i];
        if (!strcmp(a, "--port") || !strcmp(a, "-p") || !strncmp(a, "--port=", 7))
            return qs_errf(err, "%s:%zu: key 'server_args' must not set %s: the harness gives the server a free port",
                           cfg->path, args_line, a);
        if (!strcmp(a, "--seed") || !strncmp(a, "--seed=", 7))
            return qs_errf(err, "%s:%zu: key 'server_args' must not set %s: the harness starts the server with --seed 0",
                           cfg->path, args_line, a);
    }
    char *expanded = qs_eval_expand_env(cfg->model_name, err);
    if (!expanded)
        return qs_err_prefix(err, "%s:%zu: key 'model_name': ", cfg->path, key_line(lines, "model_name"));
    free(cfg->model_name);
    cfg->model_name = expanded;
    if (!*cfg->model_name)
        return qs_errf(err, "%s:%zu: key 'model_name' is empty", cfg->path, key_line(lines, "model_name"));
    return 0;
}

int qs_eval_config_parse(const char *yaml_text, const char *path, qs_eval_config *cfg, qs_err *err)
{
    qs_eval_config_defaults(cfg);
    snprintf(cfg->path, sizeof cfg->path, "%s", path);
    yaml_parser_t parser;
    yaml_document_t doc;
    if (!yaml_parser_initialize(&parser))
        return qs_errf(err, "%s: cannot initialise the YAML parser", path);
    yaml_parser_set_input_string(&parser, (const unsigned char *)yaml_text, strlen(yaml_text));
    if (!yaml_parser_load(&parser, &doc)) {
        qs_errf(err, "%s:%zu: YAML syntax error: %s%s%s", path, parser.problem_mark.line + 1,
                parser.problem ? parser.problem : "unknown problem", parser.context ? " " : "",
                parser.context ? parser.context : "");
        yaml_parser_delete(&parser);
        return -1;
    }
    yaml_parser_delete(&parser);
    int rc = -1;
    size_t lines[N_KEYS] = {0}; /* line where each key was set, 0 = absent */
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    if (!root) {
        qs_errf(err, "%s: the file is empty; expected a mapping with model_name, accuracy_threshold, num_questions, "
                     "num_fewshot", path);
        goto out;
    }
    if (root->type != YAML_MAPPING_NODE) {
        qs_errf(err, "%s:%zu: the top level must be a mapping of config keys", path, root->start_mark.line + 1);
        goto out;
    }
    for (yaml_node_pair_t *pr = root->data.mapping.pairs.start; pr < root->data.mapping.pairs.top; pr++) {
        yaml_node_t *k = yaml_document_get_node(&doc, pr->key);
        yaml_node_t *v = yaml_document_get_node(&doc, pr->value);
        size_t line = k->start_mark.line + 1;
        if (k->type != YAML_SCALAR_NODE) {
            qs_errf(err, "%s:%zu: config keys must be plain names", path, line);
            goto out;
        }
        const char *name = scalar_text(k);
        size_t idx = N_KEYS;
        for (size_t i = 0; i < N_KEYS; i++)
            if (!strcmp(KEYS[i].name, name))
                idx = i;
        if (idx == N_KEYS) {
            char valid[512] = "";
            for (size_t i = 0; i < N_KEYS; i++)
                snprintf(valid + strlen(valid), sizeof valid - strlen(valid), "%s%s", i ? ", " : "", KEYS[i].name);
            add_warning(cfg, "%s:%zu: unknown key '%s' is ignored (known keys: %s)", name, line, valid);
            continue;
        }
        if (lines[idx])
            add_warning(cfg, "%s:%zu: key '%s' is given twice; the later value wins%s", name, line, "");
        if (set_key(cfg, &KEYS[idx], &doc, v, err) != 0)
            goto out;
        lines[idx] = plain_is_null(v) ? 0 : line;
        if (KEYS[idx].note && !plain_is_null(v)) {
            if (!strcmp(KEYS[idx].name, "min_acceptance_length"))
                cfg->has_min_acceptance_length = true;
            add_warning(cfg, "%s:%zu: key '%s' is read but not used: %s", name, line, KEYS[idx].note);
        }
    }
    for (size_t i = 0; i < N_KEYS; i++)
        if (KEYS[i].required && !lines[i]) {
            qs_errf(err, "%s: missing required key '%s'", path, KEYS[i].name);
            goto out;
        }
    rc = finish(cfg, lines, err);
out:
    yaml_document_delete(&doc);
    return rc;
}

int qs_eval_config_load(const char *path, qs_eval_config *cfg, qs_err *err)
{
    char *text;
    if (qs_read_file(path, &text, NULL, err) != 0) {
        qs_eval_config_defaults(cfg);
        return -1;
    }
    int rc = qs_eval_config_parse(text, path, cfg, err);
    free(text);
    return rc;
}
