/* jinja_eval.c — walks a chat template's AST: renders statements into the output buffer and
 * evaluates expressions with Python/Jinja2 semantics (scoping: for-loop iterations and macros get
 * their own frame, `if` does not; Undefined is falsy, renders empty and fails on attribute
 * access). Attribute and item access live in jinja_access.c, filters and tests in jinja_filters.c,
 * methods and globals in jinja_methods.c. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "jinja/jinja_eval.h"
#include "jinja/jinja_filters.h"
#include "jinja/jinja_methods.h"

#define MAX_MACRO_DEPTH 64

static qs_jv *lookup(qs_jj_ctx *ctx, qs_jj_frame *frame, const char *name)
{
    for (qs_jj_frame *f = frame; f; f = f->parent) {
        qs_jv *v = qs_jv_dict_get_cstr(f->vars, name);
        if (v)
            return v;
    }
    return qs_jj_undefined_fmt(ctx, "'%s' is undefined", name);
}

static void assign(qs_jj_ctx *ctx, qs_jj_frame *frame, const char *name, qs_jv *v)
{
    qs_jv_dict_set(ctx->arena, frame->vars, qs_jv_cstr(ctx->arena, name), v);
}

static qs_jj_frame *new_frame(qs_jj_ctx *ctx, qs_jj_frame *parent)
{
    qs_jj_frame *f = qs_jj_alloc(ctx->arena, sizeof *f);
    f->parent = parent;
    f->vars = qs_jv_dict_new(ctx->arena);
    return f;
}


static bool slice_bound(qs_jj_ctx *ctx, int line, const qs_jv *v, long long *out, bool *given)
{
    if (!v || v->kind == QS_JV_NONE) {
        *given = false;
        return true;
    }
    if (v->kind != QS_JV_INT && v->kind != QS_JV_BOOL) {
        qs_jj_fail(ctx, line, "slice indices must be integers or None, not %s", qs_jv_type_name(v));
        return false;
    }
    *out = v->kind == QS_JV_BOOL ? v->b : v->i;
    *given = true;
    return true;
}

static qs_jv *eval_slice(qs_jj_ctx *ctx, qs_jj_frame *frame, const qs_jj_node *n)
{
    qs_jv *obj = qs_jj_eval(ctx, frame, n->a);
    if (!obj)
        return NULL;
    qs_jv *parts[3] = {NULL, NULL, NULL};
    const qs_jj_node *pn[3] = {n->b, n->c, n->target};
    for (int k = 0; k < 3; k++)
        if (pn[k] && !(parts[k] = qs_jj_eval(ctx, frame, pn[k])))
            return NULL;
    long long start = 0, stop = 0, step = 1;
    bool has_start, has_stop, has_step;
    if (!slice_bound(ctx, n->line, parts[0], &start, &has_start) ||
        !slice_bound(ctx, n->line, parts[1], &stop, &has_stop) ||
        !slice_bound(ctx, n->line, parts[2], &step, &has_step))
        return NULL;
    if (!has_step)
        step = 1;
    if (step == 0)
        return qs_jj_fail(ctx, n->line, "slice step cannot be zero");
    if (obj->kind == QS_JV_UNDEFINED)
        return qs_jj_fail(ctx, n->line, "%s (while slicing)", qs_jj_undef_hint(obj));
    if (obj->kind != QS_JV_LIST && obj->kind != QS_JV_STRING) /* Jinja slices with Python's [a:b:c] directly */
        return qs_jj_fail(ctx, n->line, "'%s' object is not subscriptable with a slice", qs_jv_type_name(obj));
    long long len = obj->kind == QS_JV_LIST ? (long long)obj->list->len
                                              : (long long)qs_jj_utf8_len(obj->str.s, obj->str.len);
    if (step > 0) {
        start = has_start ? (start < 0 ? (start + len < 0 ? 0 : start + len) : (start > len ? len : start)) : 0;
        stop = has_stop ? (stop < 0 ? (stop + len < 0 ? 0 : stop + len) : (stop > len ? len : stop)) : len;
    } else {
        start = has_start ? (start < 0 ? (start + len < 0 ? -1 : start + len) : (start >= len ? len - 1 : start))
                          : len - 1;
        stop = has_stop ? (stop < 0 ? (stop + len < 0 ? -1 : stop + len) : (stop >= len ? len - 1 : stop)) : -1;
    }
    if (obj->kind == QS_JV_LIST) {
        qs_jv *out = qs_jv_list_new(ctx->arena, obj->list->is_tuple);
        for (long long i = start; step > 0 ? i < stop : i > stop; i += step)
            qs_jv_list_push(ctx->arena, out, obj->list->items[i]);
        return out;
    }
    qs_jj_buf b = {0};
    for (long long i = start; step > 0 ? i < stop : i > stop; i += step) {
        size_t s = qs_jj_utf8_offset(obj->str.s, obj->str.len, (size_t)i);
        size_t e = qs_jj_utf8_offset(obj->str.s, obj->str.len, (size_t)i + 1);
        qs_jj_buf_put(&b, obj->str.s + s, e - s);
    }
    qs_jv *out = qs_jv_str(ctx->arena, b.data ? b.data : "", b.len);
    qs_jj_buf_free(&b);
    return out;
}


