/* jinja_filters.c — the Jinja2 filters and tests chat templates use, with Jinja2's semantics
 * (e.g. unique/sort/min/max compare strings case-insensitively by default, tojson is HF's
 * json.dumps(ensure_ascii=False)). An unknown filter or test is an error naming it and its line. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jinja/jinja_filters.h"
#include "jinja/jinja_str.h"

static qs_jv *arg(const qs_jj_args *args, size_t pos, const char *kw)
{
    for (size_t k = 0; kw && k < args->n_kw; k++)
        if (!strcmp(args->kwnames[k], kw))
            return args->kw[k];
    return pos < args->n_pos ? args->pos[pos] : NULL;
}

static bool check_kwargs(qs_jj_ctx *ctx, int line, const char *fn, const qs_jj_args *args, const char *const *allowed)
{
    for (size_t k = 0; k < args->n_kw; k++) {
        bool ok = false;
        for (size_t i = 0; allowed && allowed[i] && !ok; i++)
            ok = !strcmp(allowed[i], args->kwnames[k]);
        if (!ok) {
            qs_jj_fail(ctx, line, "filter '%s' got an unsupported keyword argument '%s'", fn, args->kwnames[k]);
            return false;
        }
    }
    return true;
}

static qs_jv *str_of(qs_jj_ctx *ctx, const qs_jv *v) { return qs_jv_to_str(ctx->arena, v); }

/* Jinja's attribute getter: "a.b.0" reads item/attribute a, then b, then index 0. */
static qs_jv *get_path(qs_jj_ctx *ctx, int line, qs_jv *v, const qs_jv *path)
{
    if (path->kind == QS_JV_INT)
        return qs_jj_getitem(ctx, line, v, path);
    if (path->kind != QS_JV_STRING) {
        qs_jj_fail(ctx, line, "attribute must be a string or an int, not %s", qs_jv_type_name(path));
        return NULL;
    }
    const char *p = path->str.s, *end = p + path->str.len;
    while (v) {
        const char *dot = memchr(p, '.', (size_t)(end - p));
        size_t n = dot ? (size_t)(dot - p) : (size_t)(end - p);
        char part[256];
        if (n >= sizeof part)
            return qs_jj_fail(ctx, line, "attribute path part is too long");
        memcpy(part, p, n);
        part[n] = '\0';
        bool digits = n > 0;
        for (size_t i = 0; i < n; i++)
            digits = digits && isdigit((unsigned char)part[i]);
        if (v->kind == QS_JV_UNDEFINED)
            return v;
        v = digits ? qs_jj_getitem(ctx, line, v, qs_jv_int(ctx->arena, strtoll(part, NULL, 10)))
                   : qs_jj_getattr(ctx, line, v, part);
        if (!dot)
            break;
        p = dot + 1;
    }
    return v;
}

static qs_jv *items_of(qs_jj_ctx *ctx, int line, const qs_jv *v) { return qs_jj_iterate(ctx, line, v); }

/* Key for case-insensitive comparisons (Jinja's ignore_case): strings are lowercased. */
static qs_jv *fold_key(qs_jj_ctx *ctx, qs_jv *v, bool case_sensitive)
{
    if (!case_sensitive && v->kind == QS_JV_STRING)
        return qs_jj_str_case(ctx->arena, v, 'l');
    return v;
}

/* Stable insertion sort of items by keys; -1 on incomparable keys. */
static int sort_items(qs_jj_ctx *ctx, int line, qs_jv **items, qs_jv **keys, size_t n, bool reverse)
{
    for (size_t i = 1; i < n; i++) {
        qs_jv *it = items[i], *k = keys[i];
        size_t j = i;
        while (j > 0) {
            int c;
            qs_err e;
            if (qs_jv_compare(keys[j - 1], k, &c, &e)) {
                qs_jj_fail(ctx, line, "sort: %s", e.msg);
                return -1;
            }
            if (reverse ? c >= 0 : c <= 0)
                break;
            items[j] = items[j - 1];
            keys[j] = keys[j - 1];
            j--;
        }
        items[j] = it;
        keys[j] = k;
    }
    return 0;
}

