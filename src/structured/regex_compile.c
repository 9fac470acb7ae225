/* regex_compile.c — regular expressions, in the syntax vLLM passes to its backends (Python `re`
 * style), compiled into grammar rules: literals (UTF-8), '.', classes [a-z] [^...] with escapes
 * \d \w \s \D \W \S, quantifiers * + ? {m} {m,} {m,n} (lazy and possessive suffixes accepted:
 * they do not change which whole strings match), alternation, groups (capturing, (?:...),
 * named (?P<n>...)), and ^ / $ at the very ends (the match is anchored anyway). Lookaround,
 * backreferences and other anchors are refused with a message naming them. Hand-written: no
 * packaged regex library turns a pattern into a grammar a token mask can be computed from. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "structured/grammar.h"
#include "util/grow.h"

#define MAX_REPEAT 10000
#define MAX_DEPTH 200

typedef struct rx {
    qs_gbuild *b;
    const char *s;
    size_t n, i;
    const qs_regex_flags *flags;
    qs_byteset json_excluded;
    qs_err *err;
    bool failed;
    int depth;
} rx;

static int fail(rx *r, const char *fmt, const char *what)
{
    if (!r->failed) {
        char buf[200];
        snprintf(buf, sizeof buf, fmt, what);
        qs_errf(r->err, "regex: %s (at offset %zu)", buf, r->i);
    }
    r->failed = true;
    return -1;
}

static bool eof(const rx *r) { return r->i >= r->n; }
static char peek(const rx *r) { return r->i < r->n ? r->s[r->i] : 0; }

/* Decodes one UTF-8 code point of the pattern. */
static uint32_t next_cp(rx *r)
{
    const unsigned char *p = (const unsigned char *)r->s + r->i;
    size_t left = r->n - r->i;
    unsigned c = p[0];
    int len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    if ((size_t)len > left || c >= 0xF8 || (c >= 0x80 && c < 0xC0)) {
        fail(r, "%s", "invalid UTF-8 in the pattern");
        r->i = r->n;
        return 0;
    }
    uint32_t cp = len == 1 ? c : len == 2 ? c & 0x1F : len == 3 ? c & 0x0F : c & 0x07;
    for (int k = 1; k < len; k++)
        cp = (cp << 6) | (p[k] & 0x3F);
    r->i += (size_t)len;
    return cp;
}

static const qs_byteset *excluded(const rx *r) { return r->flags && r->flags->json_string ? &r->json_excluded : NULL; }

static qs_gelem ranges_elem(rx *r, const qs_cprange *rg, int n, bool neg)
{
    return qs_gb_codepoints(r->b, rg, n, neg, excluded(r));
}

typedef struct cpset {
    qs_cprange *r;
    int n, cap;
} cpset;

static void cp_add(rx *r, cpset *s, uint32_t lo, uint32_t hi)
{
    qs_cprange *p = qs_grow(s->r, &s->cap, s->n + 1, 8, sizeof *p);
    if (!p) {
        r->b->oom = true;
        return;
    }
    s->r = p;
    s->r[s->n++] = (qs_cprange){lo, hi};
}

/* \d \w \s and their negations, added to s (negated ones as complements). */
static bool class_escape(rx *r, cpset *s, char c)
{
    cpset tmp = {0};
    cpset *t = (c >= 'A' && c <= 'Z') ? &tmp : s;
    switch (c) {
    case 'd': case 'D':
        cp_add(r, t, '0', '9');
        break;
    case 'w': case 'W':
        cp_add(r, t, '0', '9');
        cp_add(r, t, 'A', 'Z');
        cp_add(r, t, 'a', 'z');
        cp_add(r, t, '_', '_');
        break;
    case 's': case 'S':
        cp_add(r, t, ' ', ' ');
        cp_add(r, t, '\t', '\r'); /* \t \n \v \f \r */
        break;
    default:
        return false;
    }
    if (t == &tmp) { /* complement of tmp */
        uint32_t next = 0;
        for (int pass = 0; pass < 2; pass++) /* tmp is sorted by construction except \w: sort cheaply */
            for (int i = 0; i + 1 < tmp.n; i++)
                if (tmp.r[i].lo > tmp.r[i + 1].lo) {
                    qs_cprange x = tmp.r[i];
                    tmp.r[i] = tmp.r[i + 1];
                    tmp.r[i + 1] = x;
                }
        for (int i = 0; i < tmp.n; i++) {
            if (tmp.r[i].lo > next)
                cp_add(r, s, next, tmp.r[i].lo - 1);
            next = tmp.r[i].hi + 1;
        }
        cp_add(r, s, next, 0x10FFFF);
        free(tmp.r);
    }
    return true;
}

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* After a backslash: a single code point escape. Returns false (and fails) if unknown. */
static bool char_escape(rx *r, char c, uint32_t *cp)
{
    switch (c) {
    case 'n': *cp = '\n'; return true;
    case 't': *cp = '\t'; return true;
    case 'r': *cp = '\r'; return true;
    case 'f': *cp = '\f'; return true;
    case 'v': *cp = '\v'; return true;
    case '0': *cp = 0; return true;
    case 'x': case 'u': case 'U': {
        int digits = c == 'x' ? 2 : c == 'u' ? 4 : 8;
        uint32_t v = 0;
        for (int k = 0; k < digits; k++) {
            int h = eof(r) ? -1 : hexval(peek(r));
            if (h < 0) {
                fail(r, "bad \\%s escape", c == 'x' ? "x" : c == 'u' ? "u" : "U");
                return false;
            }
            v = v * 16 + (uint32_t)h;
            r->i++;
        }
        *cp = v;
        return true;
    }
    default:
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '1' && c <= '9')) {
            char what[3] = {'\\', c, 0};
            fail(r, "unsupported escape '%s'", what);
            return false;
        }
        *cp = (unsigned char)c; /* escaped punctuation is itself */
        return true;
    }
}

