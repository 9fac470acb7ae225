/* json_schema_compile.c — JSON Schema (and "any JSON object") to grammar rules. Supported:
 * type (one or a list), properties / required / additionalProperties (absent = false, as
 * OpenAI's strict mode and xgrammar treat it), enum, const, anyOf, oneOf (as anyOf: a grammar
 * cannot count matches), allOf of object schemas (merged), $ref to "#", "#/$defs/..." or any
 * JSON pointer (recursion allowed), items / prefixItems, minItems / maxItems, minLength /
 * maxLength, pattern, minimum / maximum / exclusive* on integers, format date / time / date-time
 * / uuid / email. Annotations (title, description, default, examples, ...) are ignored; any other
 * keyword is an error that names it, never a silent loosening. Properties come out in the
 * schema's order. Whitespace between JSON tokens follows one bounded rule (ws). Hand-written:
 * there is no C library that turns a schema into a grammar. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "structured/grammar.h"
#include "structured/int_range.h"
#include "util/grow.h"

#define DEFAULT_WS "(?:\\n {0,16}| {0,2})"
#define MAX_SCHEMA_DEPTH 64

typedef struct ref_memo {
    const cJSON *target;
    int rule;
} ref_memo;

typedef struct js {
    qs_gbuild *b;
    qs_err *err;
    const cJSON *root;
    int ws;
    int any_value;   /* lazily built */
    int string_rule; /* lazily built */
    ref_memo *refs;
    int n_refs, cap_refs;
    cJSON **owned;   /* merged allOf schemas, freed at the end */
    int n_owned, cap_owned;
    int depth;
    bool failed;
} js;

static int fail(js *j, const char *fmt, const char *arg)
{
    if (!j->failed)
        qs_errf(j->err, fmt, arg);
    j->failed = true;
    return -1;
}

static void seq_ws(js *j, qs_gseq *s) { qs_gseq_rule(j->b, s, j->ws); }
static void seq_lit(js *j, qs_gseq *s, const char *t) { qs_gseq_lit(j->b, s, t, strlen(t)); }

static int rule_of_seq(js *j, qs_gseq *s)
{
    int r = qs_gb_rule(j->b, NULL);
    qs_gb_add_alt(j->b, r, s);
    qs_gseq_free(s);
    return r;
}

static int regex_rule(js *j, const char *re, bool json_string)
{
    qs_regex_flags f = {.json_string = json_string};
    int r = qs_so_regex_compile(j->b, re, strlen(re), &f, j->err);
    if (r < 0)
        j->failed = true;
    return r;
}

/* One JSON string character: unescaped (no '"', '\\', controls) or an escape. */
static qs_gelem string_char(js *j)
{
    static int cached_rule = -1;
    (void)cached_rule;
    int r = regex_rule(j, "[^\"\\\\\\x00-\\x1f]|\\\\[\"\\\\/bfnrt]|\\\\u[0-9a-fA-F]{4}", false);
    return qs_gel_rule(r < 0 ? 0 : r);
}

static int string_rule(js *j, int min, int max)
{
    if (min == 0 && max < 0 && j->string_rule >= 0)
        return j->string_rule;
    qs_gelem ch = string_char(j);
    int rep = qs_gb_repeat(j->b, ch, min, max);
    qs_gseq s = {0};
    seq_lit(j, &s, "\"");
    qs_gseq_rule(j->b, &s, rep);
    seq_lit(j, &s, "\"");
    int r = rule_of_seq(j, &s);
    if (min == 0 && max < 0)
        j->string_rule = r;
    return r;
}

static int literal_rule(js *j, const char *t) { return qs_gb_literal(j->b, t, strlen(t)); }

static int number_rule(js *j) { return regex_rule(j, "-?(?:0|[1-9][0-9]{0,14})(?:\\.[0-9]{1,15})?(?:[eE][+-]?[0-9]{1,3})?", false); }

static int any_value(js *j);

