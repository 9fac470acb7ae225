/* jinja_value.c — the value type of the chat-template interpreter and its Python semantics:
 * conversion from cJSON, truthiness, ==, ordering, str() / repr() as Python prints them, and
 * json.dumps as HF's tojson filter calls it (ensure_ascii=False, ", " / ": " separators). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unictype.h>

#include "jinja/jinja_value.h"
#include "util/json_strings.h"

static qs_jv *new_value(qs_jj_arena *a, qs_jv_kind kind)
{
    qs_jv *v = qs_jj_alloc(a, sizeof *v);
    v->kind = kind;
    return v;
}

qs_jv *qs_jv_undefined(qs_jj_arena *a, const char *name)
{
    qs_jv *v = new_value(a, QS_JV_UNDEFINED);
    v->undef_name = name ? qs_jj_strndup(a, name, strlen(name)) : NULL;
    return v;
}

qs_jv *qs_jv_none(qs_jj_arena *a) { return new_value(a, QS_JV_NONE); }

qs_jv *qs_jv_bool(qs_jj_arena *a, bool b)
{
    qs_jv *v = new_value(a, QS_JV_BOOL);
    v->b = b;
    return v;
}

qs_jv *qs_jv_int(qs_jj_arena *a, long long i)
{
    qs_jv *v = new_value(a, QS_JV_INT);
    v->i = i;
    return v;
}

qs_jv *qs_jv_float(qs_jj_arena *a, double f)
{
    qs_jv *v = new_value(a, QS_JV_FLOAT);
    v->f = f;
    return v;
}

qs_jv *qs_jv_str(qs_jj_arena *a, const char *s, size_t len)
{
    qs_jv *v = new_value(a, QS_JV_STRING);
    v->str.s = qs_jj_strndup(a, s, len);
    v->str.len = len;
    return v;
}

qs_jv *qs_jv_cstr(qs_jj_arena *a, const char *s) { return qs_jv_str(a, s, strlen(s)); }

qs_jv *qs_jv_list_new(qs_jj_arena *a, bool is_tuple)
{
    qs_jv *v = new_value(a, QS_JV_LIST);
    v->list = qs_jj_alloc(a, sizeof *v->list);
    v->list->is_tuple = is_tuple;
    return v;
}

void qs_jv_list_push(qs_jj_arena *a, qs_jv *list, qs_jv *item)
{
    qs_jv_list *l = list->list;
    if (l->len == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 8;
        qs_jv **items = qs_jj_alloc(a, cap * sizeof *items);
        if (l->len)
            memcpy(items, l->items, l->len * sizeof *items);
        l->items = items;
        l->cap = cap;
    }
    l->items[l->len++] = item;
}

qs_jv *qs_jv_dict_new(qs_jj_arena *a)
{
    qs_jv *v = new_value(a, QS_JV_DICT);
    v->dict = qs_jj_alloc(a, sizeof *v->dict);
    return v;
}

static long dict_find(const qs_jv *dict, const qs_jv *key)
{
    const qs_jv_dict *d = dict->dict;
    for (size_t i = 0; i < d->len; i++)
        if (qs_jv_equal(d->keys[i], key))
            return (long)i;
    return -1;
}

void qs_jv_dict_set(qs_jj_arena *a, qs_jv *dict, qs_jv *key, qs_jv *val)
{
    qs_jv_dict *d = dict->dict;
    long at = dict_find(dict, key);
    if (at >= 0) {
        d->vals[at] = val;
        return;
    }
    if (d->len == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 8;
        qs_jv **keys = qs_jj_alloc(a, cap * sizeof *keys), **vals = qs_jj_alloc(a, cap * sizeof *vals);
        if (d->len) {
            memcpy(keys, d->keys, d->len * sizeof *keys);
            memcpy(vals, d->vals, d->len * sizeof *vals);
        }
        d->keys = keys;
        d->vals = vals;
        d->cap = cap;
    }
    d->keys[d->len] = key;
    d->vals[d->len] = val;
    d->len++;
}

void qs_jv_dict_clear(qs_jv *dict) { dict->dict->len = 0; }

qs_jv *qs_jv_dict_get(const qs_jv *dict, const qs_jv *key)
{
    long at = dict_find(dict, key);
    return at >= 0 ? dict->dict->vals[at] : NULL;
}

qs_jv *qs_jv_dict_get_cstr(const qs_jv *dict, const char *key)
{
    const qs_jv_dict *d = dict->dict;
    size_t n = strlen(key);
    for (size_t i = 0; i < d->len; i++) {
        const qs_jv *k = d->keys[i];
        if (k->kind == QS_JV_STRING && k->str.len == n && !memcmp(k->str.s, key, n))
            return d->vals[i];
    }
    return NULL;
}

qs_jv *qs_jv_from_json(qs_jj_arena *a, const cJSON *j)
{
    if (!j || cJSON_IsNull(j))
        return qs_jv_none(a);
    if (cJSON_IsBool(j))
        return qs_jv_bool(a, cJSON_IsTrue(j));
    if (cJSON_IsNumber(j)) {
        /* cJSON keeps only a double: integral values within range become ints (JSON "1.0"
         * therefore prints as 1, a documented difference from Python's json.loads). */
        double d = j->valuedouble;
        if (isfinite(d) && d == floor(d) && fabs(d) < 9007199254740992.0)
            return qs_jv_int(a, (long long)d);
        return qs_jv_float(a, d);
    }
    if (cJSON_IsString(j))
        return j->valuestring ? qs_jv_str(a, j->valuestring, qs_json_string_len(j)) : qs_jv_cstr(a, "");
    if (cJSON_IsArray(j)) {
        qs_jv *l = qs_jv_list_new(a, false);
        for (const cJSON *c = j->child; c; c = c->next)
            qs_jv_list_push(a, l, qs_jv_from_json(a, c));
        return l;
    }
    if (cJSON_IsObject(j)) {
        qs_jv *d = qs_jv_dict_new(a);
        for (const cJSON *c = j->child; c; c = c->next)
            qs_jv_dict_set(a, d, qs_jv_cstr(a, c->string ? c->string : ""), qs_jv_from_json(a, c));
        return d;
    }
    return qs_jv_none(a);
}