static bool contains(qs_jj_ctx *ctx, int line, const qs_jv *container, const qs_jv *item, bool *out)
{
    switch (container->kind) {
    case QS_JV_STRING:
        if (item->kind != QS_JV_STRING) {
            qs_jj_fail(ctx, line, "'in <string>' requires string as left operand, not %s", qs_jv_type_name(item));
            return false;
        }
        *out = item->str.len == 0 || memmem(container->str.s, container->str.len, item->str.s, item->str.len);
        return true;
    case QS_JV_LIST:
        *out = false;
        for (size_t i = 0; i < container->list->len && !*out; i++)
            *out = qs_jv_equal(container->list->items[i], item);
        return true;
    case QS_JV_DICT:
        *out = qs_jv_dict_get(container, item) != NULL;
        return true;
    case QS_JV_UNDEFINED:
        *out = false; /* Undefined iterates as empty */
        return true;
    default:
        qs_jj_fail(ctx, line, "argument of type '%s' is not iterable", qs_jv_type_name(container));
        return false;
    }
}

static long long as_int(const qs_jv *v) { return v->kind == QS_JV_BOOL ? v->b : v->i; }

static qs_jv *repeat(qs_jj_ctx *ctx, const qs_jv *seq, long long times)
{
    if (seq->kind == QS_JV_STRING) {
        qs_jj_buf b = {0};
        for (long long k = 0; k < times; k++)
            qs_jj_buf_put(&b, seq->str.s, seq->str.len);
        qs_jv *out = qs_jv_str(ctx->arena, b.data ? b.data : "", b.len);
        qs_jj_buf_free(&b);
        return out;
    }
    qs_jv *out = qs_jv_list_new(ctx->arena, seq->list->is_tuple);
    for (long long k = 0; k < times; k++)
        for (size_t i = 0; i < seq->list->len; i++)
            qs_jv_list_push(ctx->arena, out, seq->list->items[i]);
    return out;
}