/* "[" ws (item (ws "," ws item)*)? ws "]" or "{" ... "}" for any content. */
static int any_container(js *j, bool object)
{
    int value = any_value(j);
    int member;
    if (object) {
        qs_gseq s = {0};
        qs_gseq_rule(j->b, &s, string_rule(j, 0, -1));
        seq_ws(j, &s);
        seq_lit(j, &s, ":");
        seq_ws(j, &s);
        qs_gseq_rule(j->b, &s, value);
        member = rule_of_seq(j, &s);
    } else {
        member = value;
    }
    int more = qs_gb_rule(j->b, NULL); /* more ::= ws "," ws member more | ε */
    qs_gseq s = {0}, empty = {0};
    seq_ws(j, &s);
    seq_lit(j, &s, ",");
    seq_ws(j, &s);
    qs_gseq_rule(j->b, &s, member);
    qs_gseq_rule(j->b, &s, more);
    qs_gb_add_alt(j->b, more, &s);
    qs_gb_add_alt(j->b, more, &empty);
    qs_gseq_free(&s);
    int r = qs_gb_rule(j->b, NULL);
    seq_lit(j, &s, object ? "{" : "[");
    seq_ws(j, &s);
    seq_lit(j, &s, object ? "}" : "]");
    qs_gb_add_alt(j->b, r, &s);
    s.n = 0;
    seq_lit(j, &s, object ? "{" : "[");
    seq_ws(j, &s);
    qs_gseq_rule(j->b, &s, member);
    qs_gseq_rule(j->b, &s, more);
    seq_ws(j, &s);
    seq_lit(j, &s, object ? "}" : "]");
    qs_gb_add_alt(j->b, r, &s);
    qs_gseq_free(&s);
    return r;
}

static int any_value(js *j)
{
    if (j->any_value >= 0)
        return j->any_value;
    int r = qs_gb_rule(j->b, "value");
    j->any_value = r;
    int parts[7] = {any_container(j, true), any_container(j, false), string_rule(j, 0, -1), number_rule(j),
                    literal_rule(j, "true"), literal_rule(j, "false"), literal_rule(j, "null")};
    for (int i = 0; i < 7; i++) {
        qs_gseq s = {0};
        qs_gseq_rule(j->b, &s, parts[i]);
        qs_gb_add_alt(j->b, r, &s);
        qs_gseq_free(&s);
    }
    return r;
}

static bool is_annotation(const char *k)
{
    static const char *const names[] = {"title", "description", "$schema", "$id", "$comment", "default", "examples",
                                        "deprecated", "readOnly", "writeOnly", "$defs", "definitions", NULL};
    for (int i = 0; names[i]; i++)
        if (!strcmp(k, names[i]))
            return true;
    return false;
}

static bool is_supported(const char *k)
{
    static const char *const names[] = {"type", "properties", "required", "additionalProperties", "enum", "const",
                                        "anyOf", "oneOf", "allOf", "$ref", "items", "prefixItems", "minItems",
                                        "maxItems", "minLength", "maxLength", "pattern", "minimum", "maximum",
                                        "exclusiveMinimum", "exclusiveMaximum", "format", NULL};
    for (int i = 0; names[i]; i++)
        if (!strcmp(k, names[i]))
            return true;
    return is_annotation(k);
}

static int schema_rule(js *j, const cJSON *schema);

static int alts_rule(js *j, const int *rules, int n)
{
    int r = qs_gb_rule(j->b, NULL);
    for (int i = 0; i < n; i++) {
        qs_gseq s = {0};
        qs_gseq_rule(j->b, &s, rules[i]);
        qs_gb_add_alt(j->b, r, &s);
        qs_gseq_free(&s);
    }
    return r;
}

static const cJSON *resolve_ref(js *j, const char *ref)
{
    if (ref[0] != '#')
        return fail(j, "unsupported JSON Schema $ref '%s' (only local references starting with '#')", ref), NULL;
    const cJSON *node = j->root;
    const char *p = ref + 1;
    while (*p == '/') {
        p++;
        char key[256];
        size_t n = 0;
        while (*p && *p != '/' && n + 1 < sizeof key) {
            if (p[0] == '~' && p[1] == '0') {
                key[n++] = '~';
                p += 2;
            } else if (p[0] == '~' && p[1] == '1') {
                key[n++] = '/';
                p += 2;
            } else {
                key[n++] = *p++;
            }
        }
        key[n] = 0;
        node = cJSON_IsArray(node) ? cJSON_GetArrayItem(node, atoi(key)) : cJSON_GetObjectItemCaseSensitive(node, key);
        if (!node)
            return fail(j, "JSON Schema $ref '%s' points at nothing", ref), NULL;
    }
    if (*p)
        return fail(j, "unsupported JSON Schema $ref '%s'", ref), NULL;
    return node;
}

