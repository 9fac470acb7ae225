/* structured_request.c — parses the structured-output fields of a completions / chat request
 * (structured_request.h), with vLLM's names and meanings:
 *   response_format: {"type": "text" | "json_object" | "json_schema",
 *                     "json_schema": {"name", "schema", "strict", "description"}}
 *   structured_outputs: {"json" | "regex" | "choice" | "grammar" | "json_object": one of them,
 *                        "whitespace_pattern", "disable_any_whitespace"}
 *   guided_json, guided_regex, guided_choice, guided_grammar, guided_whitespace_pattern
 * Only one way of asking may be used in a request. Every unknown key inside these objects is a
 * 400 naming it, as is every compile error (it names the unsupported keyword or construct). */
#include "server/structured_request.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "structured/structured.h"

typedef struct so_spec {
    const char *param;          /* for messages: where the request asked */
    qs_so_kind kind;
    const cJSON *schema;        /* JSON_SCHEMA from an object */
    const char *text;           /* JSON_SCHEMA from a string, REGEX, GBNF */
    const cJSON *choices;       /* choice list */
    const char *ws_pattern;
    bool no_whitespace;
    bool set;
} so_spec;

static int one_of(so_spec *s, const char *param, qs_api_error *e)
{
    if (s->set)
        return qs_api_errorf(e, 400, param,
                             "Only one structured-output constraint may be given, but both '%s' and '%s' ask for one.",
                             s->param, param);
    s->set = true;
    s->param = param;
    return 0;
}

static int take_json(so_spec *s, const cJSON *v, const char *param, qs_api_error *e)
{
    if (one_of(s, param, e))
        return -1;
    s->kind = QS_SO_JSON_SCHEMA;
    if (cJSON_IsObject(v) || cJSON_IsBool(v))
        s->schema = v;
    else if (cJSON_IsString(v))
        s->text = v->valuestring;
    else
        return qs_api_errorf(e, 400, param, "'%s' must be a JSON Schema (an object, or a string holding one).", param);
    return 0;
}

static int take_string(so_spec *s, const cJSON *v, qs_so_kind kind, const char *param, qs_api_error *e)
{
    if (one_of(s, param, e))
        return -1;
    if (!cJSON_IsString(v))
        return qs_api_errorf(e, 400, param, "'%s' must be a string.", param);
    s->kind = kind;
    s->text = v->valuestring;
    return 0;
}

static int take_choice(so_spec *s, const cJSON *v, const char *param, qs_api_error *e)
{
    if (one_of(s, param, e))
        return -1;
    if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) == 0)
        return qs_api_errorf(e, 400, param, "'%s' must be a non-empty list of strings.", param);
    const cJSON *c;
    cJSON_ArrayForEach(c, v) if (!cJSON_IsString(c)) return qs_api_errorf(e, 400, param, "'%s' must be a non-empty list of strings.", param);
    s->choices = v;
    return 0;
}