static qs_jv *binop(qs_jj_ctx *ctx, int line, const char *op, const qs_jv *x, const qs_jv *y)
{
    if (!strcmp(op, "~")) {
        if (x->kind == QS_JV_STRING && y->kind == QS_JV_STRING && x->str.len + y->str.len > QS_JJ_MAX_STRING)
            return qs_jj_fail(ctx, line, "string concatenation exceeds %zu MiB", QS_JJ_MAX_STRING >> 20);
        qs_jj_buf b = {0};
        qs_jv_write_str(&b, x);
        qs_jv_write_str(&b, y);
        qs_jv *out = qs_jv_str(ctx->arena, b.data ? b.data : "", b.len);
        qs_jj_buf_free(&b);
        return out;
    }
    if (x->kind == QS_JV_UNDEFINED || y->kind == QS_JV_UNDEFINED)
        return qs_jj_fail(ctx, line, "%s (operand of '%s')", qs_jj_undef_hint(x->kind == QS_JV_UNDEFINED ? x : y), op);
    bool nums = qs_jv_is_number(x) && qs_jv_is_number(y);
    bool ints = nums && x->kind != QS_JV_FLOAT && y->kind != QS_JV_FLOAT;
    if (!strcmp(op, "+")) {
        if (ints) {
            long long r;
            if (__builtin_add_overflow(as_int(x), as_int(y), &r))
                return qs_jj_fail(ctx, line, "integer overflow in '+'");
            return qs_jv_int(ctx->arena, r);
        }
        if (nums)
            return qs_jv_float(ctx->arena, qs_jv_as_double(x) + qs_jv_as_double(y));
        if (x->kind == QS_JV_STRING && y->kind == QS_JV_STRING) {
            size_t n = x->str.len + y->str.len;
            if (n > QS_JJ_MAX_STRING)
                return qs_jj_fail(ctx, line, "string concatenation exceeds %zu MiB", QS_JJ_MAX_STRING >> 20);
            char *s = qs_jj_alloc(ctx->arena, n + 1);
            memcpy(s, x->str.s, x->str.len);
            memcpy(s + x->str.len, y->str.s, y->str.len);
            qs_jv *out = qs_jv_none(ctx->arena);
            out->kind = QS_JV_STRING;
            out->str.s = s;
            out->str.len = n;
            return out;
        }
        if (x->kind == QS_JV_LIST && y->kind == QS_JV_LIST && x->list->is_tuple == y->list->is_tuple) {
            qs_jv *out = qs_jv_list_new(ctx->arena, x->list->is_tuple);
            for (size_t i = 0; i < x->list->len; i++)
                qs_jv_list_push(ctx->arena, out, x->list->items[i]);
            for (size_t i = 0; i < y->list->len; i++)
                qs_jv_list_push(ctx->arena, out, y->list->items[i]);
            return out;
        }
    } else if (!strcmp(op, "-") && nums) {
        long long r;
        if (ints)
            return __builtin_sub_overflow(as_int(x), as_int(y), &r) ? qs_jj_fail(ctx, line, "integer overflow in '-'")
                                                                     : qs_jv_int(ctx->arena, r);
        return qs_jv_float(ctx->arena, qs_jv_as_double(x) - qs_jv_as_double(y));
    } else if (!strcmp(op, "*")) {
        long long r;
        if (ints)
            return __builtin_mul_overflow(as_int(x), as_int(y), &r) ? qs_jj_fail(ctx, line, "integer overflow in '*'")
                                                                     : qs_jv_int(ctx->arena, r);
        if (nums)
            return qs_jv_float(ctx->arena, qs_jv_as_double(x) * qs_jv_as_double(y));
        const qs_jv *seq = (x->kind == QS_JV_STRING || x->kind == QS_JV_LIST) ? x : y;
        const qs_jv *times = seq == x ? y : x;
        if ((seq->kind == QS_JV_STRING || seq->kind == QS_JV_LIST) &&
            (times->kind == QS_JV_INT || times->kind == QS_JV_BOOL)) {
            size_t unit = seq->kind == QS_JV_STRING ? seq->str.len : seq->list->len * sizeof(qs_jv *);
            if (as_int(times) > 0 && (unit > 0 && (unsigned long long)as_int(times) > QS_JJ_MAX_STRING / unit))
                return qs_jj_fail(ctx, line, "sequence repetition by %lld exceeds %zu MiB", as_int(times),
                                  QS_JJ_MAX_STRING >> 20);
            return repeat(ctx, seq, as_int(times));
        }
    } else if (!strcmp(op, "/") && nums) {
        if (qs_jv_as_double(y) == 0)
            return qs_jj_fail(ctx, line, "division by zero");
        return qs_jv_float(ctx->arena, qs_jv_as_double(x) / qs_jv_as_double(y));
    } else if ((!strcmp(op, "//") || !strcmp(op, "%")) && nums) {
        if (qs_jv_as_double(y) == 0)
            return qs_jj_fail(ctx, line, "integer division or modulo by zero");
        if (ints) {
            long long a = as_int(x), b = as_int(y);
            if (a == LLONG_MIN && b == -1)
                return qs_jj_fail(ctx, line, "integer overflow in '%s'", op);
            long long q = a / b, r = a % b;
            if (r != 0 && ((r < 0) != (b < 0))) {
                q--;
                r += b;
            }
            return qs_jv_int(ctx->arena, op[0] == '/' ? q : r);
        }
        double a = qs_jv_as_double(x), b = qs_jv_as_double(y);
        if (op[0] == '/')
            return qs_jv_float(ctx->arena, floor(a / b));
        double r = fmod(a, b);
        if (r != 0 && ((r < 0) != (b < 0)))
            r += b;
        return qs_jv_float(ctx->arena, r);
    } else if (!strcmp(op, "**") && nums) {
        if (ints && as_int(y) >= 0) {
            long long r = 1, base = as_int(x);
            for (long long k = 0; k < as_int(y); k++)
                if (__builtin_mul_overflow(r, base, &r))
                    return qs_jj_fail(ctx, line, "integer overflow in '**'");
            return qs_jv_int(ctx->arena, r);
        }
        return qs_jv_float(ctx->arena, pow(qs_jv_as_double(x), qs_jv_as_double(y)));
    } else if (!strcmp(op, "%") && x->kind == QS_JV_STRING) {
        return qs_jj_fail(ctx, line, "printf-style string formatting ('%%' on a string) is not supported");
    }
    return qs_jj_fail(ctx, line, "unsupported operand type(s) for %s: '%s' and '%s'", op, qs_jv_type_name(x),
                      qs_jv_type_name(y));
}