static int ref_rule(js *j, const char *ref)
{
    const cJSON *target = resolve_ref(j, ref);
    if (!target)
        return -1;
    for (int i = 0; i < j->n_refs; i++)
        if (j->refs[i].target == target)
            return j->refs[i].rule;
    ref_memo *p = qs_grow(j->refs, &j->cap_refs, j->n_refs + 1, 8, sizeof *p);
    if (!p)
        return fail(j, "%s", "out of memory");
    j->refs = p;
    int r = qs_gb_rule(j->b, ref);
    j->refs[j->n_refs++] = (ref_memo){target, r};
    int body = schema_rule(j, target);
    if (body < 0)
        return -1;
    qs_gseq s = {0};
    qs_gseq_rule(j->b, &s, body);
    qs_gb_add_alt(j->b, r, &s);
    qs_gseq_free(&s);
    return r;
}

static int value_literal(js *j, const cJSON *v)
{
    char *t = cJSON_PrintUnformatted(v);
    if (!t)
        return fail(j, "%s", "out of memory");
    int r = literal_rule(j, t);
    cJSON_free(t);
    return r;
}

static bool get_int(const cJSON *o, const char *k, long long *v, bool *present)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, k);
    *present = x != NULL;
    if (!x)
        return true;
    if (!cJSON_IsNumber(x))
        return false;
    *v = (long long)x->valuedouble;
    return true;
}

static int count_keyword(js *j, const cJSON *o, const char *k, int *out)
{
    long long v = -1;
    bool present;
    if (!get_int(o, k, &v, &present) || (present && (v < 0 || v > 100000)))
        return fail(j, "JSON Schema keyword '%s' must be a non-negative integer", k);
    *out = present ? (int)v : -1;
    return 0;
}

static int string_schema(js *j, const cJSON *o)
{
    const cJSON *pattern = cJSON_GetObjectItemCaseSensitive(o, "pattern");
    const cJSON *format = cJSON_GetObjectItemCaseSensitive(o, "format");
    int min, max;
    if (count_keyword(j, o, "minLength", &min) || count_keyword(j, o, "maxLength", &max))
        return -1;
    if ((pattern || format) && (min >= 0 || max >= 0))
        return fail(j, "%s", "JSON Schema: minLength / maxLength together with pattern or format is not supported");
    if (pattern && format)
        return fail(j, "%s", "JSON Schema: pattern together with format is not supported");
    const char *re = NULL;
    if (format) {
        static const struct {
            const char *name, *re;
        } formats[] = {
            {"date", "[0-9]{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])"},
            {"time", "(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\\.[0-9]{1,9})?(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])"},
            {"date-time", "[0-9]{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]"
                          "(?:\\.[0-9]{1,9})?(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])"},
            {"uuid", "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"},
            {"email", "[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}(?:\\.[A-Za-z0-9-]{1,63}){1,8}"},
        };
        if (!cJSON_IsString(format))
            return fail(j, "%s", "JSON Schema keyword 'format' must be a string");
        for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++)
            if (!strcmp(format->valuestring, formats[i].name))
                re = formats[i].re;
        if (!re)
            return fail(j, "unsupported JSON Schema format '%s'", format->valuestring);
    } else if (pattern) {
        if (!cJSON_IsString(pattern))
            return fail(j, "%s", "JSON Schema keyword 'pattern' must be a string");
        re = pattern->valuestring;
    }
    if (!re)
        return string_rule(j, min < 0 ? 0 : min, max);
    int body = regex_rule(j, re, true);
    if (body < 0) {
        qs_err_prefix(j->err, "JSON Schema %s: ", pattern ? "pattern" : "format");
        return -1;
    }
    qs_gseq s = {0};
    seq_lit(j, &s, "\"");
    qs_gseq_rule(j->b, &s, body);
    seq_lit(j, &s, "\"");
    return rule_of_seq(j, &s);
}