static qs_gelem parse_class(rx *r)
{
    cpset s = {0};
    bool neg = false;
    if (peek(r) == '^') {
        neg = true;
        r->i++;
    }
    bool first = true;
    while (!r->failed) {
        if (eof(r)) {
            fail(r, "%s", "unterminated character class");
            break;
        }
        if (peek(r) == ']' && !first) {
            r->i++;
            break;
        }
        first = false;
        if (peek(r) == '[' && r->i + 1 < r->n && r->s[r->i + 1] == ':') {
            fail(r, "%s", "POSIX classes [:name:] are not supported");
            break;
        }
        uint32_t lo;
        if (peek(r) == '\\') {
            r->i++;
            if (eof(r)) {
                fail(r, "%s", "pattern ends with a backslash");
                break;
            }
            char c = r->s[r->i++];
            if (class_escape(r, &s, c))
                continue;
            if (c == 'b') {
                lo = '\b';
            } else if (!char_escape(r, c, &lo)) {
                break;
            }
        } else {
            lo = next_cp(r);
        }
        uint32_t hi = lo;
        if (peek(r) == '-' && r->i + 1 < r->n && r->s[r->i + 1] != ']') {
            r->i++;
            if (peek(r) == '\\') {
                r->i++;
                if (eof(r)) {
                    fail(r, "%s", "pattern ends with a backslash");
                    break;
                }
                char c = r->s[r->i++];
                if (!char_escape(r, c, &hi))
                    break;
            } else {
                hi = next_cp(r);
            }
            if (hi < lo) {
                fail(r, "%s", "class range out of order");
                break;
            }
        }
        cp_add(r, &s, lo, hi);
    }
    qs_gelem el = r->failed ? qs_gel_rule(0) : ranges_elem(r, s.r, s.n, neg);
    free(s.r);
    return el;
}

static int parse_alternation(rx *r);

/* One atom: returns the element, sets *ok false on failure / at a non-atom. */
static bool parse_atom(rx *r, qs_gelem *out)
{
    char c = peek(r);
    if (c == '(') {
        r->i++;
        if (peek(r) == '?') {
            r->i++;
            if (peek(r) == ':') {
                r->i++;
            } else if (peek(r) == 'P' && r->i + 1 < r->n && r->s[r->i + 1] == '<') {
                while (!eof(r) && peek(r) != '>')
                    r->i++;
                if (eof(r))
                    return fail(r, "%s", "unterminated group name"), false;
                r->i++;
            } else if (peek(r) == '<' && r->i + 1 < r->n && r->s[r->i + 1] != '=' && r->s[r->i + 1] != '!') {
                while (!eof(r) && peek(r) != '>')
                    r->i++;
                if (eof(r))
                    return fail(r, "%s", "unterminated group name"), false;
                r->i++;
            } else {
                const char *what = peek(r) == '=' ? "lookahead (?=...)" : peek(r) == '!' ? "negative lookahead (?!...)"
                                   : peek(r) == '<' ? "lookbehind (?<...)" : "group flags (?...)";
                return fail(r, "unsupported construct: %s", what), false;
            }
        }
        if (++r->depth > MAX_DEPTH)
            return fail(r, "%s", "groups nested too deeply"), false;
        int rule = parse_alternation(r);
        r->depth--;
        if (rule < 0)
            return false;
        if (peek(r) != ')')
            return fail(r, "%s", "missing ')'"), false;
        r->i++;
        *out = qs_gel_rule(rule);
        return true;
    }
    if (c == '[') {
        r->i++;
        *out = parse_class(r);
        return !r->failed;
    }
    if (c == '.') {
        r->i++;
        qs_cprange nl = {'\n', '\n'};
        *out = ranges_elem(r, &nl, 1, true);
        return true;
    }
    if (c == '\\') {
        r->i++;
        if (eof(r))
            return fail(r, "%s", "pattern ends with a backslash"), false;
        char e = r->s[r->i++];
        cpset s = {0};
        if (class_escape(r, &s, e)) {
            *out = ranges_elem(r, s.r, s.n, false);
            free(s.r);
            return true;
        }
        if (e == 'b' || e == 'B' || e == 'A' || e == 'Z' || e == 'z' || e == 'G') {
            char what[3] = {'\\', e, 0};
            return fail(r, "unsupported anchor '%s'", what), false;
        }
        uint32_t cp;
        if (!char_escape(r, e, &cp))
            return false;
        qs_cprange one = {cp, cp};
        *out = ranges_elem(r, &one, 1, false);
        return true;
    }
    if (c == '*' || c == '+' || c == '?' || c == '{')
        return fail(r, "nothing to repeat before '%s'", c == '*' ? "*" : c == '+' ? "+" : c == '?' ? "?" : "{"), false;
    uint32_t cp = next_cp(r);
    if (r->failed)
        return false;
    qs_cprange one = {cp, cp};
    *out = ranges_elem(r, &one, 1, false);
    return true;
}