static qs_jv *compare(qs_jj_ctx *ctx, int line, const char *op, const qs_jv *x, const qs_jv *y)
{
    if (!strcmp(op, "=="))
        return qs_jv_bool(ctx->arena, qs_jv_equal(x, y));
    if (!strcmp(op, "!="))
        return qs_jv_bool(ctx->arena, !qs_jv_equal(x, y));
    if (!strcmp(op, "in") || !strcmp(op, "notin")) {
        bool in;
        if (!contains(ctx, line, y, x, &in))
            return NULL;
        return qs_jv_bool(ctx->arena, op[0] == 'i' ? in : !in);
    }
    if (x->kind == QS_JV_UNDEFINED || y->kind == QS_JV_UNDEFINED)
        return qs_jj_fail(ctx, line, "%s (operand of '%s')", qs_jj_undef_hint(x->kind == QS_JV_UNDEFINED ? x : y), op);
    int c;
    qs_err e;
    if (qs_jv_compare(x, y, &c, &e))
        return qs_jj_fail(ctx, line, "'%s' %s", op, e.msg);
    bool r = !strcmp(op, "<") ? c < 0 : !strcmp(op, ">") ? c > 0 : !strcmp(op, "<=") ? c <= 0 : c >= 0;
    return qs_jv_bool(ctx->arena, r);
}

static bool eval_args(qs_jj_ctx *ctx, qs_jj_frame *frame, const qs_jj_node *n, qs_jj_args *args)
{
    memset(args, 0, sizeof *args);
    args->pos = qs_jj_alloc(ctx->arena, (n->n_items + 1) * sizeof *args->pos);
    args->kw = qs_jj_alloc(ctx->arena, (n->n_items + 1) * sizeof *args->kw);
    args->kwnames = qs_jj_alloc(ctx->arena, (n->n_items + 1) * sizeof *args->kwnames);
    for (size_t i = 0; i < n->n_items; i++) {
        qs_jv *v = qs_jj_eval(ctx, frame, n->items[i]);
        if (!v)
            return false;
        if (n->kwnames && n->kwnames[i]) {
            args->kwnames[args->n_kw] = n->kwnames[i];
            args->kw[args->n_kw++] = v;
        } else {
            args->pos[args->n_pos++] = v;
        }
    }
    return true;
}