static int integer_schema(js *j, const cJSON *o)
{
    bool has_lo = false, has_hi = false;
    long long lo = 0, hi = 0;
    static const char *const keys[] = {"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"};
    for (int k = 0; k < 4; k++) {
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, keys[k]);
        if (!x)
            continue;
        if (!cJSON_IsNumber(x))
            return fail(j, "JSON Schema keyword '%s' must be a number", keys[k]);
        double v = x->valuedouble;
        if (fabs(v) > 1e15)
            return fail(j, "JSON Schema keyword '%s' is beyond 15 digits (not supported)", keys[k]);
        long long b = k < 2 ? (long long)ceil(v) : (long long)floor(v);
        if (k == 1 && (double)b == v)
            b++;
        if (k == 3 && (double)b == v)
            b--;
        if (k < 2) {
            if (!has_lo || b > lo)
                lo = b;
            has_lo = true;
        } else {
            if (!has_hi || b < hi)
                hi = b;
            has_hi = true;
        }
    }
    char *re = qs_int_range_regex(has_lo, lo, has_hi, hi);
    if (!re)
        return fail(j, "%s", "JSON Schema: the integer bounds leave no value");
    int r = regex_rule(j, re, false);
    free(re);
    return r;
}

static int array_schema(js *j, const cJSON *o)
{
    const cJSON *items = cJSON_GetObjectItemCaseSensitive(o, "items");
    const cJSON *prefix = cJSON_GetObjectItemCaseSensitive(o, "prefixItems");
    int min, max;
    if (count_keyword(j, o, "minItems", &min) || count_keyword(j, o, "maxItems", &max))
        return -1;
    if (min < 0)
        min = 0;
    if (prefix && !cJSON_IsArray(prefix))
        return fail(j, "%s", "JSON Schema keyword 'prefixItems' must be an array");
    int k = prefix ? cJSON_GetArraySize(prefix) : 0;
    bool items_false = cJSON_IsFalse(items);
    int item_rule = -1;
    if (!items_false) {
        item_rule = items ? schema_rule(j, items) : any_value(j);
        if (item_rule < 0)
            return -1;
    }
    if (items_false && (max < 0 || max > k))
        max = k;
    if (max >= 0 && min > max)
        return fail(j, "%s", "JSON Schema: minItems is larger than the items allowed");
    int *pre = malloc(sizeof(int) * (size_t)(k ? k : 1));
    if (!pre)
        return fail(j, "%s", "out of memory");
    for (int i = 0; i < k; i++) {
        pre[i] = schema_rule(j, cJSON_GetArrayItem(prefix, i));
        if (pre[i] < 0) {
            free(pre);
            return -1;
        }
    }
    /* after(i): i >= 1 items written; ε once i >= minItems, another item while below maxItems */
    int top, next;
    qs_gseq s = {0}, empty = {0};
    if (max < 0) {
        top = k > min ? k : min;
        if (top < 1)
            top = 1;
        next = qs_gb_rule(j->b, NULL); /* after(top) ::= ws "," ws item after(top) | ε */
        seq_ws(j, &s);
        seq_lit(j, &s, ",");
        seq_ws(j, &s);
        qs_gseq_rule(j->b, &s, item_rule);
        qs_gseq_rule(j->b, &s, next);
        qs_gb_add_alt(j->b, next, &s);
        qs_gb_add_alt(j->b, next, &empty);
        s.n = 0;
    } else {
        top = max > 0 ? max : 1;
        next = qs_gb_rule(j->b, NULL); /* after(max) ::= ε */
        qs_gb_add_alt(j->b, next, &empty);
    }
    for (int i = top - 1; i >= 1 && !j->failed && !j->b->too_big && !j->b->oom; i--) {
        int r = qs_gb_rule(j->b, NULL);
        seq_ws(j, &s);
        seq_lit(j, &s, ",");
        seq_ws(j, &s);
        qs_gseq_rule(j->b, &s, i < k ? pre[i] : item_rule);
        qs_gseq_rule(j->b, &s, next);
        qs_gb_add_alt(j->b, r, &s);
        s.n = 0;
        if (i >= min)
            qs_gb_add_alt(j->b, r, &empty);
        next = r;
    }
    int r = qs_gb_rule(j->b, NULL);
    if (min == 0) {
        seq_lit(j, &s, "[");
        seq_ws(j, &s);
        seq_lit(j, &s, "]");
        qs_gb_add_alt(j->b, r, &s);
        s.n = 0;
    }
    if (max != 0) {
        seq_lit(j, &s, "[");
        seq_ws(j, &s);
        qs_gseq_rule(j->b, &s, k > 0 ? pre[0] : item_rule);
        qs_gseq_rule(j->b, &s, next);
        seq_ws(j, &s);
        seq_lit(j, &s, "]");
        qs_gb_add_alt(j->b, r, &s);
    }
    qs_gseq_free(&s);
    free(pre);
    if (!j->b->rules[r].n_alts && !j->b->oom && !j->b->too_big)
        return fail(j, "%s", "JSON Schema: the array constraints leave no value");
    return r;
}