static bool parse_python_int(const qs_jv *s, long long *out)
{
    char buf[64];
    qs_jv tmp = *s;
    const char *p = tmp.str.s;
    size_t n = tmp.str.len;
    while (n && isspace((unsigned char)*p)) {
        p++;
        n--;
    }
    while (n && isspace((unsigned char)p[n - 1]))
        n--;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] == '_' && i > 0 && isdigit((unsigned char)p[i - 1]) && i + 1 < n && isdigit((unsigned char)p[i + 1]))
            continue;
        if (k + 1 >= sizeof buf)
            return false;
        buf[k++] = p[i];
    }
    buf[k] = '\0';
    if (k == 0)
        return false;
    char *end;
    errno = 0;
    long long v = strtoll(buf, &end, 10);
    if (*end || errno)
        return false;
    *out = v;
    return true;
}

static bool parse_python_float(const qs_jv *s, double *out)
{
    char buf[128];
    const char *p = s->str.s;
    size_t n = s->str.len;
    while (n && isspace((unsigned char)*p)) {
        p++;
        n--;
    }
    while (n && isspace((unsigned char)p[n - 1]))
        n--;
    if (n == 0 || n >= sizeof buf)
        return false;
    memcpy(buf, p, n);
    buf[n] = '\0';
    char *end;
    double v = strtod(buf, &end);
    if (*end)
        return false;
    *out = v;
    return true;
}

static qs_jv *filter_indent(qs_jj_ctx *ctx, int line, qs_jv *s, const qs_jj_args *args)
{
    qs_jv *width = arg(args, 0, "width"), *first = arg(args, 1, "first"), *blank = arg(args, 2, "blank");
    qs_jj_buf ind = {0};
    if (width && width->kind == QS_JV_STRING)
        qs_jj_buf_put(&ind, width->str.s, width->str.len);
    else
        for (long long k = 0; k < (width && width->kind == QS_JV_INT ? width->i : 4); k++)
            qs_jj_buf_put(&ind, " ", 1);
    /* Jinja appends "\n" and splits lines, so a trailing newline survives as one empty line. */
    qs_jv *lines = qs_jv_list_new(ctx->arena, false);
    const char *p = s->str.s, *end = p + s->str.len;
    for (;;) {
        const char *nl = p;
        while (nl < end && *nl != '\n' && *nl != '\r')
            nl++;
        qs_jv_list_push(ctx->arena, lines, qs_jv_str(ctx->arena, p, (size_t)(nl - p)));
        if (nl >= end)
            break;
        if (*nl == '\r' && nl + 1 < end && nl[1] == '\n')
            nl++;
        p = nl + 1;
    }
    qs_jj_buf b = {0};
    if (first && qs_jv_truthy(first))
        qs_jj_buf_put(&b, ind.data ? ind.data : "", ind.len);
    for (size_t i = 0; i < lines->list->len; i++) {
        qs_jv *l = lines->list->items[i];
        if (i) {
            qs_jj_buf_put(&b, "\n", 1);
            if (l->str.len || (blank && qs_jv_truthy(blank)))
                qs_jj_buf_put(&b, ind.data ? ind.data : "", ind.len);
        }
        qs_jj_buf_put(&b, l->str.s, l->str.len);
    }
    qs_jv *out = qs_jv_str(ctx->arena, b.data ? b.data : "", b.len);
    qs_jj_buf_free(&b);
    qs_jj_buf_free(&ind);
    (void)line;
    return out;
}

static qs_jv *filter_select(qs_jj_ctx *ctx, int line, const char *name, qs_jv *input, const qs_jj_args *args)
{
    bool by_attr = !strcmp(name, "selectattr") || !strcmp(name, "rejectattr");
    bool keep_if = !strcmp(name, "select") || !strcmp(name, "selectattr");
    if (!qs_jv_truthy(input)) /* Jinja checks `if value:` before iterating */
        return qs_jv_list_new(ctx->arena, false);
    qs_jv *items = items_of(ctx, line, input);
    if (!items)
        return NULL;
    size_t first_arg = 0;
    qs_jv *attr = NULL;
    if (by_attr) {
        attr = args->n_pos ? args->pos[0] : NULL;
        if (!attr)
            return qs_jj_fail(ctx, line, "%s needs an attribute name", name);
        first_arg = 1;
    }
    const char *test = NULL;
    if (args->n_pos > first_arg) {
        qs_jv *t = args->pos[first_arg];
        if (t->kind != QS_JV_STRING)
            return qs_jj_fail(ctx, line, "%s: the test name must be a string", name);
        test = t->str.s;
    }
    qs_jj_args targs = {.pos = args->n_pos > first_arg + 1 ? args->pos + first_arg + 1 : NULL,
                        .n_pos = args->n_pos > first_arg + 1 ? args->n_pos - first_arg - 1 : 0};
    qs_jv *out = qs_jv_list_new(ctx->arena, false);
    for (size_t i = 0; i < items->list->len; i++) {
        qs_jv *it = items->list->items[i], *v = it;
        if (by_attr && !(v = get_path(ctx, line, it, attr)))
            return NULL;
        int r = test ? qs_jj_apply_test(ctx, line, test, v, &targs) : qs_jv_truthy(v);
        if (r < 0)
            return NULL;
        if ((r != 0) == keep_if)
            qs_jv_list_push(ctx->arena, out, it);
    }
    return out;
}