static qs_jv *call_macro(qs_jj_ctx *ctx, int line, const qs_jv *macro, const qs_jj_args *args)
{
    const qs_jj_node *m = macro->macro.node;
    if (args->n_pos > m->n_items)
        return qs_jj_fail(ctx, line, "macro '%s' takes not more than %zu argument(s)", m->name, m->n_items);
    if (ctx->depth >= MAX_MACRO_DEPTH)
        return qs_jj_fail(ctx, line, "macro '%s': recursion deeper than %d calls", m->name, MAX_MACRO_DEPTH);
    qs_jj_frame *f = new_frame(ctx, macro->macro.closure);
    for (size_t k = 0; k < args->n_kw; k++) {
        bool known = false;
        for (size_t i = 0; i < m->n_items && !known; i++)
            known = !strcmp(m->items[i]->name, args->kwnames[k]);
        if (!known)
            return qs_jj_fail(ctx, line, "macro '%s' takes no keyword argument '%s'", m->name, args->kwnames[k]);
    }
    for (size_t i = 0; i < m->n_items; i++) {
        const char *pname = m->items[i]->name;
        qs_jv *v = i < args->n_pos ? args->pos[i] : NULL;
        for (size_t k = 0; k < args->n_kw && !v; k++)
            if (!strcmp(args->kwnames[k], pname))
                v = args->kw[k];
        if (!v && m->defaults[i] && !(v = qs_jj_eval(ctx, f, m->defaults[i])))
            return NULL;
        if (!v)
            v = qs_jj_undefined_fmt(ctx, "parameter '%s' was not provided", pname);
        assign(ctx, f, pname, v);
    }
    qs_jj_buf body = {0};
    qs_jj_buf *saved = ctx->out;
    ctx->out = &body;
    ctx->depth++;
    int rc = qs_jj_render_body(ctx, f, m->body, m->n_body);
    ctx->depth--;
    ctx->out = saved;
    ctx->control = 0;
    qs_jv *out = rc ? NULL : qs_jv_str(ctx->arena, body.data ? body.data : "", body.len);
    qs_jj_buf_free(&body);
    return out;
}

qs_jv *qs_jj_call_value(qs_jj_ctx *ctx, int line, const qs_jv *callee, const qs_jj_args *args)
{
    if (callee->kind == QS_JV_MACRO)
        return call_macro(ctx, line, callee, args);
    if (callee->kind == QS_JV_BUILTIN) {
        bool handled;
        return qs_jj_call_method(ctx, line, callee, NULL, args, &handled);
    }
    if (callee->kind == QS_JV_UNDEFINED)
        return qs_jj_fail(ctx, line, "%s (called as a function)", qs_jj_undef_hint(callee));
    return qs_jj_fail(ctx, line, "'%s' object is not callable", qs_jv_type_name(callee));
}

static qs_jv *eval_call(qs_jj_ctx *ctx, qs_jj_frame *frame, const qs_jj_node *n)
{
    qs_jj_args args;
    if (n->a->kind == QS_JN_GETATTR) {
        qs_jv *obj = qs_jj_eval(ctx, frame, n->a->a);
        if (!obj)
            return NULL;
        if (obj->kind == QS_JV_UNDEFINED)
            return qs_jj_fail(ctx, n->line, "%s (while calling '%s')", qs_jj_undef_hint(obj), n->a->name);
        if (!eval_args(ctx, frame, n, &args))
            return NULL;
        bool handled = false;
        qs_jv *r = qs_jj_call_method(ctx, n->line, obj, n->a->name, &args, &handled);
        if (handled || r)
            return r;
        qs_jv *callee = qs_jj_getattr(ctx, n->line, obj, n->a->name);
        if (!callee)
            return NULL;
        if (callee->kind == QS_JV_UNDEFINED)
            return qs_jj_fail(ctx, n->line, "unknown method '%s' on a %s value", n->a->name, qs_jv_type_name(obj));
        return qs_jj_call_value(ctx, n->line, callee, &args);
    }
    qs_jv *callee = qs_jj_eval(ctx, frame, n->a);
    if (!callee || !eval_args(ctx, frame, n, &args))
        return NULL;
    return qs_jj_call_value(ctx, n->line, callee, &args);
}

static bool over_budget(qs_jj_ctx *ctx, int line)
{
    if (++ctx->steps > QS_JJ_MAX_STEPS) {
        qs_jj_fail(ctx, line, "rendering took more than %ld steps (a runaway loop?)", QS_JJ_MAX_STEPS);
        return true;
    }
    if ((ctx->steps & 255) == 0 && qs_jj_arena_used(ctx->arena) > QS_JJ_MAX_MEMORY) {
        qs_jj_fail(ctx, line, "rendering used more than %zu MiB", QS_JJ_MAX_MEMORY >> 20);
        return true;
    }
    return false;
}

