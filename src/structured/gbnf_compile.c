/* gbnf_compile.c — GBNF, the grammar format of llama.cpp (grammars/README.md there), compiled
 * into grammar rules. Supported: `name ::= alternatives` rules (names of letters, digits, '-'
 * and '_'; the start rule is `root`), string literals "..." and character classes [...] / [^...]
 * with the escapes \n \r \t \\ \" \] \- \xHH \uHHHH \UHHHHHHHH, '.' (any character), groups
 * ( ... ), the quantifiers * + ? {m} {m,} {m,n}, '|' alternation (also continuing on the next line
 * when that line starts with '|'), '#' comments, and newlines inside parentheses. Not supported,
 * refused by name: token references <[id]> / <name>, left-recursive rules, a rule defined twice.
 * Hand-written because no C library parses GBNF outside llama.cpp itself. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "structured/grammar.h"
#include "util/grow.h"

#define MAX_NEST 200
#define MAX_REPEAT 10000

typedef struct named {
    char *name;
    int rule;
    bool defined;
} named;

typedef struct gp {
    qs_gbuild *b;
    const char *s;
    size_t n, i;
    qs_err *err;
    bool failed;
    named *names;
    int n_names, cap_names;
    int line;
    int depth;
} gp;

static int fail(gp *p, const char *fmt, const char *arg)
{
    if (!p->failed) {
        char buf[256];
        snprintf(buf, sizeof buf, fmt, arg);
        int line = 1;
        for (size_t k = 0; k < p->i && k < p->n; k++)
            line += p->s[k] == '\n';
        qs_errf(p->err, "grammar: %s (line %d)", buf, line);
    }
    p->failed = true;
    return -1;
}

static char peek(const gp *p) { return p->i < p->n ? p->s[p->i] : 0; }
static bool name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

/* Skips spaces, tabs and comments; newlines too when nested. */
static void skip_space(gp *p, bool newlines)
{
    while (p->i < p->n) {
        char c = p->s[p->i];
        if (c == ' ' || c == '\t' || (newlines && (c == '\n' || c == '\r'))) {
            p->i++;
        } else if (c == '#') {
            while (p->i < p->n && p->s[p->i] != '\n')
                p->i++;
        } else {
            break;
        }
    }
}

static int rule_for(gp *p, const char *name, size_t len)
{
    for (int k = 0; k < p->n_names; k++)
        if (strlen(p->names[k].name) == len && !memcmp(p->names[k].name, name, len))
            return k;
    named *q = qs_grow(p->names, &p->cap_names, p->n_names + 1, 16, sizeof *q);
    if (!q)
        return fail(p, "%s", "out of memory");
    p->names = q;
    char *copy = strndup(name, len);
    if (!copy)
        return fail(p, "%s", "out of memory");
    p->names[p->n_names] = (named){copy, qs_gb_rule(p->b, copy), false};
    return p->n_names++;
}