static qs_jv *filter_map(qs_jj_ctx *ctx, int line, qs_jv *input, const qs_jj_args *args)
{
    if (!qs_jv_truthy(input)) /* Jinja checks `if value:` before iterating */
        return qs_jv_list_new(ctx->arena, false);
    qs_jv *items = items_of(ctx, line, input);
    if (!items)
        return NULL;
    qs_jv *attr = arg(args, 99, "attribute"), *def = arg(args, 99, "default");
    qs_jv *out = qs_jv_list_new(ctx->arena, false);
    if (attr) {
        for (size_t i = 0; i < items->list->len; i++) {
            qs_jv *v = get_path(ctx, line, items->list->items[i], attr);
            if (!v)
                return NULL;
            qs_jv_list_push(ctx->arena, out, v->kind == QS_JV_UNDEFINED && def ? def : v);
        }
        return out;
    }
    if (args->n_pos == 0 || args->pos[0]->kind != QS_JV_STRING)
        return qs_jj_fail(ctx, line, "map needs attribute=NAME or a filter name");
    qs_jj_args fargs = {.pos = args->pos + 1, .n_pos = args->n_pos - 1, .kw = args->kw, .kwnames = args->kwnames,
                        .n_kw = args->n_kw};
    for (size_t i = 0; i < items->list->len; i++) {
        qs_jv *v = qs_jj_apply_filter(ctx, line, args->pos[0]->str.s, items->list->items[i], &fargs);
        if (!v)
            return NULL;
        qs_jv_list_push(ctx->arena, out, v);
    }
    return out;
}

static qs_jv *filter_sortlike(qs_jj_ctx *ctx, int line, const char *name, qs_jv *input, const qs_jj_args *args)
{
    qs_jv *items = items_of(ctx, line, input);
    if (!items)
        return NULL;
    bool is_sort = !strcmp(name, "sort"), is_unique = !strcmp(name, "unique");
    qs_jv *cs = arg(args, is_sort ? 1 : 0, "case_sensitive");
    qs_jv *attr = arg(args, is_sort ? 2 : 1, "attribute");
    qs_jv *rev = is_sort ? arg(args, 0, "reverse") : NULL;
    bool case_sensitive = cs && qs_jv_truthy(cs);
    size_t n = items->list->len;
    qs_jv **vals = qs_jj_alloc(ctx->arena, (n + 1) * sizeof *vals), **keys = qs_jj_alloc(ctx->arena, (n + 1) * sizeof *keys);
    for (size_t i = 0; i < n; i++) {
        vals[i] = items->list->items[i];
        qs_jv *k = attr ? get_path(ctx, line, vals[i], attr) : vals[i];
        if (!k)
            return NULL;
        keys[i] = fold_key(ctx, k, case_sensitive);
    }
    if (is_unique) {
        qs_jv *out = qs_jv_list_new(ctx->arena, false);
        for (size_t i = 0; i < n; i++) {
            qs_jv_kind k = keys[i]->kind;
            if ((k == QS_JV_LIST && !keys[i]->list->is_tuple) || k == QS_JV_DICT || k == QS_JV_NAMESPACE)
                return qs_jj_fail(ctx, line, "unique: unhashable type: '%s'", qs_jv_type_name(keys[i]));
            bool seen = false;
            for (size_t j = 0; j < i && !seen; j++)
                seen = qs_jv_equal(keys[j], keys[i]);
            if (!seen)
                qs_jv_list_push(ctx->arena, out, vals[i]);
        }
        return out;
    }
    if (!is_sort) { /* min / max */
        if (n == 0)
            return qs_jv_undefined(ctx->arena, "min/max of an empty sequence");
        size_t best = 0;
        for (size_t i = 1; i < n; i++) {
            int c;
            qs_err e;
            if (qs_jv_compare(keys[i], keys[best], &c, &e))
                return qs_jj_fail(ctx, line, "%s: %s", name, e.msg);
            if (name[1] == 'i' ? c < 0 : c > 0)
                best = i;
        }
        return vals[best];
    }
    if (sort_items(ctx, line, vals, keys, n, rev && qs_jv_truthy(rev)))
        return NULL;
    qs_jv *out = qs_jv_list_new(ctx->arena, false);
    for (size_t i = 0; i < n; i++)
        qs_jv_list_push(ctx->arena, out, vals[i]);
    return out;
}