static int parse_response_format(so_spec *s, const cJSON *rf, qs_api_error *e)
{
    if (!cJSON_IsObject(rf))
        return qs_api_errorf(e, 400, "response_format", "'response_format' must be an object.");
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(rf, "type");
    if (!cJSON_IsString(type))
        return qs_api_errorf(e, 400, "response_format.type",
                             "'response_format.type' must be one of \"text\", \"json_object\", \"json_schema\".");
    const char *t = type->valuestring;
    const cJSON *k;
    cJSON_ArrayForEach(k, rf) if (strcmp(k->string, "type") && !(strcmp(t, "json_schema") == 0 && !strcmp(k->string, "json_schema")))
    {
        char param[64];
        snprintf(param, sizeof param, "response_format.%s", k->string);
        return qs_api_errorf(e, 400, param, "'%s' is not a field of a response_format of type \"%s\".", param, t);
    }
    if (!strcmp(t, "text"))
        return 0;
    if (!strcmp(t, "json_object")) {
        if (one_of(s, "response_format", e))
            return -1;
        s->kind = QS_SO_JSON_OBJECT;
        return 0;
    }
    if (strcmp(t, "json_schema"))
        return qs_api_errorf(e, 400, "response_format.type",
                             "'response_format.type' \"%s\" is not supported; use \"text\", \"json_object\" or "
                             "\"json_schema\".",
                             t);
    const cJSON *js = cJSON_GetObjectItemCaseSensitive(rf, "json_schema");
    if (!cJSON_IsObject(js))
        return qs_api_errorf(e, 400, "response_format.json_schema",
                             "'response_format.json_schema' must be an object with 'name' and 'schema'.");
    cJSON_ArrayForEach(k, js)
    {
        const char *n = k->string;
        char param[96];
        snprintf(param, sizeof param, "response_format.json_schema.%s", n);
        if (!strcmp(n, "name") || !strcmp(n, "description")) {
            if (!cJSON_IsString(k))
                return qs_api_errorf(e, 400, param, "'%s' must be a string.", param);
        } else if (!strcmp(n, "strict")) {
            if (!cJSON_IsBool(k) && !cJSON_IsNull(k))
                return qs_api_errorf(e, 400, param, "'%s' must be a boolean.", param);
        } else if (strcmp(n, "schema")) {
            return qs_api_errorf(e, 400, param, "'%s' is not a field of response_format.json_schema.", param);
        }
    }
    const cJSON *schema = cJSON_GetObjectItemCaseSensitive(js, "schema");
    if (!schema)
        return qs_api_errorf(e, 400, "response_format.json_schema.schema",
                             "'response_format.json_schema.schema' is required.");
    return take_json(s, schema, "response_format.json_schema.schema", e);
}

static int parse_structured_outputs(so_spec *s, const cJSON *so, qs_api_error *e)
{
    if (!cJSON_IsObject(so))
        return qs_api_errorf(e, 400, "structured_outputs", "'structured_outputs' must be an object.");
    const cJSON *k;
    cJSON_ArrayForEach(k, so)
    {
        const char *n = k->string;
        char param[96];
        snprintf(param, sizeof param, "structured_outputs.%s", n);
        if (cJSON_IsNull(k))
            continue;
        int rc = 0;
        if (!strcmp(n, "json"))
            rc = take_json(s, k, "structured_outputs.json", e);
        else if (!strcmp(n, "regex"))
            rc = take_string(s, k, QS_SO_REGEX, "structured_outputs.regex", e);
        else if (!strcmp(n, "grammar"))
            rc = take_string(s, k, QS_SO_GBNF, "structured_outputs.grammar", e);
        else if (!strcmp(n, "choice"))
            rc = take_choice(s, k, "structured_outputs.choice", e);
        else if (!strcmp(n, "json_object")) {
            if (!cJSON_IsBool(k))
                return qs_api_errorf(e, 400, param, "'%s' must be a boolean.", param);
            if (cJSON_IsTrue(k)) {
                rc = one_of(s, param, e);
                s->kind = QS_SO_JSON_OBJECT;
            }
        } else if (!strcmp(n, "whitespace_pattern")) {
            if (!cJSON_IsString(k))
                return qs_api_errorf(e, 400, param, "'%s' must be a string.", param);
            s->ws_pattern = k->valuestring;
        } else if (!strcmp(n, "disable_any_whitespace")) {
            if (!cJSON_IsBool(k))
                return qs_api_errorf(e, 400, param, "'%s' must be a boolean.", param);
            s->no_whitespace = cJSON_IsTrue(k);
        } else {
            return qs_api_errorf(e, 400, param, "'%s' is not supported by this server.", param);
        }
        if (rc)
            return -1;
    }
    if (!s->set)
        return qs_api_errorf(e, 400, "structured_outputs",
                             "'structured_outputs' must give one of json, regex, choice, grammar or json_object.");
    return 0;
}