typedef struct prop {
    const char *name;
    int kv;
    bool required;
} prop;

static int kv_rule(js *j, int key_rule, int value_rule)
{
    qs_gseq s = {0};
    qs_gseq_rule(j->b, &s, key_rule);
    seq_ws(j, &s);
    seq_lit(j, &s, ":");
    seq_ws(j, &s);
    qs_gseq_rule(j->b, &s, value_rule);
    return rule_of_seq(j, &s);
}

static int object_schema(js *j, const cJSON *o)
{
    const cJSON *props = cJSON_GetObjectItemCaseSensitive(o, "properties");
    const cJSON *required = cJSON_GetObjectItemCaseSensitive(o, "required");
    const cJSON *additional = cJSON_GetObjectItemCaseSensitive(o, "additionalProperties");
    if (props && !cJSON_IsObject(props))
        return fail(j, "%s", "JSON Schema keyword 'properties' must be an object");
    if (required && !cJSON_IsArray(required))
        return fail(j, "%s", "JSON Schema keyword 'required' must be an array");
    int n = props ? cJSON_GetArraySize(props) : 0;
    prop *p = calloc((size_t)(n ? n : 1), sizeof *p);
    if (!p)
        return fail(j, "%s", "out of memory");
    int i = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, props)
    {
        p[i].name = it->string;
        const cJSON *req;
        cJSON_ArrayForEach(req, required) if (cJSON_IsString(req) && !strcmp(req->valuestring, it->string)) p[i].required = true;
        cJSON *key = cJSON_CreateString(it->string);
        char *kt = key ? cJSON_PrintUnformatted(key) : NULL;
        cJSON_Delete(key);
        int v = schema_rule(j, it);
        if (!kt || v < 0) {
            cJSON_free(kt);
            free(p);
            return kt ? -1 : fail(j, "%s", "out of memory");
        }
        p[i].kv = kv_rule(j, literal_rule(j, kt), v);
        cJSON_free(kt);
        i++;
    }
    const cJSON *req;
    cJSON_ArrayForEach(req, required)
    {
        bool known = false;
        for (int k = 0; k < n; k++)
            known |= cJSON_IsString(req) && !strcmp(req->valuestring, p[k].name);
        if (!known) {
            free(p);
            return fail(j, "JSON Schema: required property '%s' is not in 'properties' (not supported)",
                        cJSON_IsString(req) ? req->valuestring : "?");
        }
    }
    int add_kv = -1;
    if (additional && !cJSON_IsFalse(additional)) {
        int v = cJSON_IsTrue(additional) ? any_value(j) : schema_rule(j, additional);
        if (v < 0) {
            free(p);
            return -1;
        }
        add_kv = kv_rule(j, string_rule(j, 0, -1), v);
    }
    /* tail: after at least one member; head: none yet */
    qs_gseq s = {0}, empty = {0};
    int tail = qs_gb_rule(j->b, NULL);
    if (add_kv >= 0) {
        seq_ws(j, &s);
        seq_lit(j, &s, ",");
        seq_ws(j, &s);
        qs_gseq_rule(j->b, &s, add_kv);
        qs_gseq_rule(j->b, &s, tail);
        qs_gb_add_alt(j->b, tail, &s);
        s.n = 0;
    }
    qs_gb_add_alt(j->b, tail, &empty);
    int head = qs_gb_rule(j->b, NULL);
    if (add_kv >= 0) {
        qs_gseq_rule(j->b, &s, add_kv);
        qs_gseq_rule(j->b, &s, tail);
        qs_gb_add_alt(j->b, head, &s);
        s.n = 0;
    }
    qs_gb_add_alt(j->b, head, &empty);
    for (int k = n - 1; k >= 0; k--) {
        int t2 = qs_gb_rule(j->b, NULL), h2 = qs_gb_rule(j->b, NULL);
        seq_ws(j, &s);
        seq_lit(j, &s, ",");
        seq_ws(j, &s);
        qs_gseq_rule(j->b, &s, p[k].kv);
        qs_gseq_rule(j->b, &s, tail);
        qs_gb_add_alt(j->b, t2, &s);
        s.n = 0;
        qs_gseq_rule(j->b, &s, p[k].kv);
        qs_gseq_rule(j->b, &s, tail);
        qs_gb_add_alt(j->b, h2, &s);
        s.n = 0;
        if (!p[k].required) {
            qs_gseq_rule(j->b, &s, tail);
            qs_gb_add_alt(j->b, t2, &s);
            s.n = 0;
            qs_gseq_rule(j->b, &s, head);
            qs_gb_add_alt(j->b, h2, &s);
            s.n = 0;
        }
        tail = t2;
        head = h2;
    }
    free(p);
    int r = qs_gb_rule(j->b, NULL);
    seq_lit(j, &s, "{");
    seq_ws(j, &s);
    qs_gseq_rule(j->b, &s, head);
    seq_ws(j, &s);
    seq_lit(j, &s, "}");
    qs_gb_add_alt(j->b, r, &s);
    qs_gseq_free(&s);
    return r;
}