static qs_jv *filter_round(qs_jj_ctx *ctx, int line, qs_jv *input, const qs_jj_args *args)
{
    qs_jv *prec = arg(args, 0, "precision"), *method = arg(args, 1, "method");
    long long p = prec && prec->kind == QS_JV_INT ? prec->i : 0;
    const char *m = method && method->kind == QS_JV_STRING ? method->str.s : "common";
    if (!qs_jv_is_number(input))
        return qs_jj_fail(ctx, line, "round expects a number, not %s", qs_jv_type_name(input));
    if (p < 0 || p > 17)
        return qs_jj_fail(ctx, line, "round: precision %lld is not supported", p);
    if (!strcmp(m, "common")) {
        if (input->kind == QS_JV_BOOL)
            return qs_jv_int(ctx->arena, input->b);
        if (input->kind != QS_JV_FLOAT)
            return input;
        char buf[64];
        snprintf(buf, sizeof buf, "%.*f", (int)p, input->f);
        return qs_jv_float(ctx->arena, strtod(buf, NULL));
    }
    if (strcmp(m, "floor") && strcmp(m, "ceil"))
        return qs_jj_fail(ctx, line, "round: method must be 'common', 'ceil' or 'floor'");
    double scale = pow(10, (double)p), x = qs_jv_as_double(input) * scale;
    return qs_jv_float(ctx->arena, (m[0] == 'f' ? floor(x) : ceil(x)) / scale);
}

static qs_jv *filter_escape(qs_jj_ctx *ctx, const qs_jv *s)
{
    qs_jj_buf b = {0};
    for (size_t i = 0; i < s->str.len; i++) {
        char c = s->str.s[i];
        switch (c) {
        case '&': qs_jj_buf_puts(&b, "&amp;"); break;
        case '<': qs_jj_buf_puts(&b, "&lt;"); break;
        case '>': qs_jj_buf_puts(&b, "&gt;"); break;
        case '"': qs_jj_buf_puts(&b, "&#34;"); break;
        case '\'': qs_jj_buf_puts(&b, "&#39;"); break;
        default: qs_jj_buf_put(&b, &c, 1);
        }
    }
    qs_jv *out = qs_jv_str(ctx->arena, b.data ? b.data : "", b.len);
    qs_jj_buf_free(&b);
    return out;
}