static bool parse_count(rx *r, int *v)
{
    if (eof(r) || peek(r) < '0' || peek(r) > '9')
        return false;
    long x = 0;
    while (!eof(r) && peek(r) >= '0' && peek(r) <= '9') {
        x = x * 10 + (peek(r) - '0');
        if (x > MAX_REPEAT) {
            fail(r, "%s", "repetition count above 10000");
            return false;
        }
        r->i++;
    }
    *v = (int)x;
    return true;
}

/* Quantifier after an atom, if any: fills min/max (max -1 = unbounded). */
static bool parse_quantifier(rx *r, int *min, int *max)
{
    char c = peek(r);
    if (c == '*' || c == '+' || c == '?') {
        r->i++;
        *min = c == '+';
        *max = c == '?' ? 1 : -1;
    } else if (c == '{') {
        size_t save = r->i;
        r->i++;
        int lo = 0, hi = -1;
        if (!parse_count(r, &lo)) {
            if (r->failed)
                return false;
            r->i = save; /* a literal '{' as Python treats it */
            return false;
        }
        if (peek(r) == ',') {
            r->i++;
            if (peek(r) != '}' && !parse_count(r, &hi)) {
                if (!r->failed)
                    fail(r, "%s", "bad {m,n} quantifier");
                return false;
            }
        } else {
            hi = lo;
        }
        if (peek(r) != '}') {
            fail(r, "%s", "bad {m,n} quantifier");
            return false;
        }
        r->i++;
        if (hi >= 0 && hi < lo) {
            fail(r, "%s", "{m,n} with n < m");
            return false;
        }
        *min = lo;
        *max = hi;
    } else {
        return false;
    }
    if (peek(r) == '?' || peek(r) == '+') /* lazy / possessive: same set of full matches */
        r->i++;
    return true;
}

static int parse_alternation(rx *r)
{
    int rule = qs_gb_rule(r->b, NULL);
    qs_gseq seq = {0};
    for (;;) {
        seq.n = 0;
        while (!eof(r) && peek(r) != '|' && peek(r) != ')' && !r->failed) {
            if (peek(r) == '^' && r->i == 0) {
                r->i++;
                continue;
            }
            if (peek(r) == '$' && r->i + 1 == r->n) {
                r->i++;
                continue;
            }
            if (peek(r) == '^' || peek(r) == '$') {
                fail(r, "unsupported anchor '%s' inside the pattern", peek(r) == '^' ? "^" : "$");
                break;
            }
            qs_gelem atom;
            if (!parse_atom(r, &atom))
                break;
            int min, max;
            if (parse_quantifier(r, &min, &max)) {
                if (peek(r) == '*' || peek(r) == '+' || peek(r) == '{') {
                    fail(r, "%s", "multiple repeat");
                    break;
                }
                int rep = qs_gb_repeat(r->b, atom, min, max);
                qs_gseq_rule(r->b, &seq, rep);
            } else if (!r->failed) {
                qs_gelem tmp[1] = {atom};
                qs_gseq one = {tmp, 1, 1};
                qs_gseq_append(r->b, &seq, &one);
            }
        }
        if (r->failed)
            break;
        qs_gb_add_alt(r->b, rule, &seq);
        if (peek(r) != '|')
            break;
        r->i++;
    }
    qs_gseq_free(&seq);
    return r->failed ? -1 : rule;
}

int qs_so_regex_compile(qs_gbuild *b, const char *re, size_t len, const qs_regex_flags *flags, qs_err *err)
{
    rx r = {.b = b, .s = re, .n = len, .flags = flags, .err = err};
    qs_byteset_add_range(&r.json_excluded, 0, 0x1F);
    qs_byteset_add(&r.json_excluded, '"');
    qs_byteset_add(&r.json_excluded, '\\');
    int rule = parse_alternation(&r);
    if (rule >= 0 && !eof(&r)) {
        fail(&r, "%s", "unbalanced ')'");
        rule = -1;
    }
    return r.failed ? -1 : rule;
}
