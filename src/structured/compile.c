/* compile.c — the public entry points of structured.h that turn a specification into a
 * qs_grammar: they pick the compiler (JSON Schema, any JSON object, regex, GBNF, choice list),
 * then wrap and finish the grammar. */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "structured/grammar.h"

qs_grammar *qs_grammar_from_schema(const cJSON *schema, const qs_so_options *opt, qs_err *err)
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

qs_grammar *qs_grammar_compile(qs_so_kind kind, const char *text, size_t len, const qs_so_options *opt, qs_err *err)
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
