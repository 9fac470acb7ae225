/* jinja_lexer.h — the tokens of a template's source and the lexer that makes them. */
#ifndef QS_JINJA_LEXER_H
#define QS_JINJA_LEXER_H

#include <stddef.h>

#include "jinja/jinja_arena.h"
#include "util/error.h"

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

#endif