static int typed_rule(js *j, const cJSON *o, const char *type)
{
    if (!strcmp(type, "string"))
        return string_schema(j, o);
    if (!strcmp(type, "integer"))
        return integer_schema(j, o);
    if (!strcmp(type, "number")) {
        static const char *const keys[] = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"};
        for (int k = 0; k < 4; k++)
            if (cJSON_GetObjectItemCaseSensitive(o, keys[k]))
                return fail(j, "unsupported JSON Schema keyword '%s' on type \"number\" (supported on \"integer\")", keys[k]);
        return number_rule(j);
    }
    if (!strcmp(type, "boolean")) {
        int parts[2] = {literal_rule(j, "true"), literal_rule(j, "false")};
        return alts_rule(j, parts, 2);
    }
    if (!strcmp(type, "null"))
        return literal_rule(j, "null");
    if (!strcmp(type, "object"))
        return object_schema(j, o);
    if (!strcmp(type, "array"))
        return array_schema(j, o);
    return fail(j, "unsupported JSON Schema type '%s'", type);
}

static bool has_any(const cJSON *o, const char *const *keys)
{
    for (int i = 0; keys[i]; i++)
        if (cJSON_GetObjectItemCaseSensitive(o, keys[i]))
            return true;
    return false;
}

/* allOf: every member must be an object schema; their properties / required merge into one. */
static int all_of(js *j, const cJSON *o, const cJSON *all)
{
    if (!cJSON_IsArray(all) || cJSON_GetArraySize(all) == 0)
        return fail(j, "%s", "JSON Schema keyword 'allOf' must be a non-empty array");
    cJSON *merged = cJSON_CreateObject();
    cJSON *props = cJSON_CreateObject(), *req = cJSON_CreateArray();
    if (!merged || !props || !req) {
        cJSON_Delete(merged);
        cJSON_Delete(props);
        cJSON_Delete(req);
        return fail(j, "%s", "out of memory");
    }
    cJSON_AddItemToObject(merged, "type", cJSON_CreateString("object"));
    cJSON_AddItemToObject(merged, "properties", props);
    cJSON_AddItemToObject(merged, "required", req);
    const cJSON *parts[65];
    int n = 0;
    parts[n++] = o;
    const cJSON *it;
    cJSON_ArrayForEach(it, all)
    {
        const cJSON *m = it;
        const cJSON *ref = cJSON_GetObjectItemCaseSensitive(m, "$ref");
        if (ref && cJSON_IsString(ref))
            m = resolve_ref(j, ref->valuestring);
        if (!m || n == 65) {
            cJSON_Delete(merged);
            return j->failed ? -1 : fail(j, "%s", "JSON Schema 'allOf' has too many members");
        }
        parts[n++] = m;
    }
    for (int i = 0; i < n; i++) {
        const cJSON *child;
        cJSON_ArrayForEach(child, parts[i])
        {
            const char *k = child->string;
            if (!strcmp(k, "allOf") && i == 0)
                continue;
            if (!strcmp(k, "type")) {
                if (!cJSON_IsString(child) || strcmp(child->valuestring, "object")) {
                    cJSON_Delete(merged);
                    return fail(j, "%s", "unsupported JSON Schema 'allOf' of non-object schemas");
                }
            } else if (!strcmp(k, "properties")) {
                const cJSON *pp;
                cJSON_ArrayForEach(pp, child)
                {
                    cJSON_DeleteItemFromObjectCaseSensitive(props, pp->string);
                    cJSON_AddItemToObject(props, pp->string, cJSON_Duplicate(pp, true));
                }
            } else if (!strcmp(k, "required")) {
                const cJSON *rr;
                cJSON_ArrayForEach(rr, child) cJSON_AddItemToArray(req, cJSON_Duplicate(rr, true));
            } else if (!strcmp(k, "additionalProperties")) {
                cJSON_DeleteItemFromObjectCaseSensitive(merged, k);
                cJSON_AddItemToObject(merged, k, cJSON_Duplicate(child, true));
            } else if (!is_annotation(k) && !(i > 0 && !strcmp(k, "$ref"))) {
                cJSON_Delete(merged);
                return fail(j, "unsupported JSON Schema keyword '%s' inside 'allOf' (only object schemas merge)", k);
            }
        }
    }
    cJSON **p = qs_grow(j->owned, &j->cap_owned, j->n_owned + 1, 4, sizeof *p);
    if (!p) {
        cJSON_Delete(merged);
        return fail(j, "%s", "out of memory");
    }
    j->owned = p;
    j->owned[j->n_owned++] = merged;
    return object_schema(j, merged);
}