qs_jv *qs_jj_apply_filter(qs_jj_ctx *ctx, int line, const char *name, qs_jv *in, const qs_jj_args *args)
{
    qs_jj_arena *a = ctx->arena;
    /* These use the value as a number or add to it, which Undefined refuses. */
    static const char *const STRICT[] = {"int", "float", "round", "abs", "indent", "tojson"};
    for (size_t k = 0; in->kind == QS_JV_UNDEFINED && k < sizeof STRICT / sizeof STRICT[0]; k++)
        if (!strcmp(name, STRICT[k]))
            return qs_jj_fail(ctx, line, "%s (filter '%s')", in->undef_name ? in->undef_name : "value is undefined",
                              name);
    if (!strcmp(name, "length") || !strcmp(name, "count")) {
        switch (in->kind) {
        case QS_JV_STRING: return qs_jv_int(a, (long long)qs_jj_utf8_len(in->str.s, in->str.len));
        case QS_JV_LIST: return qs_jv_int(a, (long long)in->list->len);
        case QS_JV_DICT: return qs_jv_int(a, (long long)in->dict->len);
        case QS_JV_UNDEFINED: return qs_jv_int(a, 0);
        default: return qs_jj_fail(ctx, line, "object of type '%s' has no len()", qs_jv_type_name(in));
        }
    }
    if (!strcmp(name, "tojson")) {
        static const char *const KW[] = {"indent", "sort_keys", "ensure_ascii", NULL};
        if (!check_kwargs(ctx, line, name, args, KW))
            return NULL;
        qs_jv *indent = arg(args, 0, "indent"), *sort = arg(args, 99, "sort_keys"), *ascii = arg(args, 99, "ensure_ascii");
        if (ascii && qs_jv_truthy(ascii))
            return qs_jj_fail(ctx, line, "tojson(ensure_ascii=True) is not supported");
        if (indent && indent->kind != QS_JV_INT && indent->kind != QS_JV_NONE)
            return qs_jj_fail(ctx, line, "tojson: indent must be an int or none");
        qs_jj_buf b = {0};
        qs_err e;
        int ind = indent && indent->kind == QS_JV_INT ? (int)(indent->i < 0 ? 0 : indent->i > 64 ? 64 : indent->i) : -1;
        if (qs_jv_write_json(&b, in, ind, sort && qs_jv_truthy(sort), &e)) {
            qs_jj_buf_free(&b);
            return qs_jj_fail(ctx, line, "%s", e.msg);
        }
        qs_jv *out = qs_jv_str(a, b.data ? b.data : "", b.len);
        qs_jj_buf_free(&b);
        return out;
    }
    if (!strcmp(name, "trim"))
        return qs_jj_str_strip(a, str_of(ctx, in), arg(args, 0, "chars"), true, true);
    if (!strcmp(name, "string"))
        return str_of(ctx, in);
    if (!strcmp(name, "safe"))
        return in;
    if (!strcmp(name, "lower") || !strcmp(name, "upper"))
        return qs_jj_str_case(a, str_of(ctx, in), name[0]);
    if (!strcmp(name, "capitalize"))
        return qs_jj_str_case(a, str_of(ctx, in), 'c');
    if (!strcmp(name, "title"))
        return qs_jj_str_case(a, str_of(ctx, in), 't');
    if (!strcmp(name, "escape") || !strcmp(name, "e"))
        return filter_escape(ctx, str_of(ctx, in));
    if (!strcmp(name, "default") || !strcmp(name, "d")) {
        qs_jv *def = arg(args, 0, "default_value"), *boolean = arg(args, 1, "boolean");
        bool use_default = in->kind == QS_JV_UNDEFINED || (boolean && qs_jv_truthy(boolean) && !qs_jv_truthy(in));
        return use_default ? (def ? def : qs_jv_cstr(a, "")) : in;
    }
    if (!strcmp(name, "first") || !strcmp(name, "last")) {
        qs_jv *items = items_of(ctx, line, in);
        if (!items)
            return NULL;
        if (items->list->len == 0)
            return qs_jv_undefined(a, "first/last of an empty sequence");
        return items->list->items[name[0] == 'f' ? 0 : items->list->len - 1];
    }
    if (!strcmp(name, "join")) {
        qs_jv *sep = arg(args, 0, "d"), *attr = arg(args, 1, "attribute");
        qs_jv *items = items_of(ctx, line, in);
        if (!items)
            return NULL;
        qs_jj_buf b = {0};
        for (size_t i = 0; i < items->list->len; i++) {
            qs_jv *v = items->list->items[i];
            if (attr && !(v = get_path(ctx, line, v, attr))) {
                qs_jj_buf_free(&b);
                return NULL;
            }
            if (i && sep)
                qs_jv_write_str(&b, sep);
            qs_jv_write_str(&b, v);
        }
        qs_jv *out = qs_jv_str(a, b.data ? b.data : "", b.len);
        qs_jj_buf_free(&b);
        return out;
    }
    if (!strcmp(name, "replace")) {
        qs_jv *old = arg(args, 0, "old"), *new_ = arg(args, 1, "new"), *count = arg(args, 2, "count");
        if (!old || !new_)
            return qs_jj_fail(ctx, line, "replace needs old and new strings");
        return qs_jj_str_replace(ctx, line, str_of(ctx, in), str_of(ctx, old), str_of(ctx, new_),
                                 count && count->kind == QS_JV_INT ? count->i : -1);
    }
    if (!strcmp(name, "items")) {
        if (in->kind == QS_JV_UNDEFINED)
            return qs_jv_list_new(a, false);
        if (in->kind != QS_JV_DICT)
            return qs_jj_fail(ctx, line, "items filter expects a mapping, not %s", qs_jv_type_name(in));
        qs_jv *out = qs_jv_list_new(a, false);
        for (size_t i = 0; i < in->dict->len; i++) {
            qs_jv *pair = qs_jv_list_new(a, true);
            qs_jv_list_push(a, pair, in->dict->keys[i]);
            qs_jv_list_push(a, pair, in->dict->vals[i]);
            qs_jv_list_push(a, out, pair);
        }
        return out;
    }
    if (!strcmp(name, "dictsort")) {
        if (in->kind != QS_JV_DICT)
            return qs_jj_fail(ctx, line, "dictsort expects a mapping, not %s", qs_jv_type_name(in));
        size_t n = in->dict->len;
        qs_jv **vals = qs_jj_alloc(a, (n + 1) * sizeof *vals), **keys = qs_jj_alloc(a, (n + 1) * sizeof *keys);
        qs_jv *cs = arg(args, 0, "case_sensitive"), *by = arg(args, 1, "by"), *rev = arg(args, 2, "reverse");
        bool by_value = by && by->kind == QS_JV_STRING && !strcmp(by->str.s, "value");
        for (size_t i = 0; i < n; i++) {
            vals[i] = qs_jv_list_new(a, true);
            qs_jv_list_push(a, vals[i], in->dict->keys[i]);
            qs_jv_list_push(a, vals[i], in->dict->vals[i]);
            keys[i] = fold_key(ctx, by_value ? in->dict->vals[i] : in->dict->keys[i], cs && qs_jv_truthy(cs));
        }
        if (sort_items(ctx, line, vals, keys, n, rev && qs_jv_truthy(rev)))
            return NULL;
        qs_jv *out = qs_jv_list_new(a, false);
        for (size_t i = 0; i < n; i++)
            qs_jv_list_push(a, out, vals[i]);
        return out;
    }
    if (!strcmp(name, "list"))
        return items_of(ctx, line, in);
    if (!strcmp(name, "reverse")) {
        if (in->kind == QS_JV_STRING) {
            qs_jv *chars = items_of(ctx, line, in);
            qs_jj_buf b = {0};
            for (size_t i = chars->list->len; i-- > 0;)
                qs_jv_write_str(&b, chars->list->items[i]);
            qs_jv *out = qs_jv_str(a, b.data ? b.data : "", b.len);
            qs_jj_buf_free(&b);
            return out;
        }
        qs_jv *items = items_of(ctx, line, in);
        if (!items)
            return NULL;
        qs_jv *out = qs_jv_list_new(a, false);
        for (size_t i = items->list->len; i-- > 0;)
            qs_jv_list_push(a, out, items->list->items[i]);
        return out;
    }
    if (!strcmp(name, "map"))
        return filter_map(ctx, line, in, args);
    if (!strcmp(name, "select") || !strcmp(name, "reject") || !strcmp(name, "selectattr") ||
        !strcmp(name, "rejectattr"))
        return filter_select(ctx, line, name, in, args);
    if (!strcmp(name, "sort") || !strcmp(name, "unique") || !strcmp(name, "min") || !strcmp(name, "max"))
        return filter_sortlike(ctx, line, name, in, args);
    if (!strcmp(name, "sum")) {
        qs_jv *attr = arg(args, 0, "attribute"), *start = arg(args, 1, "start");
        qs_jv *items = items_of(ctx, line, in);
        if (!items)
            return NULL;
        qs_jv *total = start ? start : qs_jv_int(a, 0);
        for (size_t i = 0; i < items->list->len; i++) {
            qs_jv *v = attr ? get_path(ctx, line, items->list->items[i], attr) : items->list->items[i];
            if (!v)
                return NULL;
            if (!qs_jv_is_number(v) || !qs_jv_is_number(total))
                return qs_jj_fail(ctx, line, "sum: unsupported operand type(s) for +: '%s' and '%s'",
                                  qs_jv_type_name(total), qs_jv_type_name(v));
            if (total->kind != QS_JV_FLOAT && v->kind != QS_JV_FLOAT)
                total = qs_jv_int(a, (total->kind == QS_JV_BOOL ? total->b : total->i) + (v->kind == QS_JV_BOOL ? v->b : v->i));
            else
                total = qs_jv_float(a, qs_jv_as_double(total) + qs_jv_as_double(v));
        }
        return total;
    }
    if (!strcmp(name, "int")) {
        qs_jv *def = arg(args, 0, "default");
        long long i;
        double f;
        if (in->kind == QS_JV_INT || in->kind == QS_JV_BOOL)
            return qs_jv_int(a, in->kind == QS_JV_BOOL ? in->b : in->i);
        if (in->kind == QS_JV_FLOAT && isfinite(in->f) && fabs(in->f) < 9.2e18)
            return qs_jv_int(a, (long long)in->f);
        if (in->kind == QS_JV_STRING && parse_python_int(in, &i))
            return qs_jv_int(a, i);
        if (in->kind == QS_JV_STRING && parse_python_float(in, &f) && isfinite(f) && fabs(f) < 9.2e18)
            return qs_jv_int(a, (long long)f);
        return def ? def : qs_jv_int(a, 0);
    }
    if (!strcmp(name, "float")) {
        qs_jv *def = arg(args, 0, "default");
        double f;
        if (qs_jv_is_number(in))
            return qs_jv_float(a, qs_jv_as_double(in));
        if (in->kind == QS_JV_STRING && parse_python_float(in, &f))
            return qs_jv_float(a, f);
        return def ? def : qs_jv_float(a, 0.0);
    }
    if (!strcmp(name, "abs")) {
        if (in->kind == QS_JV_FLOAT)
            return qs_jv_float(a, fabs(in->f));
        if ((in->kind == QS_JV_INT && in->i != LLONG_MIN) || in->kind == QS_JV_BOOL)
            return qs_jv_int(a, llabs(in->kind == QS_JV_BOOL ? in->b : in->i));
        return qs_jj_fail(ctx, line, "bad operand type for abs(): '%s'", qs_jv_type_name(in));
    }
    if (!strcmp(name, "round"))
        return filter_round(ctx, line, in, args);
    if (!strcmp(name, "indent")) {
        if (in->kind != QS_JV_STRING) /* Jinja appends "\n" to the value itself */
            return qs_jj_fail(ctx, line, "indent expects a string, not %s", qs_jv_type_name(in));
        return filter_indent(ctx, line, in, args);
    }
    if (!strcmp(name, "attr")) {
        qs_jv *n = arg(args, 0, "name");
        if (!n || n->kind != QS_JV_STRING)
            return qs_jj_fail(ctx, line, "attr needs an attribute name");
        return qs_jj_getattr(ctx, line, in, n->str.s);
    }
    return qs_jj_fail(ctx, line, "unknown filter '%s'", name);
}

