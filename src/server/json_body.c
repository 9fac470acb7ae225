/* json_body.c — reading a request's JSON body (json_body.h): one parse with cJSON that refuses
 * empty bodies, trailing data, over-deep nesting and NUL-holding keys with a 400 that says which,
 * keeps the length of strings holding \u0000, and lets the last of duplicate keys win as Python's
 * json does; then the typed field readers every endpoint uses. */
#include "server/json_body.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/json_strings.h"

#define MAX_JSON_INT 9007199254740991.0 /* 2^53 - 1: larger doubles are not exact integers */

/* How deeply arrays and objects nest up to byte `at` (strings skipped): tells a body refused for
 * its nesting from one that is simply malformed. */
static int nesting_at(const char *body, size_t len, size_t at)
{
    int depth = 0, deepest = 0;
    bool in_string = false;
    for (size_t i = 0; i <= at && i < len; i++) {
        char ch = body[i];
        if (in_string) {
            if (ch == '\\')
                i++;
            else if (ch == '"')
                in_string = false;
        } else if (ch == '"') {
            in_string = true;
        } else if (ch == '[' || ch == '{') {
            if (++depth > deepest)
                deepest = depth;
        } else if (ch == ']' || ch == '}') {
            depth--;
        }
    }
    return deepest;
}
typedef struct keyed_child {
    cJSON *item;
    int order;
} keyed_child;

static int cmp_keyed(const void *a, const void *b)
{
    const keyed_child *x = a, *y = b;
    int c = strcmp(x->item->string ? x->item->string : "", y->item->string ? y->item->string : "");
    return c ? c : x->order - y->order;
}

/* Sorting the members by (name, position) finds the duplicates in n log n, so a body of many
 * keys costs no more than parsing it. */
static void dedupe_object(cJSON *obj)
{
    int n = cJSON_GetArraySize(obj);
    if (n < 2)
        return;
    keyed_child *kids = malloc((size_t)n * sizeof *kids);
    if (!kids)
        return;
    int i = 0;
    for (cJSON *c = obj->child; c; c = c->next, i++)
        kids[i] = (keyed_child){c, i};
    qsort(kids, (size_t)n, sizeof *kids, cmp_keyed);
    for (i = 0; i + 1 < n; i++)
        if (!cmp_keyed(&(keyed_child){kids[i].item, 0}, &(keyed_child){kids[i + 1].item, 0}))
            cJSON_Delete(cJSON_DetachItemViaPointer(obj, kids[i].item));
    free(kids);
}

void qs_json_dedupe_keys(cJSON *node)
{
    if (!node)
        return;
    if (cJSON_IsObject(node))
        dedupe_object(node);
    for (cJSON *c = node->child; c; c = c->next)
        qs_json_dedupe_keys(c);
}

cJSON *qs_json_parse_body(const char *body, size_t len, qs_api_error *e)
{
    if (!body || len == 0) {
        qs_api_errorf(e, 400, NULL, "The request body is empty; expected a JSON object.");
        return NULL;
    }
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(body, len, &end, false);
    if (!root) {
        size_t off = end && end >= body ? (size_t)(end - body) : 0;
        if (nesting_at(body, len, off) >= CJSON_NESTING_LIMIT)
            qs_api_errorf(e, 400, NULL,
                          "The request body nests arrays and objects deeper than %d levels (near byte %zu), which "
                          "this server refuses.",
                          CJSON_NESTING_LIMIT, off);
        else
            qs_api_errorf(e, 400, NULL, "The request body is not valid JSON (error near byte %zu).", off);
        return NULL;
    }
    /* Only whitespace may follow the value. */
    for (const char *p = end; p && p < body + len; p++)
        if (*p != ' ' && *p != '\n' && *p != '\r' && *p != '\t' && *p != '\0') {
            cJSON_Delete(root);
            qs_api_errorf(e, 400, NULL, "The request body has trailing data after the JSON value (byte %zu).",
                          (size_t)(p - body));
            return NULL;
        }
    /* strings holding \u0000 keep their whole length (util/json_strings.h); object keys are names */
    const cJSON *bad_key = NULL;
    int nuls = qs_json_record_string_lengths(root, body, (size_t)(end - body), &bad_key);
    if (nuls < 0 || bad_key) { /* < 0: the text and cJSON's tree disagree, which valid JSON never does */
        cJSON_Delete(root);
        qs_api_errorf(e, 400, NULL,
                      nuls < 0 ? "The request body's strings could not be read." :
                                 "An object key in the request holds a NUL character (\\u0000).");
        return NULL;
    }
    /* after the lengths: their walk pairs the raw text with the tree as cJSON built it */
    qs_json_dedupe_keys(root); /* the last of duplicate keys wins, as in Python's json */
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        qs_api_errorf(e, 400, NULL, "The request body must be a JSON object.");
        return NULL;
    }
    return root;
}

const cJSON *qs_json_field(const cJSON *obj, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    return cJSON_IsNull(v) ? NULL : v;
}

bool qs_json_is_integer(const cJSON *v)
{
    return cJSON_IsNumber(v) && isfinite(v->valuedouble) && fabs(v->valuedouble) <= MAX_JSON_INT &&
           v->valuedouble == floor(v->valuedouble);
}

int qs_json_get_int(const cJSON *obj, const char *name, long long min, long long max, long long *out, qs_api_error *e)
{
    const cJSON *v = qs_json_field(obj, name);
    if (!v)
        return 0;
    if (!qs_json_is_integer(v))
        return qs_api_errorf(e, 400, name, "'%s' must be an integer.", name);
    long long x = (long long)v->valuedouble;
    if (x < min || x > max)
        return qs_api_errorf(e, 400, name, "'%s' must be between %lld and %lld, got %lld.", name, min, max, x);
    *out = x;
    return 0;
}

int qs_json_token_ids(const cJSON *arr, const char *param, int32_t **ids, int *n, qs_api_error *e)
{
    int count = cJSON_GetArraySize(arr);
    *ids = malloc((size_t)(count > 0 ? count : 1) * sizeof **ids);
    *n = 0;
    if (!*ids)
        return qs_api_errorf(e, 500, NULL, "out of memory");
    const cJSON *it;
    cJSON_ArrayForEach(it, arr)
    {
        if (!qs_json_is_integer(it) || it->valuedouble < 0 || it->valuedouble > 2147483647.0) {
            free(*ids);
            *ids = NULL;
            return qs_api_errorf(e, 400, param, "'%s' must hold non-negative integer token ids.", param);
        }
        (*ids)[(*n)++] = (int32_t)it->valuedouble;
    }
    return 0;
}
