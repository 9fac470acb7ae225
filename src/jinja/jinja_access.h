/* jinja_access.h — the render context (frames, limits, evaluated call arguments) and reading a
 * value from another: attributes, items, iteration, and the errors those raise. The evaluator,
 * filters and methods stand on this header; none of them includes another's. */
#ifndef QS_JINJA_ACCESS_H
#define QS_JINJA_ACCESS_H

#include <stddef.h>

#include "jinja/jinja_arena.h"
#include "jinja/jinja_value.h"
#include "util/error.h"

struct qs_jj_frame {
    qs_jj_frame *parent;
    qs_jv *vars; /* a dict */
};

/* The state of one render, shared by the evaluator, filters, methods and access. */
typedef struct {
    qs_jj_arena *arena;
    qs_jj_buf *out;
    const char *name; /* the template's name for messages */
    qs_err *err;
    int control; /* 0, or QS_JJ_BREAK / QS_JJ_CONTINUE while unwinding to the loop */
    int depth;   /* macro recursion guard */
    long steps;  /* statements + expressions evaluated, against QS_JJ_MAX_STEPS */
} qs_jj_ctx;

/* Limits that keep a hostile template or conversation from hanging or exhausting the server:
 * evaluation steps and memory per render, and the size of any one string built by +, ~, * or
 * replace (nesting depth: QS_JJ_MAX_NESTING in jinja_parser.h). */
#define QS_JJ_MAX_STEPS 5000000L
#define QS_JJ_MAX_MEMORY ((size_t)512 << 20)
#define QS_JJ_MAX_STRING ((size_t)64 << 20)

enum { QS_JJ_BREAK = 1, QS_JJ_CONTINUE = 2 };

/* Arguments of a call, filter or test once evaluated. */
typedef struct {
    qs_jv **pos;
    size_t n_pos;
    qs_jv **kw;
    const char **kwnames;
    size_t n_kw;
} qs_jj_args;

/* Fills ctx->err with "NAME: line N: ..." and returns NULL (for value-returning callers). */
qs_jv *qs_jj_fail(qs_jj_ctx *ctx, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* An Undefined value carrying why it is undefined, for the error raised if it is used. */
qs_jv *qs_jj_undefined_fmt(qs_jj_ctx *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The reason an Undefined value is undefined ("'x' is undefined"), for error messages. */
const char *qs_jj_undef_hint(const qs_jv *v);

/* Jinja's getattr / getitem: dict keys, namespace attributes, list/str indices; Undefined when
 * missing; NULL with an error when obj is undefined. */
qs_jv *qs_jj_getattr(qs_jj_ctx *ctx, int line, const qs_jv *obj, const char *attr);
qs_jv *qs_jj_getitem(qs_jj_ctx *ctx, int line, const qs_jv *obj, const qs_jv *key);
/* Turns an iterable into a list of items (dict -> keys, str -> characters, undefined -> []). */
qs_jv *qs_jj_iterate(qs_jj_ctx *ctx, int line, const qs_jv *v);

#endif