qs_jv *qs_jj_eval(qs_jj_ctx *ctx, qs_jj_frame *frame, const qs_jj_node *n)
{
    qs_jv *x, *y;
    qs_jj_args args;
    if (over_budget(ctx, n->line))
        return NULL;
    switch (n->kind) {
    case QS_JN_LITERAL:
        return n->value;
    case QS_JN_NAME:
        return lookup(ctx, frame, n->name);
    case QS_JN_LIST:
    case QS_JN_TUPLE: {
        qs_jv *l = qs_jv_list_new(ctx->arena, n->kind == QS_JN_TUPLE);
        for (size_t i = 0; i < n->n_items; i++) {
            if (!(x = qs_jj_eval(ctx, frame, n->items[i])))
                return NULL;
            qs_jv_list_push(ctx->arena, l, x);
        }
        return l;
    }
    case QS_JN_DICT: {
        qs_jv *d = qs_jv_dict_new(ctx->arena);
        for (size_t i = 0; i + 1 < n->n_items; i += 2) {
            if (!(x = qs_jj_eval(ctx, frame, n->items[i])) || !(y = qs_jj_eval(ctx, frame, n->items[i + 1])))
                return NULL;
            qs_jv_dict_set(ctx->arena, d, x, y);
        }
        return d;
    }
    case QS_JN_GETATTR:
        if (!(x = qs_jj_eval(ctx, frame, n->a)))
            return NULL;
        return qs_jj_getattr(ctx, n->line, x, n->name);
    case QS_JN_GETITEM:
        if (!(x = qs_jj_eval(ctx, frame, n->a)) || !(y = qs_jj_eval(ctx, frame, n->b)))
            return NULL;
        return qs_jj_getitem(ctx, n->line, x, y);
    case QS_JN_SLICE:
        return eval_slice(ctx, frame, n);
    case QS_JN_CALL:
        return eval_call(ctx, frame, n);
    case QS_JN_FILTER:
        if (!(x = qs_jj_eval(ctx, frame, n->a)) || !eval_args(ctx, frame, n, &args))
            return NULL;
        return qs_jj_apply_filter(ctx, n->line, n->name, x, &args);
    case QS_JN_TEST: {
        if (!(x = qs_jj_eval(ctx, frame, n->a)) || !eval_args(ctx, frame, n, &args))
            return NULL;
        int r = qs_jj_apply_test(ctx, n->line, n->name, x, &args);
        if (r < 0)
            return NULL;
        return qs_jv_bool(ctx->arena, n->negate ? !r : r);
    }
    case QS_JN_NOT:
        if (!(x = qs_jj_eval(ctx, frame, n->a)))
            return NULL;
        return qs_jv_bool(ctx->arena, !qs_jv_truthy(x));
    case QS_JN_NEG:
    case QS_JN_POS:
        if (!(x = qs_jj_eval(ctx, frame, n->a)))
            return NULL;
        if (x->kind == QS_JV_FLOAT)
            return qs_jv_float(ctx->arena, n->kind == QS_JN_NEG ? -x->f : x->f);
        if (x->kind == QS_JV_INT || x->kind == QS_JV_BOOL) {
            if (n->kind == QS_JN_NEG && as_int(x) == LLONG_MIN)
                return qs_jj_fail(ctx, n->line, "integer overflow in unary '-'");
            return qs_jv_int(ctx->arena, n->kind == QS_JN_NEG ? -as_int(x) : as_int(x));
        }
        if (x->kind == QS_JV_UNDEFINED)
            return qs_jj_fail(ctx, n->line, "%s (operand of unary '-')", qs_jj_undef_hint(x));
        return qs_jj_fail(ctx, n->line, "bad operand type for unary %s: '%s'", n->kind == QS_JN_NEG ? "-" : "+",
                          qs_jv_type_name(x));
    case QS_JN_BINOP:
        if (!(x = qs_jj_eval(ctx, frame, n->a)) || !(y = qs_jj_eval(ctx, frame, n->b)))
            return NULL;
        return binop(ctx, n->line, n->name, x, y);
    case QS_JN_COMPARE:
        if (!(x = qs_jj_eval(ctx, frame, n->a)) || !(y = qs_jj_eval(ctx, frame, n->b)))
            return NULL;
        return compare(ctx, n->line, n->name, x, y);
    case QS_JN_AND:
    case QS_JN_OR:
        if (!(x = qs_jj_eval(ctx, frame, n->a)))
            return NULL;
        if (qs_jv_truthy(x) == (n->kind == QS_JN_OR))
            return x;
        return qs_jj_eval(ctx, frame, n->b);
    case QS_JN_CONDEXPR:
        if (!(x = qs_jj_eval(ctx, frame, n->a)))
            return NULL;
        if (qs_jv_truthy(x))
            return qs_jj_eval(ctx, frame, n->b);
        if (n->c)
            return qs_jj_eval(ctx, frame, n->c);
        return qs_jj_undefined_fmt(ctx, "the conditional expression had no else branch");
    default:
        return qs_jj_fail(ctx, n->line, "statement used as an expression");
    }
}