static int parse_guided(so_spec *s, const cJSON *root, qs_api_error *e)
{
    const cJSON *v;
    if ((v = cJSON_GetObjectItemCaseSensitive(root, "guided_json")) && !cJSON_IsNull(v) && take_json(s, v, "guided_json", e))
        return -1;
    if ((v = cJSON_GetObjectItemCaseSensitive(root, "guided_regex")) && !cJSON_IsNull(v) &&
        take_string(s, v, QS_SO_REGEX, "guided_regex", e))
        return -1;
    if ((v = cJSON_GetObjectItemCaseSensitive(root, "guided_grammar")) && !cJSON_IsNull(v) &&
        take_string(s, v, QS_SO_GBNF, "guided_grammar", e))
        return -1;
    if ((v = cJSON_GetObjectItemCaseSensitive(root, "guided_choice")) && !cJSON_IsNull(v) &&
        take_choice(s, v, "guided_choice", e))
        return -1;
    if ((v = cJSON_GetObjectItemCaseSensitive(root, "guided_whitespace_pattern")) && !cJSON_IsNull(v)) {
        if (!cJSON_IsString(v))
            return qs_api_errorf(e, 400, "guided_whitespace_pattern", "'guided_whitespace_pattern' must be a string.");
        if (s->ws_pattern)
            return qs_api_errorf(e, 400, "guided_whitespace_pattern",
                                 "Give the whitespace pattern once (structured_outputs.whitespace_pattern or "
                                 "guided_whitespace_pattern).");
        s->ws_pattern = v->valuestring;
    }
    return 0;
}

int qs_structured_request_parse(const cJSON *root, struct qs_grammar **out, qs_api_error *e)
{
    *out = NULL;
    so_spec s = {0};
    const cJSON *rf = cJSON_GetObjectItemCaseSensitive(root, "response_format");
    if (rf && !cJSON_IsNull(rf) && parse_response_format(&s, rf, e))
        return -1;
    const cJSON *so = cJSON_GetObjectItemCaseSensitive(root, "structured_outputs");
    if (so && !cJSON_IsNull(so) && parse_structured_outputs(&s, so, e))
        return -1;
    if (parse_guided(&s, root, e))
        return -1;
    if (!s.set) {
        if (s.ws_pattern || s.no_whitespace)
            return qs_api_errorf(e, 400, "guided_whitespace_pattern",
                                 "A whitespace pattern needs a JSON constraint (guided_json, structured_outputs.json, "
                                 "response_format, ...).");
        return 0;
    }
    if ((s.ws_pattern || s.no_whitespace) && s.kind != QS_SO_JSON_SCHEMA && s.kind != QS_SO_JSON_OBJECT)
        return qs_api_errorf(e, 400, s.ws_pattern ? "guided_whitespace_pattern" : "structured_outputs.disable_any_whitespace",
                             "A whitespace pattern only applies to JSON constraints, not to '%s'.", s.param);
    qs_so_options opt = {.whitespace_pattern = s.no_whitespace ? "" : s.ws_pattern};
    qs_err err = {{0}};
    qs_grammar *g = NULL;
    if (s.choices) {
        int n = cJSON_GetArraySize(s.choices);
        const char **c = malloc(sizeof *c * (size_t)n);
        if (!c)
            return qs_api_errorf(e, 500, NULL, "out of memory");
        for (int i = 0; i < n; i++)
            c[i] = cJSON_GetArrayItem(s.choices, i)->valuestring;
        g = qs_grammar_from_choices(c, n, &opt, &err);
        free(c);
    } else if (s.schema) {
        g = qs_grammar_from_schema(s.schema, &opt, &err);
    } else {
        g = qs_grammar_compile(s.kind, s.text, s.text ? strlen(s.text) : 0, &opt, &err);
    }
    if (!g)
        return qs_api_errorf(e, 400, s.param, "'%s' cannot be used: %s", s.param, err.msg);
    *out = g;
    return 0;
}
