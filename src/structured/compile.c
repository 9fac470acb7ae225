/* compile.c — the public entry points of structured.h that turn a specification into a
 * qs_grammar: they pick the compiler (JSON Schema, any JSON object, regex, GBNF, choice list),
 * then wrap and finish the grammar. The last CACHE_SIZE grammars are kept by their text and
 * options, so repeated requests with the same schema share one grammar and with it the masks
 * it has cached (a new grammar's first masks are the costly ones). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "structured/grammar.h"

#define CACHE_SIZE 8

typedef struct cache_entry {
    char *key;
    size_t key_len;
    qs_grammar *g;
    unsigned long long used;
} cache_entry;

static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;
static cache_entry cache[CACHE_SIZE];
static unsigned long long cache_clock;

/* key = kind, options and text, NUL-separated (text may hold NULs: lengths are kept). */
static char *make_key(int kind, const char *text, size_t len, const qs_so_options *opt, size_t *key_len)
{
    const char *ws = opt && opt->whitespace_pattern ? opt->whitespace_pattern : "\001default";
    const char *pre = opt && opt->prefix ? opt->prefix : "", *suf = opt && opt->suffix ? opt->suffix : "";
    size_t n = 16 + strlen(ws) + strlen(pre) + strlen(suf) + len + 4;
    char *k = malloc(n);
    if (!k)
        return NULL;
    int h = snprintf(k, n, "%d", kind);
    size_t at = (size_t)h + 1;
    memcpy(k + at, ws, strlen(ws) + 1);
    at += strlen(ws) + 1;
    memcpy(k + at, pre, strlen(pre) + 1);
    at += strlen(pre) + 1;
    memcpy(k + at, suf, strlen(suf) + 1);
    at += strlen(suf) + 1;
    if (len)
        memcpy(k + at, text, len);
    *key_len = at + len;
    return k;
}

static qs_grammar *cache_find(const char *key, size_t key_len)
{
    qs_grammar *g = NULL;
    pthread_mutex_lock(&cache_mu);
    for (int i = 0; i < CACHE_SIZE; i++)
        if (cache[i].g && cache[i].key_len == key_len && !memcmp(cache[i].key, key, key_len)) {
            g = cache[i].g;
            qs_grammar_retain(g);
            cache[i].used = ++cache_clock;
            break;
        }
    pthread_mutex_unlock(&cache_mu);
    return g;
}

static void cache_put(char *key, size_t key_len, qs_grammar *g)
{
    pthread_mutex_lock(&cache_mu);
    int victim = 0;
    for (int i = 0; i < CACHE_SIZE; i++) {
        if (!cache[i].g) {
            victim = i;
            break;
        }
        if (cache[i].used < cache[victim].used)
            victim = i;
    }
    qs_grammar *old = cache[victim].g;
    char *old_key = cache[victim].key;
    qs_grammar_retain(g);
    cache[victim] = (cache_entry){key, key_len, g, ++cache_clock};
    pthread_mutex_unlock(&cache_mu);
    qs_grammar_release(old);
    free(old_key);
}

static qs_grammar *compile_uncached(qs_so_kind kind, const char *text, size_t len, const qs_so_options *opt,
                                    qs_err *err);

qs_grammar *qs_grammar_compile(qs_so_kind kind, const char *text, size_t len, const qs_so_options *opt, qs_err *err)
{
    if (opt && opt->uncached)
        return compile_uncached(kind, text, len, opt, err);
    size_t key_len = 0;
    char *key = make_key((int)kind, text ? text : "", text ? len : 0, opt, &key_len);
    qs_grammar *g = key ? cache_find(key, key_len) : NULL;
    if (g) {
        free(key);
        return g;
    }
    g = compile_uncached(kind, text, len, opt, err);
    if (g && key)
        cache_put(key, key_len, g);
    else
        free(key);
    return g;
}

static qs_grammar *schema_uncached(const cJSON *schema, const qs_so_options *opt, qs_err *err)
{
    qs_gbuild b;
    qs_gb_init(&b);
    int root = qs_json_schema_compile(&b, schema, opt ? opt->whitespace_pattern : NULL, err);
    if (root < 0) {
        qs_gb_free(&b);
        return NULL;
    }
    return qs_gb_finish_opts(&b, root, opt, err);
}

qs_grammar *qs_grammar_from_schema(const cJSON *schema, const qs_so_options *opt, qs_err *err)
{
    char *text = cJSON_PrintUnformatted(schema);
    if (!text)
        return schema_uncached(schema, opt, err);
    qs_grammar *g = qs_grammar_compile(QS_SO_JSON_SCHEMA, text, strlen(text), opt, err);
    cJSON_free(text);
    return g;
}

qs_grammar *qs_grammar_from_choices(const char *const *choices, int n, const qs_so_options *opt, qs_err *err)
{
    if (n <= 0) {
        qs_errf(err, "a choice list needs at least one choice");
        return NULL;
    }
    qs_gbuild b;
    qs_gb_init(&b);
    int root = qs_gb_rule(&b, "choice");
    for (int i = 0; i < n; i++) {
        qs_gseq s = {0};
        qs_gseq_lit(&b, &s, choices[i], strlen(choices[i]));
        qs_gb_add_alt(&b, root, &s);
        qs_gseq_free(&s);
    }
    return qs_gb_finish_opts(&b, root, opt, err);
}

static qs_grammar *compile_uncached(qs_so_kind kind, const char *text, size_t len, const qs_so_options *opt,
                                    qs_err *err)
{
    qs_gbuild b;
    qs_gb_init(&b);
    int root = -1;
    switch (kind) {
    case QS_SO_JSON_SCHEMA: {
        cJSON *schema = text ? cJSON_ParseWithLength(text, len) : NULL;
        if (!schema) {
            qs_errf(err, "the JSON schema is not valid JSON");
            break;
        }
        root = qs_json_schema_compile(&b, schema, opt ? opt->whitespace_pattern : NULL, err);
        cJSON_Delete(schema);
        break;
    }
    case QS_SO_JSON_OBJECT:
        root = qs_json_object_compile(&b, opt ? opt->whitespace_pattern : NULL, err);
        break;
    case QS_SO_REGEX: {
        qs_regex_flags f = {0};
        root = qs_so_regex_compile(&b, text ? text : "", text ? len : 0, &f, err);
        break;
    }
    case QS_SO_GBNF:
        root = qs_gbnf_compile(&b, text ? text : "", text ? len : 0, err);
        break;
    default:
        qs_errf(err, "unknown structured-output kind");
    }
    if (root < 0) {
        qs_gb_free(&b);
        return NULL;
    }
    return qs_gb_finish_opts(&b, root, opt, err);
}