/* Binds a for/set target: a name, or a tuple of names unpacking a sequence. */
static int bind_target(qs_jj_ctx *ctx, qs_jj_frame *frame, const qs_jj_node *target, qs_jv *v)
{
    if (target->kind == QS_JN_NAME) {
        assign(ctx, frame, target->name, v);
        return 0;
    }
    qs_jv *items = qs_jj_iterate(ctx, target->line, v);
    if (!items)
        return -1;
    if (items->list->len != target->n_items)
    {
        qs_jj_fail(ctx, target->line, "cannot unpack %zu value(s) into %zu name(s)", items->list->len,
                   target->n_items);
        return -1;
    }
    for (size_t i = 0; i < target->n_items; i++)
        assign(ctx, frame, target->items[i]->name, items->list->items[i]);
    return 0;
}

static int render_for(qs_jj_ctx *ctx, qs_jj_frame *frame, const qs_jj_node *n)
{
    qs_jv *iterable = qs_jj_eval(ctx, frame, n->a);
    if (!iterable)
        return -1;
    qs_jv *all = qs_jj_iterate(ctx, n->a->line, iterable);
    if (!all)
        return -1;
    qs_jv *items = all;
    if (n->b) { /* {% for x in xs if cond %}: filter first, so loop.* counts the kept items */
        items = qs_jv_list_new(ctx->arena, false);
        for (size_t i = 0; i < all->list->len; i++) {
            qs_jj_frame *f = new_frame(ctx, frame);
            if (bind_target(ctx, f, n->target, all->list->items[i]))
                return -1;
            qs_jv *keep = qs_jj_eval(ctx, f, n->b);
            if (!keep)
                return -1;
            if (qs_jv_truthy(keep))
                qs_jv_list_push(ctx->arena, items, all->list->items[i]);
        }
    }
    size_t len = items->list->len;
    if (len == 0)
        return qs_jj_render_body(ctx, new_frame(ctx, frame), n->else_body, n->n_else);
    /* One frame and one loop object serve every iteration: each iteration starts with the frame
     * emptied (Jinja resets loop-body assignments per iteration) and the loop object moved on, as
     * Jinja's LoopContext is one mutable object. */
    qs_jj_frame *f = new_frame(ctx, frame);
    bool completed = false; /* some iteration reached the end of its body */
    qs_jv *loop = qs_jv_none(ctx->arena);
    loop->kind = QS_JV_LOOP;
    loop->loop = qs_jj_alloc(ctx->arena, sizeof *loop->loop);
    loop->loop->items = items;
    for (size_t i = 0; i < len; i++) {
        if (over_budget(ctx, n->line))
            return -1;
        qs_jv_dict_clear(f->vars);
        loop->loop->index0 = i;
        assign(ctx, f, "loop", loop);
        if (bind_target(ctx, f, n->target, items->list->items[i]))
            return -1;
        if (qs_jj_render_body(ctx, f, n->body, n->n_body))
            return -1;
        int control = ctx->control;
        ctx->control = 0;
        if (control == 0)
            completed = true;
        if (control == QS_JJ_BREAK)
            break;
    }
    /* Jinja runs `else` unless an iteration finished its body: its flag is cleared at the end of
     * the body, which break and continue skip. */
    if (!completed && n->n_else)
        return qs_jj_render_body(ctx, new_frame(ctx, frame), n->else_body, n->n_else);
    return 0;
}

