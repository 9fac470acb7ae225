/* jinja_parser.c — builds the AST of a chat template from its tokens: statements (if/elif/else,
 * for with else and an inline filter, set incl. namespace attributes and block set, macro,
 * break/continue, generation) and expressions with Jinja2's precedence:
 * condexpr < or < and < not < compare < + - < ~ < * / // % < ** < unary < postfix/filter/test.
 * Unknown tags are errors naming the tag and its line. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "jinja/jinja_parser.h"

typedef struct {
    qs_jj_arena *arena;
    const qs_jj_token *t;
    size_t n, pos;
    const char *name;
    qs_err *err;
    bool failed;
    int depth; /* nesting of expressions and tags, against QS_JJ_MAX_NESTING */
} parser;

/* A growable array of node pointers in the arena. */
typedef struct {
    qs_jj_node **items;
    const char **names;
    size_t len, cap;
} node_vec;

static void vec_push(parser *p, node_vec *v, qs_jj_node *node, const char *name)
{
    if (v->len == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 8;
        qs_jj_node **items = qs_jj_alloc(p->arena, cap * sizeof *items);
        const char **names = qs_jj_alloc(p->arena, cap * sizeof *names);
        if (v->len) {
            memcpy(items, v->items, v->len * sizeof *items);
            memcpy(names, v->names, v->len * sizeof *names);
        }
        v->items = items;
        v->names = names;
        v->cap = cap;
    }
    v->items[v->len] = node;
    v->names[v->len] = name;
    v->len++;
}

static const qs_jj_token *cur(parser *p) { return &p->t[p->pos]; }
static const qs_jj_token *peek(parser *p, size_t k)
{
    size_t at = p->pos + k < p->n ? p->pos + k : p->n - 1;
    return &p->t[at];
}
static void advance(parser *p)
{
    if (p->pos + 1 < p->n)
        p->pos++;
}

