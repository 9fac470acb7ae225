/* jinja_internal.h — the pieces of the chat-template interpreter shared between its files:
 * an arena (every value and AST node lives in one, freed at once), the value type (Python-like:
 * undefined, none, bool, int, float, str, list/tuple, dict, namespace, macro), tokens, AST nodes
 * and the render context. Not a public header: only src/jinja/jinja_*.c and src/tokenizer/chat_template.c
 * include it. */
#ifndef QS_JINJA_INTERNAL_H
#define QS_JINJA_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include <cJSON.h>

#include "util/error.h"

/* ---- arena and growable strings (jinja_arena.c) ---- */
typedef struct qs_jj_arena qs_jj_arena;
qs_jj_arena *qs_jj_arena_new(void);
void qs_jj_arena_free(qs_jj_arena *a);
/* Zeroed memory that lives until the arena is freed; aborts the process only on OOM. */
void *qs_jj_alloc(qs_jj_arena *a, size_t n);
char *qs_jj_strndup(qs_jj_arena *a, const char *s, size_t n);
size_t qs_jj_arena_used(const qs_jj_arena *a);

typedef struct {
    char *data;
    size_t len, cap;
} qs_jj_buf;
void qs_jj_buf_put(qs_jj_buf *b, const char *s, size_t n);
void qs_jj_buf_puts(qs_jj_buf *b, const char *s);
void qs_jj_buf_printf(qs_jj_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void qs_jj_buf_free(qs_jj_buf *b);

/* ---- values (jinja_value.c) ---- */
typedef enum {
    QS_JV_UNDEFINED,
    QS_JV_NONE,
    QS_JV_BOOL,
    QS_JV_INT,
    QS_JV_FLOAT,
    QS_JV_STRING,
    QS_JV_LIST, /* also tuples (is_tuple) */
    QS_JV_DICT,
    QS_JV_NAMESPACE, /* namespace(): a dict whose attributes `set ns.x = ...` may change */
    QS_JV_MACRO,
    QS_JV_BUILTIN, /* a global function: range, namespace, raise_exception, strftime_now, dict */
    QS_JV_LOOP,    /* a for loop's `loop`: one mutable object per loop, like Jinja's LoopContext */
} qs_jv_kind;

typedef struct qs_jv qs_jv;
typedef struct qs_jj_node qs_jj_node;
typedef struct qs_jj_frame qs_jj_frame;

typedef struct {
    qs_jv **items;
    size_t len, cap;
    bool is_tuple;
} qs_jv_list;

typedef struct {
    qs_jv **keys, **vals;
    size_t len, cap;
} qs_jv_dict;

typedef struct {
    struct qs_jv *items; /* the (filtered) list being iterated */
    size_t index0;
} qs_jv_loop;

struct qs_jv {
    qs_jv_kind kind;
    union {
        bool b;
        long long i;
        double f;
        struct {
            const char *s;
            size_t len;
        } str;
        qs_jv_list *list;
        qs_jv_dict *dict; /* dicts and namespaces */
        struct {
            const qs_jj_node *node;
            qs_jj_frame *closure;
        } macro;
        int builtin;
        qs_jv_loop *loop;
        const char *undef_name; /* why it is undefined ("'x' is undefined"), for error messages */
    };
};

qs_jv *qs_jv_undefined(qs_jj_arena *a, const char *name);
qs_jv *qs_jv_none(qs_jj_arena *a);
qs_jv *qs_jv_bool(qs_jj_arena *a, bool b);
qs_jv *qs_jv_int(qs_jj_arena *a, long long i);
qs_jv *qs_jv_float(qs_jj_arena *a, double f);
qs_jv *qs_jv_str(qs_jj_arena *a, const char *s, size_t len); /* copies */
qs_jv *qs_jv_cstr(qs_jj_arena *a, const char *s);
qs_jv *qs_jv_list_new(qs_jj_arena *a, bool is_tuple);
void qs_jv_list_push(qs_jj_arena *a, qs_jv *list, qs_jv *item);
qs_jv *qs_jv_dict_new(qs_jj_arena *a);
void qs_jv_dict_set(qs_jj_arena *a, qs_jv *dict, qs_jv *key, qs_jv *val);
qs_jv *qs_jv_dict_get(const qs_jv *dict, const qs_jv *key);         /* NULL if absent */
qs_jv *qs_jv_dict_get_cstr(const qs_jv *dict, const char *key); /* NULL if absent */
void qs_jv_dict_clear(qs_jv *dict);

qs_jv *qs_jv_from_json(qs_jj_arena *a, const cJSON *j);
bool qs_jv_truthy(const qs_jv *v);
bool qs_jv_equal(const qs_jv *x, const qs_jv *y);
bool qs_jv_is_number(const qs_jv *v); /* bool, int or float, like Python's numbers.Number */
double qs_jv_as_double(const qs_jv *v);
const char *qs_jv_type_name(const qs_jv *v); /* Python's name: 'str', 'int', 'dict', ... */
/* Three-way ordering like Python's <; -1 with err filled when the types don't order. */
int qs_jv_compare(const qs_jv *x, const qs_jv *y, int *out, qs_err *err);

/* Python str(v) appended to b (strings verbatim, None, True, 1.0, ['a'], {'k': 1}). */
void qs_jv_write_str(qs_jj_buf *b, const qs_jv *v);
/* str(v) as a value (returns v itself when it already is a string). */
qs_jv *qs_jv_to_str(qs_jj_arena *a, const qs_jv *v);
/* Python json.dumps(v, ensure_ascii=False, indent=indent, sort_keys=sort_keys) as HF's tojson
 * does it; indent < 0 means none (", " and ": " separators). */
int qs_jv_write_json(qs_jj_buf *b, const qs_jv *v, int indent, bool sort_keys, qs_err *err);
/* Python repr() of a float: shortest round-trip digits, "1.0", "1e+16", "inf". */
void qs_jj_format_float(qs_jj_buf *b, double f);

/* UTF-8 helpers: code point count, byte offset of code point index (clamped), and whether a
 * code point is whitespace in Python's str.isspace() sense. */
size_t qs_jj_utf8_len(const char *s, size_t n);
size_t qs_jj_utf8_offset(const char *s, size_t n, size_t index);
size_t qs_jj_utf8_decode(const char *s, size_t n, unsigned *cp); /* bytes used, >= 1 */
bool qs_jj_is_space_cp(unsigned cp);

/* ---- tokens (jinja_lexer.c) ---- */
typedef enum {
    QS_JT_TEXT,
    QS_JT_VAR_BEGIN,
    QS_JT_VAR_END,
    QS_JT_BLOCK_BEGIN,
    QS_JT_BLOCK_END,
    QS_JT_NAME,
    QS_JT_STRING,
    QS_JT_INT,
    QS_JT_FLOAT,
    QS_JT_OP,
    QS_JT_EOF,
} qs_jt_kind;

typedef struct {
    qs_jt_kind kind;
    int line;
    const char *s; /* text, name, op or unescaped string (NUL-terminated, in the arena) */
    size_t len;
    long long i;
    double f;
} qs_jj_token;

/* Splits source into tokens applying {%- -%} and HF's trim_blocks/lstrip_blocks. */
int qs_jj_lex(qs_jj_arena *a, const char *source, const char *name, qs_jj_token **out, size_t *n,
              qs_err *err);

/* ---- AST (jinja_parser.c) ---- */
typedef enum {
    /* expressions */
    QS_JN_LITERAL,  /* value */
    QS_JN_NAME,     /* name */
    QS_JN_LIST,     /* items */
    QS_JN_TUPLE,    /* items */
    QS_JN_DICT,     /* items: key, value, key, value ... */
    QS_JN_GETATTR,  /* a.name */
    QS_JN_GETITEM,  /* a[b] */
    QS_JN_SLICE,    /* a[b:c:d], each of b, c, d may be NULL */
    QS_JN_CALL,     /* a(items; kwnames) */
    QS_JN_FILTER,   /* a | name(items; kwnames) */
    QS_JN_TEST,     /* a is [not: negate] name(items) */
    QS_JN_NOT,      /* not a */
    QS_JN_NEG,      /* -a */
    QS_JN_POS,      /* +a */
    QS_JN_BINOP,    /* a op b: + - * / // % ** ~ */
    QS_JN_COMPARE,  /* a op b: == != < > <= >= in notin */
    QS_JN_AND,
    QS_JN_OR,
    QS_JN_CONDEXPR, /* b if a else c (c may be NULL) */
    /* statements */
    QS_JN_TEXT,     /* value (a string) */
    QS_JN_OUTPUT,   /* {{ a }} */
    QS_JN_IF,       /* if a: body else else_body */
    QS_JN_FOR,      /* for target in a [if b]: body else else_body */
    QS_JN_SET,      /* set target = a */
    QS_JN_SETBLOCK, /* set target: body */
    QS_JN_MACRO,    /* macro name(items = param names as QS_JN_NAME, defaults in b-list): body */
    QS_JN_BREAK,
    QS_JN_CONTINUE,
    QS_JN_SCOPE,    /* a plain body (generation blocks) */
} qs_jn_kind;

struct qs_jj_node {
    qs_jn_kind kind;
    int line;
    const char *name; /* NAME, GETATTR attribute, FILTER/TEST/MACRO name, BINOP/COMPARE operator */
    qs_jv *value;     /* LITERAL and TEXT */
    qs_jj_node *a, *b, *c;
    qs_jj_node *target; /* FOR / SET */
    qs_jj_node **items;
    const char **kwnames; /* parallel to items for CALL/FILTER/TEST (NULL = positional) */
    size_t n_items;
    qs_jj_node **defaults; /* MACRO: parallel to items, NULL when no default */
    qs_jj_node **body, **else_body;
    size_t n_body, n_else;
    bool negate;
};

/* Parses tokens into the statement list of the whole template. */
int qs_jj_parse(qs_jj_arena *a, const qs_jj_token *toks, size_t n, const char *name,
                qs_jj_node ***body, size_t *n_body, qs_err *err);

/* ---- evaluation (jinja_eval.c, jinja_filters.c, jinja_methods.c) ---- */
struct qs_jj_frame {
    qs_jj_frame *parent;
    qs_jv *vars; /* a dict */
};

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
 * evaluation steps and memory per render, the size of any one string built by +, ~, * or replace, and how
 * deeply tags and expressions may nest. */
#define QS_JJ_MAX_STEPS 5000000L
#define QS_JJ_MAX_MEMORY ((size_t)512 << 20)
#define QS_JJ_MAX_STRING ((size_t)64 << 20)
#define QS_JJ_MAX_NESTING 200

enum { QS_JJ_BREAK = 1, QS_JJ_CONTINUE = 2 };
enum { QS_JJ_BUILTIN_RANGE, QS_JJ_BUILTIN_NAMESPACE, QS_JJ_BUILTIN_RAISE, QS_JJ_BUILTIN_STRFTIME,
       QS_JJ_BUILTIN_DICT };

/* Fills ctx->err with "NAME: line N: ..." and returns NULL (for value-returning callers). */
qs_jv *qs_jj_fail(qs_jj_ctx *ctx, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Arguments of a call, filter or test once evaluated. */
typedef struct {
    qs_jv **pos;
    size_t n_pos;
    qs_jv **kw;
    const char **kwnames;
    size_t n_kw;
} qs_jj_args;

int qs_jj_render_body(qs_jj_ctx *ctx, qs_jj_frame *frame, qs_jj_node **body, size_t n);
qs_jv *qs_jj_eval(qs_jj_ctx *ctx, qs_jj_frame *frame, const qs_jj_node *n);
/* Calls a macro or builtin value. */
qs_jv *qs_jj_call_value(qs_jj_ctx *ctx, int line, const qs_jv *callee, const qs_jj_args *args);
/* Jinja's getattr / getitem: dict keys, namespace attributes, list/str indices; Undefined when
 * missing; NULL with an error when obj is undefined. */
qs_jv *qs_jj_getattr(qs_jj_ctx *ctx, int line, const qs_jv *obj, const char *attr);
qs_jv *qs_jj_getitem(qs_jj_ctx *ctx, int line, const qs_jv *obj, const qs_jv *key);
/* Turns an iterable into a list of items (dict -> keys, str -> characters, undefined -> []). */
qs_jv *qs_jj_iterate(qs_jj_ctx *ctx, int line, const qs_jv *v);

qs_jv *qs_jj_apply_filter(qs_jj_ctx *ctx, int line, const char *name, qs_jv *input, const qs_jj_args *args);
/* Returns 1 / 0 for the test's result, -1 on error. */
int qs_jj_apply_test(qs_jj_ctx *ctx, int line, const char *name, const qs_jv *input, const qs_jj_args *args);
/* obj.name(args) for str and dict methods; *handled is false when obj has no such method. */
qs_jv *qs_jj_call_method(qs_jj_ctx *ctx, int line, const qs_jv *obj, const char *name, const qs_jj_args *args,
                         bool *handled);
/* The globals every render sees (range, namespace, raise_exception, strftime_now, dict). */
void qs_jj_define_globals(qs_jj_arena *a, qs_jv *vars);

/* String transforms shared by filters and methods (Python semantics). */
qs_jv *qs_jj_str_strip(qs_jj_arena *a, const qs_jv *s, const qs_jv *chars, bool left, bool right);
qs_jv *qs_jj_str_case(qs_jj_arena *a, const qs_jv *s, char mode); /* 'u'pper 'l'ower 'c'apitalize 't'itle */
qs_jv *qs_jj_str_replace(qs_jj_ctx *ctx, int line, const qs_jv *s, const qs_jv *old, const qs_jv *new_,
                         long long count);

#endif