static int render_set(qs_jj_ctx *ctx, qs_jj_frame *frame, const qs_jj_node *n, qs_jv *v)
{
    const qs_jj_node *t = n->target;
    if (t->kind == QS_JN_GETATTR) {
        qs_jv *ns = lookup(ctx, frame, t->a->name);
        if (ns->kind != QS_JV_NAMESPACE) {
            qs_jj_fail(ctx, n->line, "cannot assign attribute '%s' on '%s': it is not a namespace()", t->name,
                       t->a->name);
            return -1;
        }
        qs_jv_dict_set(ctx->arena, ns, qs_jv_cstr(ctx->arena, t->name), v);
        return 0;
    }
    return bind_target(ctx, frame, t, v);
}

static int render_statement(qs_jj_ctx *ctx, qs_jj_frame *frame, const qs_jj_node *n)
{
    qs_jv *v;
    if (over_budget(ctx, n->line))
        return -1;
    if (ctx->out->len > QS_JJ_MAX_STRING) {
        qs_jj_fail(ctx, n->line, "the rendered prompt exceeds %zu MiB", QS_JJ_MAX_STRING >> 20);
        return -1;
    }
    switch (n->kind) {
    case QS_JN_TEXT:
        qs_jj_buf_put(ctx->out, n->value->str.s, n->value->str.len);
        return 0;
    case QS_JN_OUTPUT:
        if (!(v = qs_jj_eval(ctx, frame, n->a)))
            return -1;
        qs_jv_write_str(ctx->out, v);
        return 0;
    case QS_JN_IF:
        if (!(v = qs_jj_eval(ctx, frame, n->a)))
            return -1;
        if (qs_jv_truthy(v))
            return qs_jj_render_body(ctx, frame, n->body, n->n_body);
        return qs_jj_render_body(ctx, frame, n->else_body, n->n_else);
    case QS_JN_FOR:
        return render_for(ctx, frame, n);
    case QS_JN_SET:
        if (!(v = qs_jj_eval(ctx, frame, n->a)))
            return -1;
        return render_set(ctx, frame, n, v);
    case QS_JN_SETBLOCK: {
        qs_jj_buf body = {0};
        qs_jj_buf *saved = ctx->out;
        ctx->out = &body;
        /* the body is a scope of its own: its assignments do not leak */
        int rc = qs_jj_render_body(ctx, new_frame(ctx, frame), n->body, n->n_body);
        ctx->out = saved;
        if (rc == 0)
            rc = render_set(ctx, frame, n, qs_jv_str(ctx->arena, body.data ? body.data : "", body.len));
        qs_jj_buf_free(&body);
        return rc;
    }
    case QS_JN_MACRO:
        v = qs_jv_none(ctx->arena);
        v->kind = QS_JV_MACRO;
        v->macro.node = n;
        v->macro.closure = frame;
        v->macro.name = n->name;
        assign(ctx, frame, n->name, v);
        return 0;
    case QS_JN_BREAK:
        ctx->control = QS_JJ_BREAK;
        return 0;
    case QS_JN_CONTINUE:
        ctx->control = QS_JJ_CONTINUE;
        return 0;
    case QS_JN_SCOPE:
        return qs_jj_render_body(ctx, frame, n->body, n->n_body);
    default:
        v = qs_jj_eval(ctx, frame, n);
        return v ? 0 : -1;
    }
}

int qs_jj_render_body(qs_jj_ctx *ctx, qs_jj_frame *frame, qs_jj_node **body, size_t n)
{
    for (size_t i = 0; i < n && !ctx->control; i++)
        if (render_statement(ctx, frame, body[i]))
            return -1;
    return 0;
}