bool qs_jv_truthy(const qs_jv *v)
{
    switch (v->kind) {
    case QS_JV_UNDEFINED:
    case QS_JV_NONE:
        return false;
    case QS_JV_BOOL:
        return v->b;
    case QS_JV_INT:
        return v->i != 0;
    case QS_JV_FLOAT:
        return v->f != 0.0;
    case QS_JV_STRING:
        return v->str.len > 0;
    case QS_JV_LIST:
        return v->list->len > 0;
    case QS_JV_DICT:
        return v->dict->len > 0;
    default:
        return true;
    }
}

bool qs_jv_is_number(const qs_jv *v)
{
    return v->kind == QS_JV_BOOL || v->kind == QS_JV_INT || v->kind == QS_JV_FLOAT;
}

double qs_jv_as_double(const qs_jv *v)
{
    switch (v->kind) {
    case QS_JV_BOOL:
        return v->b;
    case QS_JV_INT:
        return (double)v->i;
    case QS_JV_FLOAT:
        return v->f;
    default:
        return 0;
    }
}

const char *qs_jv_type_name(const qs_jv *v)
{
    switch (v->kind) {
    case QS_JV_UNDEFINED:
        return "Undefined";
    case QS_JV_NONE:
        return "NoneType";
    case QS_JV_BOOL:
        return "bool";
    case QS_JV_INT:
        return "int";
    case QS_JV_FLOAT:
        return "float";
    case QS_JV_STRING:
        return "str";
    case QS_JV_LIST:
        return v->list->is_tuple ? "tuple" : "list";
    case QS_JV_DICT:
        return "dict";
    case QS_JV_NAMESPACE:
        return "Namespace";
    case QS_JV_MACRO:
        return "Macro";
    case QS_JV_BUILTIN:
        return "function";
    case QS_JV_LOOP:
        return "LoopContext";
    }
    return "object";
}