static int schema_rule(js *j, const cJSON *o)
{
    if (j->failed)
        return -1;
    if (cJSON_IsTrue(o))
        return any_value(j);
    if (cJSON_IsFalse(o))
        return fail(j, "%s", "JSON Schema 'false' matches nothing");
    if (!cJSON_IsObject(o))
        return fail(j, "%s", "a JSON Schema must be an object or a boolean");
    if (++j->depth > MAX_SCHEMA_DEPTH)
        return fail(j, "%s", "JSON Schema nested too deeply");
    int r = -1;
    const cJSON *k;
    cJSON_ArrayForEach(k, o) if (!is_supported(k->string))
    {
        r = fail(j, "unsupported JSON Schema keyword '%s'", k->string);
        goto out;
    }
    const cJSON *ref = cJSON_GetObjectItemCaseSensitive(o, "$ref");
    const cJSON *cnst = cJSON_GetObjectItemCaseSensitive(o, "const");
    const cJSON *en = cJSON_GetObjectItemCaseSensitive(o, "enum");
    const cJSON *any = cJSON_GetObjectItemCaseSensitive(o, "anyOf");
    if (!any)
        any = cJSON_GetObjectItemCaseSensitive(o, "oneOf");
    const cJSON *all = cJSON_GetObjectItemCaseSensitive(o, "allOf");
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(o, "type");
    int n_combinators = !!ref + !!cnst + !!en + !!any + !!all;
    if (n_combinators > 1 || (n_combinators && type && !cnst && !en && !all)) {
        r = fail(j, "%s", "unsupported JSON Schema: '$ref', 'const', 'enum', 'anyOf'/'oneOf' and 'allOf' combined with each other or with 'type'");
        goto out;
    }
    if (ref) {
        r = cJSON_IsString(ref) ? ref_rule(j, ref->valuestring) : fail(j, "%s", "JSON Schema '$ref' must be a string");
    } else if (cnst) {
        r = value_literal(j, cnst);
    } else if (en) {
        int n = cJSON_GetArraySize(en);
        if (!cJSON_IsArray(en) || n == 0) {
            r = fail(j, "%s", "JSON Schema 'enum' must be a non-empty array");
            goto out;
        }
        int *rules = malloc(sizeof(int) * (size_t)n);
        if (!rules) {
            r = fail(j, "%s", "out of memory");
            goto out;
        }
        for (int i = 0; i < n; i++)
            rules[i] = value_literal(j, cJSON_GetArrayItem(en, i));
        r = j->failed ? -1 : alts_rule(j, rules, n);
        free(rules);
    } else if (any) {
        int n = cJSON_GetArraySize(any);
        if (!cJSON_IsArray(any) || n == 0) {
            r = fail(j, "%s", "JSON Schema 'anyOf' / 'oneOf' must be a non-empty array");
            goto out;
        }
        int *rules = malloc(sizeof(int) * (size_t)n);
        if (!rules) {
            r = fail(j, "%s", "out of memory");
            goto out;
        }
        for (int i = 0; i < n && !j->failed; i++)
            rules[i] = schema_rule(j, cJSON_GetArrayItem(any, i));
        r = j->failed ? -1 : alts_rule(j, rules, n);
        free(rules);
    } else if (all) {
        r = all_of(j, o, all);
    } else if (type) {
        if (cJSON_IsString(type)) {
            r = typed_rule(j, o, type->valuestring);
        } else if (cJSON_IsArray(type) && cJSON_GetArraySize(type) > 0) {
            int n = cJSON_GetArraySize(type);
            int rules[8];
            if (n > 8) {
                r = fail(j, "%s", "JSON Schema 'type' lists too many types");
                goto out;
            }
            for (int i = 0; i < n && !j->failed; i++) {
                const cJSON *t = cJSON_GetArrayItem(type, i);
                rules[i] = cJSON_IsString(t) ? typed_rule(j, o, t->valuestring) : fail(j, "%s", "JSON Schema 'type' entries must be strings");
            }
            r = j->failed ? -1 : alts_rule(j, rules, n);
        } else {
            r = fail(j, "%s", "JSON Schema 'type' must be a string or a non-empty array of strings");
        }
    } else {
        static const char *const obj[] = {"properties", "required", "additionalProperties", NULL};
        static const char *const arr[] = {"items", "prefixItems", "minItems", "maxItems", NULL};
        static const char *const str[] = {"minLength", "maxLength", "pattern", "format", NULL};
        static const char *const num[] = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", NULL};
        if (has_any(o, obj))
            r = object_schema(j, o);
        else if (has_any(o, arr))
            r = array_schema(j, o);
        else if (has_any(o, str))
            r = string_schema(j, o);
        else if (has_any(o, num))
            r = integer_schema(j, o);
        else
            r = any_value(j);
    }
out:
    j->depth--;
    return j->failed ? -1 : r;
}