int qs_jj_apply_test(qs_jj_ctx *ctx, int line, const char *name, const qs_jv *v, const qs_jj_args *args)
{
    qs_jv *other = args->n_pos ? args->pos[0] : NULL;
    qs_jv_kind k = v->kind;
    if (!strcmp(name, "defined"))
        return k != QS_JV_UNDEFINED;
    if (!strcmp(name, "undefined"))
        return k == QS_JV_UNDEFINED;
    if (!strcmp(name, "none"))
        return k == QS_JV_NONE;
    if (!strcmp(name, "boolean"))
        return k == QS_JV_BOOL;
    if (!strcmp(name, "true"))
        return k == QS_JV_BOOL && v->b;
    if (!strcmp(name, "false"))
        return k == QS_JV_BOOL && !v->b;
    if (!strcmp(name, "integer"))
        return k == QS_JV_INT;
    if (!strcmp(name, "float"))
        return k == QS_JV_FLOAT;
    if (!strcmp(name, "number"))
        return qs_jv_is_number(v);
    if (!strcmp(name, "string"))
        return k == QS_JV_STRING;
    if (!strcmp(name, "mapping"))
        return k == QS_JV_DICT;
    if (!strcmp(name, "iterable"))
        return k == QS_JV_STRING || k == QS_JV_LIST || k == QS_JV_DICT || k == QS_JV_UNDEFINED;
    if (!strcmp(name, "sequence"))
        return k == QS_JV_STRING || k == QS_JV_LIST || k == QS_JV_DICT || k == QS_JV_UNDEFINED;
    if (!strcmp(name, "callable"))
        return k == QS_JV_MACRO || k == QS_JV_BUILTIN || k == QS_JV_UNDEFINED; /* Undefined defines __call__ */
    if (!strcmp(name, "escaped"))
        return 0;
    if (!strcmp(name, "lower") || !strcmp(name, "upper")) {
        /* str(value).islower()/isupper(): some cased character, none of the other case */
        v = qs_jv_to_str(ctx->arena, v);
        qs_jv *lower = qs_jj_str_case(ctx->arena, v, 'l'), *upper = qs_jj_str_case(ctx->arena, v, 'u');
        bool has_cased = !qs_jv_equal(lower, upper);
        return has_cased && qs_jv_equal(name[0] == 'l' ? lower : upper, v);
    }
    if (!strcmp(name, "odd") || !strcmp(name, "even") || !strcmp(name, "divisibleby")) {
        qs_jv *by = name[0] == 'd' ? other : qs_jv_int(ctx->arena, 2);
        if (!qs_jv_is_number(v) || !by || !qs_jv_is_number(by)) {
            qs_jj_fail(ctx, line, "test '%s' expects numbers", name);
            return -1;
        }
        if (qs_jv_as_double(by) == 0) {
            qs_jj_fail(ctx, line, "test '%s': modulo by zero", name);
            return -1;
        }
        double r;
        if (v->kind != QS_JV_FLOAT && by->kind != QS_JV_FLOAT) {
            long long a = v->kind == QS_JV_BOOL ? v->b : v->i, b = by->kind == QS_JV_BOOL ? by->b : by->i;
            r = (double)(b == -1 ? 0 : ((a % b) + b) % b);
        } else {
            double a = qs_jv_as_double(v), b = qs_jv_as_double(by);
            r = fmod(a, b);
            if (r != 0 && ((r < 0) != (b < 0)))
                r += b;
        }
        return name[0] == 'o' ? r == 1 : r == 0;
    }
    static const struct {
        const char *name, *op;
    } CMP[] = {{"eq", "=="}, {"equalto", "=="}, {"==", "=="}, {"ne", "!="}, {"!=", "!="}, {"lt", "<"},
               {"lessthan", "<"}, {"<", "<"}, {"le", "<="}, {"<=", "<="}, {"gt", ">"}, {"greaterthan", ">"},
               {">", ">"}, {"ge", ">="}, {">=", ">="}, {"sameas", "=="}, {"in", "in"}};
    for (size_t i = 0; i < sizeof CMP / sizeof CMP[0]; i++) {
        if (strcmp(name, CMP[i].name))
            continue;
        if (!other) {
            qs_jj_fail(ctx, line, "test '%s' needs an argument", name);
            return -1;
        }
        const char *op = CMP[i].op;
        if (!strcmp(name, "sameas")) /* identity: only meaningful for none/true/false */
            return v->kind == other->kind && (k != QS_JV_BOOL || v->b == other->b) &&
                   (k == QS_JV_NONE || k == QS_JV_BOOL || k == QS_JV_UNDEFINED);
        if (!strcmp(op, "=="))
            return qs_jv_equal(v, other);
        if (!strcmp(op, "!="))
            return !qs_jv_equal(v, other);
        if (!strcmp(op, "in")) {
            if (other->kind == QS_JV_STRING) {
                if (k != QS_JV_STRING) {
                    qs_jj_fail(ctx, line, "'in <string>' requires string as left operand");
                    return -1;
                }
                return v->str.len == 0 || memmem(other->str.s, other->str.len, v->str.s, v->str.len) != NULL;
            }
            qs_jv *items = qs_jj_iterate(ctx, line, other);
            if (!items)
                return -1;
            for (size_t j = 0; j < items->list->len; j++)
                if (qs_jv_equal(items->list->items[j], v))
                    return 1;
            return 0;
        }
        int c;
        qs_err e;
        if (qs_jv_compare(v, other, &c, &e)) {
            qs_jj_fail(ctx, line, "test '%s': %s", name, e.msg);
            return -1;
        }
        return !strcmp(op, "<") ? c < 0 : !strcmp(op, "<=") ? c <= 0 : !strcmp(op, ">") ? c > 0 : c >= 0;
    }
    qs_jj_fail(ctx, line, "unknown test '%s'", name);
    return -1;
}
