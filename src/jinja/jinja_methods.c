/* jinja_methods.c — what templates may call: Python str methods (startswith, strip, split,
 * replace, upper, format, ...), dict methods (get, items, keys, values) and the globals HF
 * provides (namespace, range, dict, raise_exception, strftime_now). Lists are immutable, as in
 * HF's ImmutableSandboxedEnvironment: append and friends are errors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "jinja/jinja_methods.h"
#include "jinja/jinja_str.h"

/* ---- argument helpers ---- */

static qs_jv *arg(const qs_jj_args *args, size_t pos, const char *kw)
{
    if (pos < args->n_pos)
        return args->pos[pos];
    for (size_t k = 0; kw && k < args->n_kw; k++)
        if (!strcmp(args->kwnames[k], kw))
            return args->kw[k];
    return NULL;
}

static qs_jv *need_str(qs_jj_ctx *ctx, int line, const char *fn, qs_jv *v, const char *what)
{
    if (!v)
        return qs_jj_fail(ctx, line, "%s() missing argument '%s'", fn, what);
    if (v->kind != QS_JV_STRING)
        return qs_jj_fail(ctx, line, "%s() argument '%s' must be str, not %s", fn, what, qs_jv_type_name(v));
    return v;
}

static bool affix_match(const qs_jv *s, const qs_jv *affix, bool suffix)
{
    if (affix->str.len > s->str.len)
        return false;
    const char *at = suffix ? s->str.s + s->str.len - affix->str.len : s->str.s;
    return !memcmp(at, affix->str.s, affix->str.len);
}

static qs_jv *str_split(qs_jj_ctx *ctx, int line, const qs_jv *s, const qs_jv *sep, long long maxsplit)
{
    qs_jv *out = qs_jv_list_new(ctx->arena, false);
    const char *p = s->str.s;
    size_t n = s->str.len;
    if (!sep || sep->kind == QS_JV_NONE) { /* runs of whitespace, no empty strings */
        size_t i = 0;
        unsigned cp;
        long long splits = 0;
        for (;;) {
            while (i < n) {
                size_t k = qs_jj_utf8_decode(p + i, n - i, &cp);
                if (!qs_jj_is_space_cp(cp))
                    break;
                i += k;
            }
            if (i >= n)
                break;
            if (maxsplit >= 0 && splits >= maxsplit) {
                qs_jv *rest = qs_jj_str_strip(ctx->arena, &(qs_jv){.kind = QS_JV_STRING, .str = {p + i, n - i}}, NULL,
                                              false, true);
                qs_jv_list_push(ctx->arena, out, rest);
                break;
            }
            size_t start = i;
            while (i < n) {
                size_t k = qs_jj_utf8_decode(p + i, n - i, &cp);
                if (qs_jj_is_space_cp(cp))
                    break;
                i += k;
            }
            qs_jv_list_push(ctx->arena, out, qs_jv_str(ctx->arena, p + start, i - start));
            splits++;
        }
        return out;
    }
    if (sep->kind != QS_JV_STRING)
        return qs_jj_fail(ctx, line, "split() separator must be str or None, not %s", qs_jv_type_name(sep));
    if (sep->str.len == 0)
        return qs_jj_fail(ctx, line, "split(): empty separator");
    const char *cur = p, *end = p + n;
    long long splits = 0;
    for (;;) {
        const char *hit = (maxsplit < 0 || splits < maxsplit) ? memmem(cur, (size_t)(end - cur), sep->str.s, sep->str.len)
                                                               : NULL;
        if (!hit) {
            qs_jv_list_push(ctx->arena, out, qs_jv_str(ctx->arena, cur, (size_t)(end - cur)));
            return out;
        }
        qs_jv_list_push(ctx->arena, out, qs_jv_str(ctx->arena, cur, (size_t)(hit - cur)));
        cur = hit + sep->str.len;
        splits++;
    }
}