bool qs_jv_equal(const qs_jv *x, const qs_jv *y)
{
    if (qs_jv_is_number(x) && qs_jv_is_number(y)) {
        if (x->kind != QS_JV_FLOAT && y->kind != QS_JV_FLOAT) {
            long long a = x->kind == QS_JV_BOOL ? x->b : x->i, b = y->kind == QS_JV_BOOL ? y->b : y->i;
            return a == b;
        }
        return qs_jv_as_double(x) == qs_jv_as_double(y);
    }
    if (x->kind != y->kind)
        return false;
    switch (x->kind) {
    case QS_JV_UNDEFINED:
    case QS_JV_NONE:
        return true;
    case QS_JV_STRING:
        return x->str.len == y->str.len && !memcmp(x->str.s, y->str.s, x->str.len);
    case QS_JV_LIST:
        if (x->list->is_tuple != y->list->is_tuple || x->list->len != y->list->len)
            return false;
        for (size_t i = 0; i < x->list->len; i++)
            if (!qs_jv_equal(x->list->items[i], y->list->items[i]))
                return false;
        return true;
    case QS_JV_DICT:
        if (x->dict->len != y->dict->len)
            return false;
        for (size_t i = 0; i < x->dict->len; i++) {
            const qs_jv *other = qs_jv_dict_get(y, x->dict->keys[i]);
            if (!other || !qs_jv_equal(x->dict->vals[i], other))
                return false;
        }
        return true;
    case QS_JV_NAMESPACE:
        return x->dict == y->dict;
    case QS_JV_MACRO:
        return x->macro.node == y->macro.node;
    case QS_JV_BUILTIN:
        return x->builtin == y->builtin;
    case QS_JV_LOOP:
        return x->loop == y->loop;
    default:
        return false;
    }
}

int qs_jv_compare(const qs_jv *x, const qs_jv *y, int *out, qs_err *err)
{
    if (qs_jv_is_number(x) && qs_jv_is_number(y)) {
        if (x->kind != QS_JV_FLOAT && y->kind != QS_JV_FLOAT) {
            long long a = x->kind == QS_JV_BOOL ? x->b : x->i, b = y->kind == QS_JV_BOOL ? y->b : y->i;
            *out = (a > b) - (a < b);
        } else {
            double a = qs_jv_as_double(x), b = qs_jv_as_double(y);
            *out = (a > b) - (a < b);
        }
        return 0;
    }
    if (x->kind == QS_JV_STRING && y->kind == QS_JV_STRING) {
        size_t n = x->str.len < y->str.len ? x->str.len : y->str.len;
        int c = memcmp(x->str.s, y->str.s, n);
        *out = c ? (c > 0 ? 1 : -1) : (x->str.len > y->str.len) - (x->str.len < y->str.len);
        return 0;
    }
    if (x->kind == QS_JV_LIST && y->kind == QS_JV_LIST && x->list->is_tuple == y->list->is_tuple) {
        for (size_t i = 0; i < x->list->len && i < y->list->len; i++) {
            if (qs_jv_equal(x->list->items[i], y->list->items[i]))
                continue;
            return qs_jv_compare(x->list->items[i], y->list->items[i], out, err);
        }
        *out = (x->list->len > y->list->len) - (x->list->len < y->list->len);
        return 0;
    }
    return qs_errf(err, "ordering is not supported between instances of '%s' and '%s'", qs_jv_type_name(x),
                   qs_jv_type_name(y));
}

/* ---- UTF-8 ---- */

size_t qs_jj_utf8_decode(const char *s, size_t n, unsigned *cp)
{
    const unsigned char *u = (const unsigned char *)s;
    if (n == 0) {
        *cp = 0;
        return 1;
    }
    unsigned c = u[0];
    size_t need = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (need == 0 || need > n) {
        *cp = c; /* invalid byte: treat it as one code point */
        return 1;
    }
    unsigned v = need == 1 ? c : need == 2 ? (c & 0x1f) : need == 3 ? (c & 0x0f) : (c & 0x07);
    for (size_t k = 1; k < need; k++) {
        if ((u[k] & 0xc0) != 0x80) {
            *cp = c;
            return 1;
        }
        v = (v << 6) | (u[k] & 0x3f);
    }
    *cp = v;
    return need;
}

size_t qs_jj_utf8_len(const char *s, size_t n)
{
    size_t count = 0;
    unsigned cp;
    for (size_t i = 0; i < n; i += qs_jj_utf8_decode(s + i, n - i, &cp))
        count++;
    return count;
}

size_t qs_jj_utf8_offset(const char *s, size_t n, size_t index)
{
    size_t i = 0;
    unsigned cp;
    while (index > 0 && i < n) {
        i += qs_jj_utf8_decode(s + i, n - i, &cp);
        index--;
    }
    return i;
}

bool qs_jj_is_space_cp(unsigned cp)
{
    if (cp == ' ' || (cp >= 0x09 && cp <= 0x0d) || (cp >= 0x1c && cp <= 0x1f))
        return true;
    return cp == 0x85 || cp == 0xa0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 ||
           cp == 0x2029 || cp == 0x202f || cp == 0x205f || cp == 0x3000;
}

