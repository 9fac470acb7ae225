/* jinja_access.c — reading a value from another: attributes (dict keys, namespace attributes,
 * `loop.index` and friends), items (dict keys, list and string indices with Python's negative
 * indexing), iteration (dict -> keys, str -> characters), and the errors and Undefined values
 * those produce, each naming the template line. The evaluator, the filters and the methods all
 * read values through here, so none of them needs another. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "jinja/jinja_access.h"

qs_jv *qs_jj_fail(qs_jj_ctx *ctx, int line, const char *fmt, ...)
{
    char msg[QS_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    qs_errf(ctx->err, "%s: line %d: %s", ctx->name, line, msg);
    return NULL;
}

qs_jv *qs_jj_undefined_fmt(qs_jj_ctx *ctx, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return qs_jv_undefined(ctx->arena, msg);
}

const char *qs_jj_undef_hint(const qs_jv *v)
{
    return v->undef_name ? v->undef_name : "value is undefined";
}

/* loop.index0, loop.first, ... computed from the loop's current position. */
static qs_jv *loop_attr(qs_jj_ctx *ctx, const qs_jv_loop *l, const char *attr)
{
    qs_jj_arena *a = ctx->arena;
    size_t i = l->index0, len = l->items->list->len;
    if (!strcmp(attr, "index0"))
        return qs_jv_int(a, (long long)i);
    if (!strcmp(attr, "index"))
        return qs_jv_int(a, (long long)i + 1);
    if (!strcmp(attr, "revindex0"))
        return qs_jv_int(a, (long long)(len - i - 1));
    if (!strcmp(attr, "revindex"))
        return qs_jv_int(a, (long long)(len - i));
    if (!strcmp(attr, "first"))
        return qs_jv_bool(a, i == 0);
    if (!strcmp(attr, "last"))
        return qs_jv_bool(a, i + 1 == len);
    if (!strcmp(attr, "length"))
        return qs_jv_int(a, (long long)len);
    if (!strcmp(attr, "depth"))
        return qs_jv_int(a, 1);
    if (!strcmp(attr, "depth0"))
        return qs_jv_int(a, 0);
    if (!strcmp(attr, "previtem"))
        return i > 0 ? l->items->list->items[i - 1] : qs_jj_undefined_fmt(ctx, "there is no previous item");
    if (!strcmp(attr, "nextitem"))
        return i + 1 < len ? l->items->list->items[i + 1] : qs_jj_undefined_fmt(ctx, "there is no next item");
    return qs_jj_undefined_fmt(ctx, "'LoopContext' has no attribute '%s'", attr);
}

qs_jv *qs_jj_getattr(qs_jj_ctx *ctx, int line, const qs_jv *obj, const char *attr)
{
    switch (obj->kind) {
    case QS_JV_UNDEFINED:
        return qs_jj_fail(ctx, line, "%s (while reading attribute '%s')", qs_jj_undef_hint(obj), attr);
    case QS_JV_DICT:
    case QS_JV_NAMESPACE: {
        qs_jv *v = qs_jv_dict_get_cstr(obj, attr);
        if (v)
            return v;
        return qs_jj_undefined_fmt(ctx, "'%s object' has no attribute '%s'", obj->kind == QS_JV_DICT ? "dict" : "Namespace",
                             attr);
    }
    case QS_JV_NONE:
        return qs_jj_undefined_fmt(ctx, "'None' has no attribute '%s'", attr);
    case QS_JV_LOOP:
        return loop_attr(ctx, obj->loop, attr);
    default:
        return qs_jj_undefined_fmt(ctx, "'%s object' has no attribute '%s'", qs_jv_type_name(obj), attr);
    }
}

/* Python index normalisation: returns false when out of range. */
static bool normalise_index(long long i, size_t len, size_t *out)
{
    if (i < 0)
        i += (long long)len;
    if (i < 0 || (unsigned long long)i >= len)
        return false;
    *out = (size_t)i;
    return true;
}

qs_jv *qs_jj_getitem(qs_jj_ctx *ctx, int line, const qs_jv *obj, const qs_jv *key)
{
    if (obj->kind == QS_JV_UNDEFINED)
        return qs_jj_fail(ctx, line, "%s (while reading an item)", qs_jj_undef_hint(obj));
    if (key->kind == QS_JV_UNDEFINED)
        return qs_jj_fail(ctx, line, "%s (used as a subscript)", qs_jj_undef_hint(key));
    bool int_key = key->kind == QS_JV_INT || key->kind == QS_JV_BOOL;
    long long idx = key->kind == QS_JV_BOOL ? key->b : key->i;
    size_t at;
    switch (obj->kind) {
    case QS_JV_DICT: {
        qs_jv *v = qs_jv_dict_get(obj, key);
        if (v)
            return v;
        break;
    }
    case QS_JV_NAMESPACE:
        if (key->kind == QS_JV_STRING)
            return qs_jj_getattr(ctx, line, obj, key->str.s);
        break;
    case QS_JV_LIST:
        if (int_key && normalise_index(idx, obj->list->len, &at))
            return obj->list->items[at];
        break;
    case QS_JV_STRING:
        if (int_key) {
            size_t n = qs_jj_utf8_len(obj->str.s, obj->str.len);
            if (normalise_index(idx, n, &at)) {
                size_t b = qs_jj_utf8_offset(obj->str.s, obj->str.len, at);
                size_t e = qs_jj_utf8_offset(obj->str.s, obj->str.len, at + 1);
                return qs_jv_str(ctx->arena, obj->str.s + b, e - b);
            }
        }
        break;
    default:
        break;
    }
    qs_jj_buf b = {0};
    qs_jv_write_str(&b, key);
    qs_jv *u = qs_jj_undefined_fmt(ctx, "'%s object' has no item %s", qs_jv_type_name(obj), b.data ? b.data : "");
    qs_jj_buf_free(&b);
    return u;
}

qs_jv *qs_jj_iterate(qs_jj_ctx *ctx, int line, const qs_jv *v)
{
    qs_jv *out = qs_jv_list_new(ctx->arena, false);
    switch (v->kind) {
    case QS_JV_UNDEFINED:
        return out;
    case QS_JV_LIST:
        for (size_t i = 0; i < v->list->len; i++)
            qs_jv_list_push(ctx->arena, out, v->list->items[i]);
        return out;
    case QS_JV_DICT:
        for (size_t i = 0; i < v->dict->len; i++)
            qs_jv_list_push(ctx->arena, out, v->dict->keys[i]);
        return out;
    case QS_JV_STRING: {
        unsigned cp;
        for (size_t i = 0; i < v->str.len;) {
            size_t k = qs_jj_utf8_decode(v->str.s + i, v->str.len - i, &cp);
            qs_jv_list_push(ctx->arena, out, qs_jv_str(ctx->arena, v->str.s + i, k));
            i += k;
        }
        return out;
    }
    default:
        return qs_jj_fail(ctx, line, "'%s' object is not iterable", qs_jv_type_name(v));
    }
}