/* str.format with {} / {0} / {name} fields (no format specs). */
static qs_jv *str_format(qs_jj_ctx *ctx, int line, const qs_jv *s, const qs_jj_args *args)
{
    qs_jj_buf b = {0};
    size_t auto_index = 0;
    const char *p = s->str.s, *end = p + s->str.len;
    while (p < end) {
        if (*p == '{' && p + 1 < end && p[1] == '{') {
            qs_jj_buf_put(&b, "{", 1);
            p += 2;
        } else if (*p == '}' && p + 1 < end && p[1] == '}') {
            qs_jj_buf_put(&b, "}", 1);
            p += 2;
        } else if (*p == '{') {
            const char *close = memchr(p, '}', (size_t)(end - p));
            if (!close) {
                qs_jj_buf_free(&b);
                return qs_jj_fail(ctx, line, "format(): single '{' encountered in format string");
            }
            char field[128];
            size_t fl = (size_t)(close - p - 1);
            if (fl >= sizeof field || memchr(p + 1, ':', fl) || memchr(p + 1, '!', fl)) {
                qs_jj_buf_free(&b);
                return qs_jj_fail(ctx, line, "format(): field '%.*s' is not supported (only {}, {N}, {name})",
                                  (int)(fl < 60 ? fl : 60), p + 1);
            }
            memcpy(field, p + 1, fl);
            field[fl] = '\0';
            qs_jv *v = NULL;
            if (fl == 0) {
                v = auto_index < args->n_pos ? args->pos[auto_index] : NULL;
                auto_index++;
            } else if (field[0] >= '0' && field[0] <= '9') {
                size_t idx = (size_t)strtoul(field, NULL, 10);
                v = idx < args->n_pos ? args->pos[idx] : NULL;
            } else {
                for (size_t k = 0; k < args->n_kw && !v; k++)
                    if (!strcmp(args->kwnames[k], field))
                        v = args->kw[k];
            }
            if (!v) {
                qs_jj_buf_free(&b);
                return qs_jj_fail(ctx, line, "format(): no argument for field '{%s}'", field);
            }
            qs_jv_write_str(&b, v);
            p = close + 1;
        } else {
            qs_jj_buf_put(&b, p, 1);
            p++;
        }
    }
    return qs_jj_str_from_buf(ctx->arena, &b);
}