/* ---- printing ---- */

void qs_jj_format_float(qs_jj_buf *b, double f)
{
    if (isnan(f)) {
        qs_jj_buf_puts(b, "nan");
        return;
    }
    if (isinf(f)) {
        qs_jj_buf_puts(b, f < 0 ? "-inf" : "inf");
        return;
    }
    char tmp[64];
    int prec;
    for (prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*e", prec - 1, f);
        if (strtod(tmp, NULL) == f)
            break;
    }
    /* tmp is [-]D[.DDD]e[+-]XX: collect the digits and the exponent. */
    char digits[32];
    size_t nd = 0;
    const char *p = tmp;
    bool neg = *p == '-';
    if (neg)
        p++;
    for (; *p && *p != 'e'; p++)
        if (*p >= '0' && *p <= '9')
            digits[nd++] = *p;
    int exp10 = atoi(p + 1);
    while (nd > 1 && digits[nd - 1] == '0')
        nd--;
    if (neg)
        qs_jj_buf_put(b, "-", 1);
    if (exp10 < -4 || exp10 >= 16) {
        qs_jj_buf_put(b, digits, 1);
        if (nd > 1) {
            qs_jj_buf_put(b, ".", 1);
            qs_jj_buf_put(b, digits + 1, nd - 1);
        }
        qs_jj_buf_printf(b, "e%c%02d", exp10 < 0 ? '-' : '+', abs(exp10));
    } else if (exp10 >= 0) {
        size_t int_digits = (size_t)exp10 + 1;
        for (size_t k = 0; k < int_digits; k++)
            qs_jj_buf_put(b, k < nd ? &digits[k] : "0", 1);
        qs_jj_buf_put(b, ".", 1);
        if (nd > int_digits)
            qs_jj_buf_put(b, digits + int_digits, nd - int_digits);
        else
            qs_jj_buf_put(b, "0", 1);
    } else {
        qs_jj_buf_puts(b, "0.");
        for (int k = 0; k < -exp10 - 1; k++)
            qs_jj_buf_put(b, "0", 1);
        qs_jj_buf_put(b, digits, nd);
    }
}

/* Python's str.isprintable() for a non-ASCII code point: not a control, format, surrogate,
 * private-use, unassigned or separator character. */
static bool printable_cp(unsigned cp)
{
    return !uc_is_general_category(cp, uc_general_category_or(
                                           uc_general_category_or(UC_CATEGORY_C, UC_CATEGORY_Zs),
                                           uc_general_category_or(UC_CATEGORY_Zl, UC_CATEGORY_Zp)));
}

static void write_repr_str(qs_jj_buf *b, const char *s, size_t n)
{
    char quote = (memchr(s, '\'', n) && !memchr(s, '"', n)) ? '"' : '\'';
    qs_jj_buf_put(b, &quote, 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x80) {
            unsigned cp;
            size_t k = qs_jj_utf8_decode(s + i, n - i, &cp);
            if (k == 1 && cp >= 0x80) /* an invalid byte; Python strings cannot hold one */
                qs_jj_buf_printf(b, "\\x%02x", cp);
            else if (printable_cp(cp))
                qs_jj_buf_put(b, s + i, k);
            else if (cp < 0x100)
                qs_jj_buf_printf(b, "\\x%02x", cp);
            else if (cp < 0x10000)
                qs_jj_buf_printf(b, "\\u%04x", cp);
            else
                qs_jj_buf_printf(b, "\\U%08x", cp);
            i += k - 1;
            continue;
        }
        if (c == '\\' || c == (unsigned char)quote) {
            qs_jj_buf_put(b, "\\", 1);
            qs_jj_buf_put(b, s + i, 1);
        } else if (c == '\n') {
            qs_jj_buf_puts(b, "\\n");
        } else if (c == '\r') {
            qs_jj_buf_puts(b, "\\r");
        } else if (c == '\t') {
            qs_jj_buf_puts(b, "\\t");
        } else if (c < 0x20 || c == 0x7f) {
            qs_jj_buf_printf(b, "\\x%02x", c);
        } else {
            qs_jj_buf_put(b, s + i, 1);
        }
    }
    qs_jj_buf_put(b, &quote, 1);
}