static qs_jj_node *fail(parser *p, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static qs_jj_node *fail(parser *p, int line, const char *fmt, ...)
{
    if (p->failed)
        return NULL;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    qs_errf(p->err, "%s: line %d: %s", p->name, line, msg);
    p->failed = true;
    return NULL;
}

static bool is_op(const qs_jj_token *t, const char *op)
{
    return t->kind == QS_JT_OP && t->len == strlen(op) && !memcmp(t->s, op, t->len);
}
static bool is_name(const qs_jj_token *t, const char *name)
{
    return t->kind == QS_JT_NAME && !strcmp(t->s, name);
}

static const char *describe(const qs_jj_token *t)
{
    switch (t->kind) {
    case QS_JT_EOF: return "end of template";
    case QS_JT_VAR_END: return "'}}'";
    case QS_JT_BLOCK_END: return "'%}'";
    case QS_JT_TEXT: return "text";
    case QS_JT_STRING: return "a string";
    default: return t->s ? t->s : "token";
    }
}

static bool expect_op(parser *p, const char *op)
{
    if (is_op(cur(p), op)) {
        advance(p);
        return true;
    }
    fail(p, cur(p)->line, "expected '%s', found %s", op, describe(cur(p)));
    return false;
}

static qs_jj_node *node(parser *p, qs_jn_kind kind, int line)
{
    qs_jj_node *n = qs_jj_alloc(p->arena, sizeof *n);
    n->kind = kind;
    n->line = line;
    return n;
}

static qs_jj_node *parse_expr(parser *p, bool with_condexpr);
static qs_jj_node *parse_unary(parser *p, bool with_filter);
static qs_jj_node *parse_primary(parser *p);
static qs_jj_node *parse_postfix(parser *p, qs_jj_node *n);

/* Call arguments after '(' up to ')': positional and name=value. */
static bool parse_args(parser *p, qs_jj_node *n)
{
    node_vec v = {0};
    if (!expect_op(p, "("))
        return false;
    while (!is_op(cur(p), ")")) {
        if (v.len && !expect_op(p, ","))
            return false;
        if (is_op(cur(p), ")"))
            break;
        const char *kw = NULL;
        if (cur(p)->kind == QS_JT_NAME && is_op(peek(p, 1), "=")) {
            kw = cur(p)->s;
            advance(p);
            advance(p);
        } else if (is_op(cur(p), "*") || is_op(cur(p), "**")) {
            fail(p, cur(p)->line, "*args and **kwargs in calls are not supported");
            return false;
        }
        qs_jj_node *arg = parse_expr(p, true);
        if (!arg)
            return false;
        vec_push(p, &v, arg, kw);
    }
    advance(p);
    n->items = v.items;
    n->kwnames = v.names;
    n->n_items = v.len;
    return true;
}

static qs_jj_node *parse_tuple_or_expr(parser *p, bool with_condexpr, bool explicit_parens)
{
    int line = cur(p)->line;
    if (explicit_parens && is_op(cur(p), ")"))
        return node(p, QS_JN_TUPLE, line);
    qs_jj_node *first = parse_expr(p, with_condexpr);
    if (!first || !is_op(cur(p), ","))
        return first;
    node_vec v = {0};
    vec_push(p, &v, first, NULL);
    while (is_op(cur(p), ",")) {
        advance(p);
        const qs_jj_token *t = cur(p);
        if (t->kind == QS_JT_VAR_END || t->kind == QS_JT_BLOCK_END || is_op(t, ")") || is_name(t, "if"))
            break;
        qs_jj_node *e = parse_expr(p, with_condexpr);
        if (!e)
            return NULL;
        vec_push(p, &v, e, NULL);
    }
    qs_jj_node *t = node(p, QS_JN_TUPLE, line);
    t->items = v.items;
    t->n_items = v.len;
    return t;
}

static qs_jj_node *parse_primary(parser *p)
{
    const qs_jj_token *t = cur(p);
    int line = t->line;
    qs_jj_node *n;
    switch (t->kind) {
    case QS_JT_NAME: {
        const char *s = t->s;
        advance(p);
        n = node(p, QS_JN_LITERAL, line);
        if (!strcmp(s, "true") || !strcmp(s, "True"))
            n->value = qs_jv_bool(p->arena, true);
        else if (!strcmp(s, "false") || !strcmp(s, "False"))
            n->value = qs_jv_bool(p->arena, false);
        else if (!strcmp(s, "none") || !strcmp(s, "None"))
            n->value = qs_jv_none(p->arena);
        else {
            n->kind = QS_JN_NAME;
            n->name = s;
        }
        return n;
    }
    case QS_JT_STRING: {
        qs_jj_buf b = {0};
        while (cur(p)->kind == QS_JT_STRING) { /* adjacent literals concatenate */
            qs_jj_buf_put(&b, cur(p)->s, cur(p)->len);
            advance(p);
        }
        n = node(p, QS_JN_LITERAL, line);
        n->value = qs_jv_str(p->arena, b.data ? b.data : "", b.len);
        qs_jj_buf_free(&b);
        return n;
    }
    case QS_JT_INT:
        n = node(p, QS_JN_LITERAL, line);
        n->value = qs_jv_int(p->arena, t->i);
        advance(p);
        return n;
    case QS_JT_FLOAT:
        n = node(p, QS_JN_LITERAL, line);
        n->value = qs_jv_float(p->arena, t->f);
        advance(p);
        return n;
    case QS_JT_OP:
        if (is_op(t, "(")) {
            advance(p);
            n = parse_tuple_or_expr(p, true, true);
            if (!n || !expect_op(p, ")"))
                return NULL;
            return n;
        }
        if (is_op(t, "[") || is_op(t, "{")) {
            bool is_list = is_op(t, "[");
            const char *closer = is_list ? "]" : "}";
            advance(p);
            node_vec v = {0};
            while (!is_op(cur(p), closer)) {
                if (v.len && !expect_op(p, ","))
                    return NULL;
                if (is_op(cur(p), closer))
                    break;
                qs_jj_node *e = parse_expr(p, true);
                if (!e)
                    return NULL;
                vec_push(p, &v, e, NULL);
                if (!is_list) {
                    if (!expect_op(p, ":"))
                        return NULL;
                    qs_jj_node *val = parse_expr(p, true);
                    if (!val)
                        return NULL;
                    vec_push(p, &v, val, NULL);
                }
            }
            advance(p);
            n = node(p, is_list ? QS_JN_LIST : QS_JN_DICT, line);
            n->items = v.items;
            n->n_items = v.len;
            return n;
        }
        break;
    default:
        break;
    }
    return fail(p, line, "unexpected %s in an expression", describe(t));
}

static qs_jj_node *parse_subscript(parser *p, qs_jj_node *obj)
{
    int line = cur(p)->line;
    advance(p); /* [ */
    qs_jj_node *parts[3] = {NULL, NULL, NULL};
    int colons = 0;
    for (;;) {
        if (is_op(cur(p), "]"))
            break;
        if (is_op(cur(p), ":")) {
            if (++colons > 2)
                return fail(p, line, "too many ':' in a slice");
            advance(p);
            continue;
        }
        if (parts[colons])
            return fail(p, cur(p)->line, "expected ']' or ':' in a subscript, found %s", describe(cur(p)));
        parts[colons] = parse_expr(p, true);
        if (!parts[colons])
            return NULL;
    }
    advance(p);
    qs_jj_node *n;
    if (colons == 0) {
        if (!parts[0])
            return fail(p, line, "empty subscript []");
        n = node(p, QS_JN_GETITEM, line);
        n->b = parts[0];
    } else {
        n = node(p, QS_JN_SLICE, line);
        n->b = parts[0];
        n->c = parts[1];
        n->target = parts[2]; /* step */
    }
    n->a = obj;
    return n;
}

/* A call of callee at the current '(': callee(args...), or NULL after a parse error. */
static qs_jj_node *parse_call(parser *p, qs_jj_node *callee, int line)
{
    qs_jj_node *c = node(p, QS_JN_CALL, line);
    c->a = callee;
    return parse_args(p, c) ? c : NULL;
}

static qs_jj_node *parse_postfix(parser *p, qs_jj_node *n)
{
    while (n) {
        const qs_jj_token *t = cur(p);
        if (is_op(t, ".")) {
            advance(p);
            const qs_jj_token *a = cur(p);
            if (a->kind == QS_JT_NAME) {
                qs_jj_node *g = node(p, QS_JN_GETATTR, a->line);
                g->a = n;
                g->name = a->s;
                advance(p);
                n = g;
            } else if (a->kind == QS_JT_INT) {
                qs_jj_node *g = node(p, QS_JN_GETITEM, a->line);
                g->a = n;
                g->b = node(p, QS_JN_LITERAL, a->line);
                g->b->value = qs_jv_int(p->arena, a->i);
                advance(p);
                n = g;
            } else {
                return fail(p, a->line, "expected an attribute name after '.', found %s", describe(a));
            }
        } else if (is_op(t, "[")) {
            n = parse_subscript(p, n);
        } else if (is_op(t, "(")) {
            n = parse_call(p, n, t->line);
        } else {
            break;
        }
    }
    return n;
}

static bool starts_primary(const qs_jj_token *t)
{
    if (t->kind == QS_JT_NAME)
        return strcmp(t->s, "else") && strcmp(t->s, "or") && strcmp(t->s, "and");
    return t->kind == QS_JT_STRING || t->kind == QS_JT_INT || t->kind == QS_JT_FLOAT || is_op(t, "(") ||
           is_op(t, "[") || is_op(t, "{");
}

/* Filters (| name(args)), tests (is [not] name(args)) and calls after a unary expression. */
static qs_jj_node *parse_filter_expr(parser *p, qs_jj_node *n)
{
    while (n) {
        const qs_jj_token *t = cur(p);
        if (is_op(t, "|")) {
            advance(p);
            if (cur(p)->kind != QS_JT_NAME)
                return fail(p, cur(p)->line, "expected a filter name after '|', found %s", describe(cur(p)));
            qs_jj_node *f = node(p, QS_JN_FILTER, cur(p)->line);
            f->name = cur(p)->s;
            f->a = n;
            advance(p);
            if (is_op(cur(p), "(") && !parse_args(p, f))
                return NULL;
            n = f;
        } else if (is_name(t, "is")) {
            advance(p);
            qs_jj_node *f = node(p, QS_JN_TEST, t->line);
            if (is_name(cur(p), "not")) {
                f->negate = true;
                advance(p);
            }
            if (cur(p)->kind != QS_JT_NAME)
                return fail(p, cur(p)->line, "expected a test name after 'is', found %s", describe(cur(p)));
            f->name = cur(p)->s;
            f->a = n;
            advance(p);
            if (is_op(cur(p), "(")) {
                if (!parse_args(p, f))
                    return NULL;
            } else if (starts_primary(cur(p))) {
                qs_jj_node *arg = parse_postfix(p, parse_primary(p));
                if (!arg)
                    return NULL;
                f->items = qs_jj_alloc(p->arena, sizeof *f->items);
                f->kwnames = qs_jj_alloc(p->arena, sizeof *f->kwnames);
                f->items[0] = arg;
                f->n_items = 1;
            }
            n = f;
        } else if (is_op(t, "(")) {
            n = parse_call(p, n, t->line);
        } else {
            break;
        }
    }
    return n;
}

static qs_jj_node *parse_unary(parser *p, bool with_filter)
{
    const qs_jj_token *t = cur(p);
    qs_jj_node *n;
    if (is_op(t, "-") || is_op(t, "+")) {
        if (p->depth >= QS_JJ_MAX_NESTING)
            return fail(p, t->line, "expressions nest deeper than %d levels", QS_JJ_MAX_NESTING);
        advance(p);
        n = node(p, is_op(t, "-") ? QS_JN_NEG : QS_JN_POS, t->line);
        p->depth++;
        n->a = parse_unary(p, false);
        p->depth--;
        if (!n->a)
            return NULL;
    } else {
        n = parse_primary(p);
    }
    n = parse_postfix(p, n);
    if (with_filter)
        n = parse_filter_expr(p, n);
    return n;
}

static qs_jj_node *binop(parser *p, const char *op, int line, qs_jj_node *l, qs_jj_node *r)
{
    if (!l || !r)
        return NULL;
    qs_jj_node *n = node(p, QS_JN_BINOP, line);
    n->name = op;
    n->a = l;
    n->b = r;
    return n;
}

static qs_jj_node *parse_pow(parser *p)
{
    qs_jj_node *n = parse_unary(p, true);
    while (n && is_op(cur(p), "**")) {
        int line = cur(p)->line;
        advance(p);
        n = binop(p, "**", line, n, parse_unary(p, true));
    }
    return n;
}

static qs_jj_node *parse_math2(parser *p)
{
    qs_jj_node *n = parse_pow(p);
    while (n) {
        const qs_jj_token *t = cur(p);
        const char *op = is_op(t, "*") ? "*" : is_op(t, "/") ? "/" : is_op(t, "//") ? "//" : is_op(t, "%") ? "%" : NULL;
        if (!op)
            break;
        advance(p);
        n = binop(p, op, t->line, n, parse_pow(p));
    }
    return n;
}

static qs_jj_node *parse_concat(parser *p)
{
    qs_jj_node *n = parse_math2(p);
    while (n && is_op(cur(p), "~")) {
        int line = cur(p)->line;
        advance(p);
        n = binop(p, "~", line, n, parse_math2(p));
    }
    return n;
}

static qs_jj_node *parse_math1(parser *p)
{
    qs_jj_node *n = parse_concat(p);
    while (n) {
        const qs_jj_token *t = cur(p);
        const char *op = is_op(t, "+") ? "+" : is_op(t, "-") ? "-" : NULL;
        if (!op)
            break;
        advance(p);
        n = binop(p, op, t->line, n, parse_concat(p));
    }
    return n;
}

static qs_jj_node *parse_compare(parser *p)
{
    qs_jj_node *n = parse_math1(p);
    qs_jj_node *chain = NULL; /* a < b < c becomes (a < b) and (b < c) */
    while (n) {
        const qs_jj_token *t = cur(p);
        const char *op = NULL;
        static const char *const OPS[] = {"==", "!=", "<", ">", "<=", ">="};
        for (size_t k = 0; k < 6 && !op; k++)
            if (is_op(t, OPS[k]))
                op = OPS[k];
        if (!op && is_name(t, "in"))
            op = "in";
        if (!op && is_name(t, "not") && is_name(peek(p, 1), "in")) {
            op = "notin";
            advance(p);
        }
        if (!op)
            break;
        advance(p);
        qs_jj_node *rhs = parse_math1(p);
        if (!rhs)
            return NULL;
        qs_jj_node *c = node(p, QS_JN_COMPARE, t->line);
        c->name = op;
        c->a = n;
        c->b = rhs;
        if (chain) {
            qs_jj_node *both = node(p, QS_JN_AND, t->line);
            both->a = chain;
            both->b = c;
            chain = both;
        } else {
            chain = c;
        }
        n = rhs;
    }
    return chain ? chain : n;
}

static qs_jj_node *parse_not(parser *p)
{
    if (is_name(cur(p), "not")) {
        if (p->depth >= QS_JJ_MAX_NESTING)
            return fail(p, cur(p)->line, "expressions nest deeper than %d levels", QS_JJ_MAX_NESTING);
        qs_jj_node *n = node(p, QS_JN_NOT, cur(p)->line);
        advance(p);
        p->depth++;
        n->a = parse_not(p);
        p->depth--;
        return n->a ? n : NULL;
    }
    return parse_compare(p);
}

static qs_jj_node *parse_logic(parser *p, bool is_or)
{
    qs_jj_node *n = is_or ? parse_logic(p, false) : parse_not(p);
    while (n && is_name(cur(p), is_or ? "or" : "and")) {
        qs_jj_node *b = node(p, is_or ? QS_JN_OR : QS_JN_AND, cur(p)->line);
        advance(p);
        b->a = n;
        b->b = is_or ? parse_logic(p, false) : parse_not(p);
        n = b->b ? b : NULL;
    }
    return n;
}

static qs_jj_node *parse_condexpr(parser *p, bool with_condexpr);

static qs_jj_node *parse_expr(parser *p, bool with_condexpr)
{
    if (p->depth >= QS_JJ_MAX_NESTING)
        return fail(p, cur(p)->line, "expressions nest deeper than %d levels", QS_JJ_MAX_NESTING);
    p->depth++;
    qs_jj_node *n = parse_condexpr(p, with_condexpr);
    p->depth--;
    return n;
}

static qs_jj_node *parse_condexpr(parser *p, bool with_condexpr)
{
    qs_jj_node *n = parse_logic(p, true);
    while (with_condexpr && n && is_name(cur(p), "if")) {
        qs_jj_node *c = node(p, QS_JN_CONDEXPR, cur(p)->line);
        advance(p);
        c->b = n;
        c->a = parse_logic(p, true);
        if (!c->a)
            return NULL;
        if (is_name(cur(p), "else")) {
            advance(p);
            c->c = parse_expr(p, true);
            if (!c->c)
                return NULL;
        }
        n = c;
    }
    return n;
}

/* ---- statements ---- */

static bool expect_block_end(parser *p, const char *tag)
{
    if (cur(p)->kind == QS_JT_BLOCK_END) {
        advance(p);
        return true;
    }
    fail(p, cur(p)->line, "expected '%%}' to end '%s', found %s", tag, describe(cur(p)));
    return false;
}

/* Assignment target: a name, ns.attr, or a tuple of names. */
static qs_jj_node *parse_target(parser *p, bool allow_attr)
{
    int line = cur(p)->line;
    node_vec v = {0};
    for (;;) {
        if (cur(p)->kind != QS_JT_NAME)
            return fail(p, cur(p)->line, "expected a variable name, found %s", describe(cur(p)));
        qs_jj_node *n = node(p, QS_JN_NAME, cur(p)->line);
        n->name = cur(p)->s;
        advance(p);
        if (allow_attr && v.len == 0 && is_op(cur(p), ".")) {
            advance(p);
            if (cur(p)->kind != QS_JT_NAME)
                return fail(p, cur(p)->line, "expected an attribute name after '.'");
            qs_jj_node *g = node(p, QS_JN_GETATTR, cur(p)->line);
            g->a = n;
            g->name = cur(p)->s;
            advance(p);
            return g;
        }
        vec_push(p, &v, n, NULL);
        if (!is_op(cur(p), ","))
            break;
        advance(p);
    }
    if (v.len == 1)
        return v.items[0];
    qs_jj_node *t = node(p, QS_JN_TUPLE, line);
    t->items = v.items;
    t->n_items = v.len;
    return t;
}

static bool parse_body(parser *p, const char *const *stops, qs_jj_node ***body, size_t *n, const char *opener,
                       int open_line);

static const char *const IF_STOPS[] = {"elif", "else", "endif", NULL};

static qs_jj_node *parse_if(parser *p, int line)
{
    qs_jj_node *n = node(p, QS_JN_IF, line);
    n->a = parse_expr(p, true);
    if (!n->a || !expect_block_end(p, "if"))
        return NULL;
    if (!parse_body(p, IF_STOPS, &n->body, &n->n_body, "if", line))
        return NULL;
    const qs_jj_token *t = cur(p); /* the stop word; BLOCK_BEGIN was consumed */
    advance(p);
    if (!strcmp(t->s, "elif")) {
        qs_jj_node *e = parse_if(p, t->line);
        if (!e)
            return NULL;
        n->else_body = qs_jj_alloc(p->arena, sizeof *n->else_body);
        n->else_body[0] = e;
        n->n_else = 1;
        return n;
    }
    if (!strcmp(t->s, "else")) {
        static const char *const ELSE_STOPS[] = {"endif", NULL};
        if (!expect_block_end(p, "else") ||
            !parse_body(p, ELSE_STOPS, &n->else_body, &n->n_else, "if", line))
            return NULL;
        advance(p);
    }
    return expect_block_end(p, "endif") ? n : NULL;
}

static qs_jj_node *parse_for(parser *p, int line)
{
    qs_jj_node *n = node(p, QS_JN_FOR, line);
    n->target = parse_target(p, false);
    if (!n->target)
        return NULL;
    if (!is_name(cur(p), "in"))
        return fail(p, cur(p)->line, "expected 'in' in for loop, found %s", describe(cur(p)));
    advance(p);
    n->a = parse_tuple_or_expr(p, false, false);
    if (!n->a)
        return NULL;
    if (is_name(cur(p), "if")) {
        advance(p);
        n->b = parse_expr(p, true);
        if (!n->b)
            return NULL;
    }
    if (is_name(cur(p), "recursive"))
        return fail(p, cur(p)->line, "recursive for loops are not supported");
    if (!expect_block_end(p, "for"))
        return NULL;
    static const char *const FOR_STOPS[] = {"else", "endfor", NULL};
    if (!parse_body(p, FOR_STOPS, &n->body, &n->n_body, "for", line))
        return NULL;
    if (is_name(cur(p), "else")) {
        advance(p);
        static const char *const END_STOPS[] = {"endfor", NULL};
        if (!expect_block_end(p, "else") || !parse_body(p, END_STOPS, &n->else_body, &n->n_else, "for", line))
            return NULL;
    }
    advance(p);
    return expect_block_end(p, "endfor") ? n : NULL;
}

static qs_jj_node *parse_set(parser *p, int line)
{
    qs_jj_node *target = parse_target(p, true);
    if (!target)
        return NULL;
    if (is_op(cur(p), "=")) {
        advance(p);
        qs_jj_node *n = node(p, QS_JN_SET, line);
        n->target = target;
        n->a = parse_tuple_or_expr(p, true, false);
        if (!n->a || !expect_block_end(p, "set"))
            return NULL;
        return n;
    }
    if (target->kind != QS_JN_NAME)
        return fail(p, line, "block set needs a plain variable name");
    qs_jj_node *n = node(p, QS_JN_SETBLOCK, line);
    n->target = target;
    if (is_op(cur(p), "|"))
        return fail(p, cur(p)->line, "filters on block set are not supported");
    static const char *const STOPS[] = {"endset", NULL};
    if (!expect_block_end(p, "set") || !parse_body(p, STOPS, &n->body, &n->n_body, "set", line))
        return NULL;
    advance(p);
    return expect_block_end(p, "endset") ? n : NULL;
}

static qs_jj_node *parse_macro(parser *p, int line)
{
    if (cur(p)->kind != QS_JT_NAME)
        return fail(p, cur(p)->line, "expected a macro name, found %s", describe(cur(p)));
    qs_jj_node *n = node(p, QS_JN_MACRO, line);
    n->name = cur(p)->s;
    advance(p);
    if (!expect_op(p, "("))
        return NULL;
    node_vec params = {0}, defaults = {0};
    while (!is_op(cur(p), ")")) {
        if (params.len && !expect_op(p, ","))
            return NULL;
        if (cur(p)->kind != QS_JT_NAME)
            return fail(p, cur(p)->line, "expected a parameter name, found %s", describe(cur(p)));
        qs_jj_node *param = node(p, QS_JN_NAME, cur(p)->line);
        param->name = cur(p)->s;
        advance(p);
        qs_jj_node *def = NULL;
        if (is_op(cur(p), "=")) {
            advance(p);
            def = parse_expr(p, true);
            if (!def)
                return NULL;
        }
        vec_push(p, &params, param, NULL);
        vec_push(p, &defaults, def, NULL);
    }
    advance(p);
    n->items = params.items;
    n->defaults = defaults.items;
    n->n_items = params.len;
    static const char *const STOPS[] = {"endmacro", NULL};
    if (!expect_block_end(p, "macro") || !parse_body(p, STOPS, &n->body, &n->n_body, "macro", line))
        return NULL;
    advance(p);
    return expect_block_end(p, "endmacro") ? n : NULL;
}

static qs_jj_node *parse_tag(parser *p);

static qs_jj_node *parse_statement(parser *p)
{
    if (p->depth >= QS_JJ_MAX_NESTING)
        return fail(p, cur(p)->line, "tags nest deeper than %d levels", QS_JJ_MAX_NESTING);
    p->depth++;
    qs_jj_node *n = parse_tag(p);
    p->depth--;
    return n;
}

static qs_jj_node *parse_tag(parser *p)
{
    const qs_jj_token *t = cur(p);
    if (t->kind != QS_JT_NAME)
        return fail(p, t->line, "expected a tag name after '{%%', found %s", describe(t));
    int line = t->line;
    const char *tag = t->s;
    advance(p);
    if (!strcmp(tag, "if"))
        return parse_if(p, line);
    if (!strcmp(tag, "for"))
        return parse_for(p, line);
    if (!strcmp(tag, "set"))
        return parse_set(p, line);
    if (!strcmp(tag, "macro"))
        return parse_macro(p, line);
    if (!strcmp(tag, "break") || !strcmp(tag, "continue")) {
        qs_jj_node *n = node(p, tag[0] == 'b' ? QS_JN_BREAK : QS_JN_CONTINUE, line);
        return expect_block_end(p, tag) ? n : NULL;
    }
    if (!strcmp(tag, "generation")) {
        qs_jj_node *n = node(p, QS_JN_SCOPE, line);
        static const char *const STOPS[] = {"endgeneration", NULL};
        if (!expect_block_end(p, tag) || !parse_body(p, STOPS, &n->body, &n->n_body, tag, line))
            return NULL;
        advance(p);
        return expect_block_end(p, "endgeneration") ? n : NULL;
    }
    static const char *const ENDERS[] = {"endif", "endfor", "endset", "endmacro", "endgeneration", "elif", "else"};
    for (size_t k = 0; k < sizeof ENDERS / sizeof ENDERS[0]; k++)
        if (!strcmp(tag, ENDERS[k]))
            return fail(p, line, "unexpected '%s' tag with no open block for it", tag);
    return fail(p, line, "unknown or unsupported tag '%s'", tag);
}

/* Parses statements until a block whose tag is in stops (left current, its '{%' consumed) or EOF. */
static bool parse_body(parser *p, const char *const *stops, qs_jj_node ***body, size_t *n, const char *opener,
                       int open_line)
{
    node_vec v = {0};
    for (;;) {
        const qs_jj_token *t = cur(p);
        if (t->kind == QS_JT_EOF) {
            if (stops) {
                size_t last = 0;
                while (stops[last + 1])
                    last++;
                fail(p, open_line, "unclosed '%s' tag (no '{%% %s %%}' before the end of the template)", opener,
                     stops[last]);
                return false;
            }
            break;
        }
        if (t->kind == QS_JT_TEXT) {
            qs_jj_node *s = node(p, QS_JN_TEXT, t->line);
            s->value = qs_jv_str(p->arena, t->s, t->len);
            vec_push(p, &v, s, NULL);
            advance(p);
        } else if (t->kind == QS_JT_VAR_BEGIN) {
            advance(p);
            qs_jj_node *s = node(p, QS_JN_OUTPUT, t->line);
            s->a = parse_tuple_or_expr(p, true, false);
            if (!s->a)
                return false;
            if (cur(p)->kind != QS_JT_VAR_END) {
                fail(p, cur(p)->line, "expected '}}', found %s", describe(cur(p)));
                return false;
            }
            advance(p);
            vec_push(p, &v, s, NULL);
        } else if (t->kind == QS_JT_BLOCK_BEGIN) {
            const qs_jj_token *tag = peek(p, 1);
            if (stops && tag->kind == QS_JT_NAME)
                for (size_t k = 0; stops[k]; k++)
                    if (!strcmp(tag->s, stops[k])) {
                        advance(p);
                        *body = v.items;
                        *n = v.len;
                        return true;
                    }
            advance(p);
            qs_jj_node *s = parse_statement(p);
            if (!s)
                return false;
            vec_push(p, &v, s, NULL);
        } else {
            fail(p, t->line, "unexpected %s", describe(t));
            return false;
        }
    }
    *body = v.items;
    *n = v.len;
    return true;
}

int qs_jj_parse(qs_jj_arena *a, const qs_jj_token *toks, size_t n, const char *name, qs_jj_node ***body,
                size_t *n_body, qs_err *err)
{
    parser p = {.arena = a, .t = toks, .n = n, .name = name, .err = err};
    if (!parse_body(&p, NULL, body, n_body, NULL, 0))
        return -1;
    return 0;
}