static qs_jv *string_method(qs_jj_ctx *ctx, int line, const qs_jv *s, const char *name, const qs_jj_args *args,
                            bool *handled)
{
    qs_jj_arena *a = ctx->arena;
    *handled = true;
    if (!strcmp(name, "startswith") || !strcmp(name, "endswith")) {
        qs_jv *affix = arg(args, 0, NULL);
        bool suffix = name[0] == 'e';
        if (affix && affix->kind == QS_JV_LIST) {
            for (size_t i = 0; i < affix->list->len; i++) {
                qs_jv *x = affix->list->items[i];
                if (!need_str(ctx, line, name, x, "prefix"))
                    return NULL;
                if (affix_match(s, x, suffix))
                    return qs_jv_bool(a, true);
            }
            return qs_jv_bool(a, false);
        }
        if (!need_str(ctx, line, name, affix, suffix ? "suffix" : "prefix"))
            return NULL;
        return qs_jv_bool(a, affix_match(s, affix, suffix));
    }
    if (!strcmp(name, "strip") || !strcmp(name, "lstrip") || !strcmp(name, "rstrip")) {
        qs_jv *chars = arg(args, 0, NULL);
        if (chars && chars->kind != QS_JV_NONE && !need_str(ctx, line, name, chars, "chars"))
            return NULL;
        return qs_jj_str_strip(a, s, chars, name[0] != 'r', name[0] != 'l');
    }
    if (!strcmp(name, "split")) {
        qs_jv *max = arg(args, 1, "maxsplit");
        if (max && max->kind != QS_JV_INT)
            return qs_jj_fail(ctx, line, "split(): maxsplit must be an int");
        return str_split(ctx, line, s, arg(args, 0, "sep"), max ? max->i : -1);
    }
    if (!strcmp(name, "splitlines")) {
        qs_jv *out = qs_jv_list_new(a, false);
        const char *p = s->str.s, *end = p + s->str.len;
        while (p < end) {
            const char *nl = p;
            while (nl < end && *nl != '\n' && *nl != '\r')
                nl++;
            qs_jv_list_push(a, out, qs_jv_str(a, p, (size_t)(nl - p)));
            if (nl < end && *nl == '\r' && nl + 1 < end && nl[1] == '\n')
                nl++;
            p = nl + 1;
        }
        return out;
    }
    if (!strcmp(name, "replace")) {
        qs_jv *old = need_str(ctx, line, name, arg(args, 0, NULL), "old");
        qs_jv *new_ = old ? need_str(ctx, line, name, arg(args, 1, NULL), "new") : NULL;
        qs_jv *count = arg(args, 2, "count");
        if (!new_)
            return NULL;
        return qs_jj_str_replace(ctx, line, s, old, new_, count && count->kind == QS_JV_INT ? count->i : -1);
    }
    if (!strcmp(name, "upper") || !strcmp(name, "lower"))
        return qs_jj_str_case(a, s, name[0]);
    if (!strcmp(name, "capitalize"))
        return qs_jj_str_case(a, s, 'c');
    if (!strcmp(name, "title"))
        return qs_jj_str_case(a, s, 'T');
    if (!strcmp(name, "format"))
        return str_format(ctx, line, s, args);
    if (!strcmp(name, "find") || !strcmp(name, "count")) {
        qs_jv *sub = need_str(ctx, line, name, arg(args, 0, NULL), "sub");
        if (!sub)
            return NULL;
        if (name[0] == 'f') {
            const char *hit = memmem(s->str.s, s->str.len, sub->str.s, sub->str.len);
            return qs_jv_int(a, hit ? (long long)qs_jj_utf8_len(s->str.s, (size_t)(hit - s->str.s)) : -1);
        }
        if (sub->str.len == 0)
            return qs_jv_int(a, (long long)qs_jj_utf8_len(s->str.s, s->str.len) + 1);
        long long n = 0;
        for (const char *p = s->str.s, *end = p + s->str.len;
             (p = memmem(p, (size_t)(end - p), sub->str.s, sub->str.len)); p += sub->str.len)
            n++;
        return qs_jv_int(a, n);
    }
    if (!strcmp(name, "join")) {
        qs_jv *items = arg(args, 0, NULL);
        if (!items)
            return qs_jj_fail(ctx, line, "join() missing its iterable argument");
        items = qs_jj_iterate(ctx, line, items);
        if (!items)
            return NULL;
        qs_jj_buf b = {0};
        for (size_t i = 0; i < items->list->len; i++) {
            if (items->list->items[i]->kind != QS_JV_STRING) {
                qs_jj_buf_free(&b);
                return qs_jj_fail(ctx, line, "join(): sequence item %zu: expected str instance, %s found", i,
                                  qs_jv_type_name(items->list->items[i]));
            }
            if (i)
                qs_jj_buf_put(&b, s->str.s, s->str.len);
            qs_jv_write_str(&b, items->list->items[i]);
        }
        return qs_jj_str_from_buf(a, &b);
    }
    *handled = false;
    return NULL;
}