static void write_repr(qs_jj_buf *b, const qs_jv *v)
{
    if (v->kind == QS_JV_UNDEFINED) /* repr(Undefined) inside a list or dict */
        qs_jj_buf_puts(b, "Undefined");
    else if (v->kind == QS_JV_STRING)
        write_repr_str(b, v->str.s, v->str.len);
    else
        qs_jv_write_str(b, v);
}

void qs_jv_write_str(qs_jj_buf *b, const qs_jv *v)
{
    switch (v->kind) {
    case QS_JV_UNDEFINED:
        return;
    case QS_JV_NONE:
        qs_jj_buf_puts(b, "None");
        return;
    case QS_JV_BOOL:
        qs_jj_buf_puts(b, v->b ? "True" : "False");
        return;
    case QS_JV_INT:
        qs_jj_buf_printf(b, "%lld", v->i);
        return;
    case QS_JV_FLOAT:
        qs_jj_format_float(b, v->f);
        return;
    case QS_JV_STRING:
        qs_jj_buf_put(b, v->str.s, v->str.len);
        return;
    case QS_JV_LIST: {
        qs_jj_buf_puts(b, v->list->is_tuple ? "(" : "[");
        for (size_t i = 0; i < v->list->len; i++) {
            if (i)
                qs_jj_buf_puts(b, ", ");
            write_repr(b, v->list->items[i]);
        }
        if (v->list->is_tuple && v->list->len == 1)
            qs_jj_buf_puts(b, ",");
        qs_jj_buf_puts(b, v->list->is_tuple ? ")" : "]");
        return;
    }
    case QS_JV_DICT:
    case QS_JV_NAMESPACE:
        qs_jj_buf_puts(b, v->kind == QS_JV_NAMESPACE ? "<Namespace {" : "{");
        for (size_t i = 0; i < v->dict->len; i++) {
            if (i)
                qs_jj_buf_puts(b, ", ");
            write_repr(b, v->dict->keys[i]);
            qs_jj_buf_puts(b, ": ");
            write_repr(b, v->dict->vals[i]);
        }
        qs_jj_buf_puts(b, v->kind == QS_JV_NAMESPACE ? "}>" : "}");
        return;
    case QS_JV_MACRO:
        qs_jj_buf_printf(b, "<Macro '%s'>", v->macro.name);
        return;
    case QS_JV_BUILTIN:
        qs_jj_buf_puts(b, "<built-in function>");
        return;
    case QS_JV_LOOP:
        qs_jj_buf_printf(b, "<LoopContext %zu/%zu>", v->loop->index0 + 1, v->loop->items->list->len);
        return;
    }
}

qs_jv *qs_jv_to_str(qs_jj_arena *a, const qs_jv *v)
{
    if (v->kind == QS_JV_STRING)
        return (qs_jv *)v;
    qs_jj_buf b = {0};
    qs_jv_write_str(&b, v);
    qs_jv *s = qs_jv_str(a, b.data ? b.data : "", b.len);
    qs_jj_buf_free(&b);
    return s;
}

/* ---- JSON ---- */

static void write_json_str(qs_jj_buf *b, const char *s, size_t n)
{
    qs_jj_buf_put(b, "\"", 1);
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *esc = NULL;
        char hex[8];
        switch (c) {
        case '"': esc = "\\\""; break;
        case '\\': esc = "\\\\"; break;
        case '\n': esc = "\\n"; break;
        case '\r': esc = "\\r"; break;
        case '\t': esc = "\\t"; break;
        case '\b': esc = "\\b"; break;
        case '\f': esc = "\\f"; break;
        default:
            if (c < 0x20) {
                snprintf(hex, sizeof hex, "\\u%04x", c);
                esc = hex;
            }
        }
        if (esc) {
            qs_jj_buf_put(b, s + run, i - run);
            qs_jj_buf_puts(b, esc);
            run = i + 1;
        }
    }
    qs_jj_buf_put(b, s + run, n - run);
    qs_jj_buf_put(b, "\"", 1);
}

static void newline_indent(qs_jj_buf *b, int indent, int level)
{
    qs_jj_buf_put(b, "\n", 1);
    for (int k = 0; k < indent * level; k++)
        qs_jj_buf_put(b, " ", 1);
}