static int ws_rule(js *j, const char *ws_pattern)
{
    const char *re = ws_pattern ? ws_pattern : DEFAULT_WS;
    qs_regex_flags f = {0};
    int r = qs_so_regex_compile(j->b, re, strlen(re), &f, j->err);
    if (r < 0) {
        qs_err_prefix(j->err, "whitespace pattern: ");
        j->failed = true;
    }
    return r;
}

static void js_init(js *j, qs_gbuild *b, qs_err *err)
{
    memset(j, 0, sizeof *j);
    j->b = b;
    j->err = err;
    j->any_value = -1;
    j->string_rule = -1;
}

static void js_free(js *j)
{
    free(j->refs);
    for (int i = 0; i < j->n_owned; i++)
        cJSON_Delete(j->owned[i]);
    free(j->owned);
}

int qs_json_schema_compile(qs_gbuild *b, const cJSON *schema, const char *ws_pattern, qs_err *err)
{
    js j;
    js_init(&j, b, err);
    j.root = schema;
    j.ws = ws_rule(&j, ws_pattern);
    int r = j.failed ? -1 : schema_rule(&j, schema);
    js_free(&j);
    return r;
}

int qs_json_object_compile(qs_gbuild *b, const char *ws_pattern, qs_err *err)
{
    js j;
    js_init(&j, b, err);
    j.ws = ws_rule(&j, ws_pattern);
    any_value(&j);
    int r = j.failed ? -1 : any_container(&j, true);
    js_free(&j);
    return r;
}