static qs_jv *dict_method(qs_jj_ctx *ctx, int line, const qs_jv *d, const char *name, const qs_jj_args *args,
                          bool *handled)
{
    qs_jj_arena *a = ctx->arena;
    *handled = true;
    if (!strcmp(name, "get")) {
        qs_jv *key = arg(args, 0, NULL);
        if (!key)
            return qs_jj_fail(ctx, line, "get() missing its key argument");
        qs_jv *v = qs_jv_dict_get(d, key);
        if (v)
            return v;
        qs_jv *def = arg(args, 1, NULL);
        return def ? def : qs_jv_none(a);
    }
    if (!strcmp(name, "items") || !strcmp(name, "keys") || !strcmp(name, "values")) {
        qs_jv *out = qs_jv_list_new(a, false);
        for (size_t i = 0; i < d->dict->len; i++) {
            if (name[0] == 'k') {
                qs_jv_list_push(a, out, d->dict->keys[i]);
            } else if (name[0] == 'v') {
                qs_jv_list_push(a, out, d->dict->vals[i]);
            } else {
                qs_jv *pair = qs_jv_list_new(a, true);
                qs_jv_list_push(a, pair, d->dict->keys[i]);
                qs_jv_list_push(a, pair, d->dict->vals[i]);
                qs_jv_list_push(a, out, pair);
            }
        }
        return out;
    }
    static const char *const MUTATORS[] = {"update", "pop", "popitem", "setdefault", "clear"};
    for (size_t k = 0; k < sizeof MUTATORS / sizeof MUTATORS[0]; k++)
        if (!strcmp(name, MUTATORS[k]))
            return qs_jj_fail(ctx, line, "dict.%s() is not allowed: templates cannot modify dicts (HF renders in an "
                              "immutable sandbox)", name);
    *handled = false;
    return NULL;
}

static qs_jv *builtin_call(qs_jj_ctx *ctx, int line, int which, const qs_jj_args *args)
{
    qs_jj_arena *a = ctx->arena;
    switch (which) {
    case QS_JJ_BUILTIN_RANGE: {
        long long v[3] = {0, 0, 1};
        if (args->n_pos < 1 || args->n_pos > 3)
            return qs_jj_fail(ctx, line, "range() expects 1 to 3 integer arguments");
        for (size_t i = 0; i < args->n_pos; i++) {
            if (args->pos[i]->kind != QS_JV_INT)
                return qs_jj_fail(ctx, line, "range() arguments must be int, not %s", qs_jv_type_name(args->pos[i]));
        }
        if (args->n_pos == 1) {
            v[1] = args->pos[0]->i;
        } else {
            v[0] = args->pos[0]->i;
            v[1] = args->pos[1]->i;
            if (args->n_pos == 3)
                v[2] = args->pos[2]->i;
        }
        if (v[2] == 0)
            return qs_jj_fail(ctx, line, "range() arg 3 must not be zero");
        qs_jv *out = qs_jv_list_new(a, false);
        for (long long i = v[0]; v[2] > 0 ? i < v[1] : i > v[1]; i += v[2]) {
            if (out->list->len >= 100000)
                return qs_jj_fail(ctx, line, "range() is too large (more than 100000 items)");
            qs_jv_list_push(a, out, qs_jv_int(a, i));
        }
        return out;
    }
    case QS_JJ_BUILTIN_NAMESPACE:
    case QS_JJ_BUILTIN_DICT: {
        qs_jv *out = qs_jv_dict_new(a);
        if (which == QS_JJ_BUILTIN_NAMESPACE)
            out->kind = QS_JV_NAMESPACE;
        for (size_t i = 0; i < args->n_pos; i++) {
            const qs_jv *src = args->pos[i];
            if (src->kind != QS_JV_DICT && src->kind != QS_JV_NAMESPACE)
                return qs_jj_fail(ctx, line, "%s() positional arguments must be dicts, not %s",
                                  which == QS_JJ_BUILTIN_DICT ? "dict" : "namespace", qs_jv_type_name(src));
            for (size_t k = 0; k < src->dict->len; k++)
                qs_jv_dict_set(a, out, src->dict->keys[k], src->dict->vals[k]);
        }
        for (size_t k = 0; k < args->n_kw; k++)
            qs_jv_dict_set(a, out, qs_jv_cstr(a, args->kwnames[k]), args->kw[k]);
        return out;
    }
    case QS_JJ_BUILTIN_RAISE: {
        qs_jj_buf b = {0};
        if (args->n_pos > 0)
            qs_jv_write_str(&b, args->pos[0]);
        qs_jj_fail(ctx, line, "raise_exception: %s", b.data ? b.data : "");
        qs_jj_buf_free(&b);
        return NULL;
    }
    case QS_JJ_BUILTIN_STRFTIME: {
        qs_jv *fmt = args->n_pos ? args->pos[0] : NULL;
        if (!fmt || fmt->kind != QS_JV_STRING)
            return qs_jj_fail(ctx, line, "strftime_now() expects a format string");
        time_t now = time(NULL);
        struct tm tm;
        localtime_r(&now, &tm);
        char out[512];
        size_t n = strftime(out, sizeof out, fmt->str.s, &tm);
        return qs_jv_str(a, out, n);
    }
    }
    return qs_jj_fail(ctx, line, "unknown builtin function");
}

