/* jinja_parser.h — the AST of a template (expression and statement nodes) and the parser that
 * builds it from tokens. */
#ifndef QS_JINJA_PARSER_H
#define QS_JINJA_PARSER_H

#include <stdbool.h>
#include <stddef.h>

#include "jinja/jinja_arena.h"
#include "jinja/jinja_lexer.h"
#include "jinja/jinja_value.h"
#include "util/error.h"

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

/* How deeply tags and expressions may nest, so a hostile template cannot exhaust the stack. */
#define QS_JJ_MAX_NESTING 200

/* Parses tokens into the statement list of the whole template. */
int qs_jj_parse(qs_jj_arena *a, const qs_jj_token *toks, size_t n, const char *name,
                qs_jj_node ***body, size_t *n_body, qs_err *err);

#endif