static int hexv(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* One (possibly escaped) code point inside a literal or class. */
static bool read_char(gp *p, uint32_t *cp)
{
    if (p->i >= p->n)
        return fail(p, "%s", "unexpected end of grammar"), false;
    unsigned char c = (unsigned char)p->s[p->i];
    if (c == '\\') {
        p->i++;
        char e = peek(p);
        p->i++;
        switch (e) {
        case 'n': *cp = '\n'; return true;
        case 'r': *cp = '\r'; return true;
        case 't': *cp = '\t'; return true;
        case '\\': case '"': case ']': case '[': case '-': case '\'': case '^': *cp = (uint32_t)e; return true;
        case 'x': case 'u': case 'U': {
            int digits = e == 'x' ? 2 : e == 'u' ? 4 : 8;
            uint32_t v = 0;
            for (int k = 0; k < digits; k++) {
                int h = hexv(peek(p));
                if (h < 0)
                    return fail(p, "%s", "bad hex escape"), false;
                v = v * 16 + (uint32_t)h;
                p->i++;
            }
            *cp = v;
            return true;
        }
        default: {
            char what[3] = {'\\', e, 0};
            return fail(p, "unknown escape '%s'", what), false;
        }
        }
    }
    int len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    if (p->i + (size_t)len > p->n || (c >= 0x80 && c < 0xC0) || c >= 0xF8)
        return fail(p, "%s", "invalid UTF-8"), false;
    uint32_t v = len == 1 ? c : len == 2 ? c & 0x1F : len == 3 ? c & 0x0F : c & 0x07;
    for (int k = 1; k < len; k++)
        v = (v << 6) | ((unsigned char)p->s[p->i + (size_t)k] & 0x3F);
    p->i += (size_t)len;
    *cp = v;
    return true;
}

static int parse_alternates(gp *p, int rule, bool nested);

static bool parse_count(gp *p, int *v)
{
    if (peek(p) < '0' || peek(p) > '9')
        return false;
    long x = 0;
    while (peek(p) >= '0' && peek(p) <= '9') {
        x = x * 10 + (peek(p) - '0');
        if (x > MAX_REPEAT)
            return fail(p, "%s", "repetition count above 10000"), false;
        p->i++;
    }
    *v = (int)x;
    return true;
}

static int parse_sequence(gp *p, qs_gseq *seq, bool nested)
{
    for (;;) {
        skip_space(p, nested);
        char c = peek(p);
        qs_gelem el;
        if (c == '"') {
            p->i++;
            qs_gseq lit = {0};
            while (peek(p) != '"') {
                uint32_t cp;
                if (!p->i || p->i >= p->n || !read_char(p, &cp)) {
                    qs_gseq_free(&lit);
                    return p->failed ? -1 : fail(p, "%s", "unterminated string literal");
                }
                qs_cprange one = {cp, cp};
                qs_gelem e = qs_gb_codepoints(p->b, &one, 1, false, NULL);
                qs_gelem tmp[1] = {e};
                qs_gseq t = {tmp, 1, 1};
                qs_gseq_append(p->b, &lit, &t);
            }
            p->i++;
            int r = qs_gb_rule(p->b, NULL);
            qs_gb_add_alt(p->b, r, &lit);
            qs_gseq_free(&lit);
            el = qs_gel_rule(r);
        } else if (c == '[') {
            p->i++;
            bool neg = false;
            if (peek(p) == '^') {
                neg = true;
                p->i++;
            }
            qs_cprange *rg = NULL;
            int n = 0, cap = 0;
            while (peek(p) != ']') {
                uint32_t lo, hi;
                if (p->i >= p->n || !read_char(p, &lo)) {
                    free(rg);
                    return p->failed ? -1 : fail(p, "%s", "unterminated character class");
                }
                hi = lo;
                if (peek(p) == '-' && p->i + 1 < p->n && p->s[p->i + 1] != ']') {
                    p->i++;
                    if (!read_char(p, &hi)) {
                        free(rg);
                        return -1;
                    }
                }
                qs_cprange *q = qs_grow(rg, &cap, n + 1, 8, sizeof *q);
                if (!q) {
                    free(rg);
                    return fail(p, "%s", "out of memory");
                }
                rg = q;
                rg[n++] = (qs_cprange){lo, hi};
            }
            p->i++;
            el = qs_gb_codepoints(p->b, rg, n, neg, NULL);
            free(rg);
        } else if (c == '.') {
            p->i++;
            el = qs_gb_codepoints(p->b, NULL, 0, true, NULL);
        } else if (c == '(') {
            p->i++;
            if (++p->depth > MAX_NEST)
                return fail(p, "%s", "groups nested too deeply");
            int r = qs_gb_rule(p->b, NULL);
            if (parse_alternates(p, r, true))
                return -1;
            p->depth--;
            skip_space(p, true);
            if (peek(p) != ')')
                return fail(p, "%s", "expected ')'");
            p->i++;
            el = qs_gel_rule(r);
        } else if (c == '<') {
            return fail(p, "%s", "token references <...> are not supported");
        } else if (name_char(c)) {
            size_t start = p->i;
            while (name_char(peek(p)))
                p->i++;
            size_t save = p->i;
            skip_space(p, false);
            if (p->n - p->i >= 3 && !memcmp(p->s + p->i, "::=", 3)) {
                p->i = start; /* the next rule's head: this sequence is over */
                return 0;
            }
            p->i = save;
            int k = rule_for(p, p->s + start, p->i - start);
            if (k < 0)
                return -1;
            el = qs_gel_rule(p->names[k].rule);
        } else {
            return 0; /* end of sequence: '|', ')', newline, end of text, or an error the caller reports */
        }
        /* quantifier */
        skip_space(p, nested);
        c = peek(p);
        int min = 1, max = 1;
        if (c == '*' || c == '+' || c == '?') {
            p->i++;
            min = c == '+';
            max = c == '?' ? 1 : -1;
        } else if (c == '{') {
            p->i++;
            skip_space(p, false);
            if (!parse_count(p, &min))
                return p->failed ? -1 : fail(p, "%s", "bad {m,n} repetition");
            skip_space(p, false);
            max = min;
            if (peek(p) == ',') {
                p->i++;
                skip_space(p, false);
                max = -1;
                if (peek(p) != '}' && !parse_count(p, &max))
                    return p->failed ? -1 : fail(p, "%s", "bad {m,n} repetition");
                skip_space(p, false);
            }
            if (peek(p) != '}' || (max >= 0 && max < min))
                return fail(p, "%s", "bad {m,n} repetition");
            p->i++;
        }
        if (min == 1 && max == 1) {
            qs_gelem tmp[1] = {el};
            qs_gseq t = {tmp, 1, 1};
            qs_gseq_append(p->b, seq, &t);
        } else {
            qs_gseq_rule(p->b, seq, qs_gb_repeat(p->b, el, min, max));
        }
    }
}

static int parse_alternates(gp *p, int rule, bool nested)
{
    qs_gseq seq = {0};
    for (;;) {
        seq.n = 0;
        if (parse_sequence(p, &seq, nested)) {
            qs_gseq_free(&seq);
            return -1;
        }
        qs_gb_add_alt(p->b, rule, &seq);
        skip_space(p, nested);
        size_t save = p->i;
        if (!nested) { /* a line starting with '|' continues the rule */
            skip_space(p, true);
            if (peek(p) != '|')
                p->i = save;
        }
        if (peek(p) != '|')
            break;
        p->i++;
        skip_space(p, true);
    }
    qs_gseq_free(&seq);
    return 0;
}

int qs_gbnf_compile(qs_gbuild *b, const char *text, size_t len, qs_err *err)
{
    gp p = {.b = b, .s = text, .n = len, .err = err};
    int root = -1;
    for (;;) {
        skip_space(&p, true);
        if (p.i >= p.n || p.failed)
            break;
        size_t start = p.i;
        while (name_char(peek(&p)))
            p.i++;
        if (p.i == start) {
            fail(&p, "%s", "expected a rule name");
            break;
        }
        size_t name_end = p.i;
        skip_space(&p, false);
        if (p.n - p.i < 3 || memcmp(p.s + p.i, "::=", 3)) {
            fail(&p, "%s", "expected '::=' after the rule name");
            break;
        }
        p.i += 3;
        int k = rule_for(&p, p.s + start, name_end - start);
        if (k < 0)
            break;
        if (p.names[k].defined) {
            fail(&p, "rule '%s' is defined twice", p.names[k].name);
            break;
        }
        p.names[k].defined = true;
        if (parse_alternates(&p, p.names[k].rule, false))
            break;
        skip_space(&p, false);
        if (p.i < p.n && peek(&p) != '\n' && peek(&p) != '\r') {
            char what[2] = {peek(&p), 0};
            fail(&p, "unexpected '%s'", what);
            break;
        }
    }
    if (!p.failed) {
        for (int k = 0; k < p.n_names; k++)
            if (!p.names[k].defined) {
                fail(&p, "rule '%s' is used but never defined", p.names[k].name);
                break;
            }
    }
    if (!p.failed) {
        for (int k = 0; k < p.n_names; k++)
            if (!strcmp(p.names[k].name, "root"))
                root = p.names[k].rule;
        if (root < 0)
            fail(&p, "%s", "no 'root' rule");
    }
    for (int k = 0; k < p.n_names; k++)
        free(p.names[k].name);
    free(p.names);
    return p.failed ? -1 : root;
}