qs_jv *qs_jj_call_method(qs_jj_ctx *ctx, int line, const qs_jv *obj, const char *name, const qs_jj_args *args,
                         bool *handled)
{
    *handled = false;
    if (obj->kind == QS_JV_BUILTIN) {
        *handled = true;
        return builtin_call(ctx, line, obj->builtin, args);
    }
    if (obj->kind == QS_JV_STRING)
        return string_method(ctx, line, obj, name, args, handled);
    if (obj->kind == QS_JV_DICT)
        return dict_method(ctx, line, obj, name, args, handled);
    if (obj->kind == QS_JV_LIST && (!strcmp(name, "count") || !strcmp(name, "index"))) {
        *handled = true;
        qs_jv *x = args->n_pos ? args->pos[0] : NULL;
        if (!x)
            return qs_jj_fail(ctx, line, "list.%s() needs a value", name);
        long long n = 0;
        for (size_t i = 0; i < obj->list->len; i++)
            if (qs_jv_equal(obj->list->items[i], x)) {
                if (name[0] == 'i')
                    return qs_jv_int(ctx->arena, (long long)i);
                n++;
            }
        if (name[0] == 'i')
            return qs_jj_fail(ctx, line, "list.index(x): x not in list");
        return qs_jv_int(ctx->arena, n);
    }
    if (obj->kind == QS_JV_LIST) {
        *handled = true;
        static const char *const MUTATORS[] = {"append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse"};
        for (size_t k = 0; k < sizeof MUTATORS / sizeof MUTATORS[0]; k++)
            if (!strcmp(name, MUTATORS[k]))
                return qs_jj_fail(ctx, line, "list.%s() is not allowed: templates cannot modify lists (HF renders in "
                                  "an immutable sandbox)", name);
        return qs_jj_fail(ctx, line, "unknown method '%s' on a list", name);
    }
    if (obj->kind == QS_JV_NAMESPACE)
        return NULL; /* attribute lookup, then call */
    if (obj->kind == QS_JV_LOOP && !strcmp(name, "cycle")) {
        *handled = true;
        if (args->n_pos == 0)
            return qs_jj_fail(ctx, line, "loop.cycle() needs at least one value");
        return args->pos[obj->loop->index0 % args->n_pos];
    }
    *handled = true;
    return qs_jj_fail(ctx, line, "unknown method '%s' on a %s value", name, qs_jv_type_name(obj));
}

void qs_jj_define_globals(qs_jj_arena *a, qs_jv *vars)
{
    static const struct {
        const char *name;
        int which;
    } GLOBALS[] = {
        {"range", QS_JJ_BUILTIN_RANGE},        {"namespace", QS_JJ_BUILTIN_NAMESPACE},
        {"dict", QS_JJ_BUILTIN_DICT},          {"raise_exception", QS_JJ_BUILTIN_RAISE},
        {"strftime_now", QS_JJ_BUILTIN_STRFTIME},
    };
    for (size_t i = 0; i < sizeof GLOBALS / sizeof GLOBALS[0]; i++) {
        qs_jv *f = qs_jv_none(a);
        f->kind = QS_JV_BUILTIN;
        f->builtin = GLOBALS[i].which;
        qs_jv_dict_set(a, vars, qs_jv_cstr(a, GLOBALS[i].name), f);
    }
}