static int json_key(qs_jj_buf *b, const qs_jv *k, qs_err *err)
{
    switch (k->kind) {
    case QS_JV_STRING:
        write_json_str(b, k->str.s, k->str.len);
        return 0;
    case QS_JV_INT:
    case QS_JV_FLOAT:
        qs_jj_buf_put(b, "\"", 1);
        if (k->kind == QS_JV_INT)
            qs_jj_buf_printf(b, "%lld", k->i);
        else
            qs_jj_format_float(b, k->f);
        qs_jj_buf_put(b, "\"", 1);
        return 0;
    case QS_JV_BOOL:
        qs_jj_buf_puts(b, k->b ? "\"true\"" : "\"false\"");
        return 0;
    case QS_JV_NONE:
        qs_jj_buf_puts(b, "\"null\"");
        return 0;
    default:
        return qs_errf(err, "tojson: keys must be str, int, float, bool or None, not %s", qs_jv_type_name(k));
    }
}

static int key_order(const void *pa, const void *pb, void *unused)
{
    (void)unused;
    const qs_jv *a = ((qs_jv *const *)pa)[0], *b = ((qs_jv *const *)pb)[0];
    int out = 0;
    qs_jv_compare(a, b, &out, NULL);
    return out;
}

static int write_json(qs_jj_buf *b, const qs_jv *v, int indent, bool sort_keys, int level, qs_err *err)
{
    switch (v->kind) {
    case QS_JV_NONE:
        qs_jj_buf_puts(b, "null");
        return 0;
    case QS_JV_BOOL:
        qs_jj_buf_puts(b, v->b ? "true" : "false");
        return 0;
    case QS_JV_INT:
        qs_jj_buf_printf(b, "%lld", v->i);
        return 0;
    case QS_JV_FLOAT:
        if (isnan(v->f))
            qs_jj_buf_puts(b, "NaN");
        else if (isinf(v->f))
            qs_jj_buf_puts(b, v->f < 0 ? "-Infinity" : "Infinity");
        else
            qs_jj_format_float(b, v->f);
        return 0;
    case QS_JV_STRING:
        write_json_str(b, v->str.s, v->str.len);
        return 0;
    case QS_JV_LIST: {
        if (v->list->len == 0) {
            qs_jj_buf_puts(b, "[]");
            return 0;
        }
        qs_jj_buf_put(b, "[", 1);
        for (size_t i = 0; i < v->list->len; i++) {
            if (i)
                qs_jj_buf_puts(b, indent >= 0 ? "," : ", ");
            if (indent >= 0)
                newline_indent(b, indent, level + 1);
            if (write_json(b, v->list->items[i], indent, sort_keys, level + 1, err))
                return -1;
        }
        if (indent >= 0)
            newline_indent(b, indent, level);
        qs_jj_buf_put(b, "]", 1);
        return 0;
    }
    case QS_JV_DICT: {
        size_t n = v->dict->len;
        if (n == 0) {
            qs_jj_buf_puts(b, "{}");
            return 0;
        }
        /* pairs[i] = {key, value}; sorted by key when asked */
        qs_jv *(*pairs)[2] = malloc(n * sizeof *pairs);
        if (!pairs)
            return qs_errf(err, "tojson: out of memory");
        for (size_t i = 0; i < n; i++) {
            pairs[i][0] = v->dict->keys[i];
            pairs[i][1] = v->dict->vals[i];
        }
        if (sort_keys)
            qsort_r(pairs, n, sizeof *pairs, key_order, NULL);
        qs_jj_buf_put(b, "{", 1);
        int rc = 0;
        for (size_t i = 0; i < n && rc == 0; i++) {
            if (i)
                qs_jj_buf_puts(b, indent >= 0 ? "," : ", ");
            if (indent >= 0)
                newline_indent(b, indent, level + 1);
            rc = json_key(b, pairs[i][0], err);
            if (rc == 0) {
                qs_jj_buf_puts(b, ": ");
                rc = write_json(b, pairs[i][1], indent, sort_keys, level + 1, err);
            }
        }
        free(pairs);
        if (rc)
            return -1;
        if (indent >= 0)
            newline_indent(b, indent, level);
        qs_jj_buf_put(b, "}", 1);
        return 0;
    }
    case QS_JV_UNDEFINED:
        return qs_errf(err, "tojson: %s", v->undef_name ? v->undef_name : "value is undefined");
    default:
        return qs_errf(err, "tojson: Object of type %s is not JSON serializable", qs_jv_type_name(v));
    }
}

int qs_jv_write_json(qs_jj_buf *b, const qs_jv *v, int indent, bool sort_keys, qs_err *err)
{
    return write_json(b, v, indent, sort_keys, 0, err);
}
