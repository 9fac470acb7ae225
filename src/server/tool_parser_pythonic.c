/* tool_parser_pythonic.c — pythonic tool calls (vLLM's pythonic / llama4_pythonic parsers): the
 * whole output, stripped, is a Python list of calls with keyword arguments,
 *   [get_weather(city="Paris", days=3), get_time()]
 * optionally wrapped in Llama 4's <|python_start|> ... <|python_end|>. Argument values are Python
 * literals (strings, numbers, True/False/None, lists, tuples, dicts), written out as the JSON
 * object json.dumps would make of them. Anything else is content. While streaming, a call is
 * announced once its name is complete and its arguments arrive whole when its ')' is read:
 * Python literal text is not JSON, so it cannot be passed through a piece at a time. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/tool_calls.h"

#define PY_START "<|python_start|>"
#define PY_END "<|python_end|>"

typedef struct {
    char *buf;
    size_t len, cap;
} sbuf;

static int put(sbuf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *p = realloc(b->buf, cap);
        if (!p)
            return -1;
        b->buf = p;
        b->cap = cap;
    }
    memcpy(b->buf + b->len, s, n);
    b->len += n;
    b->buf[b->len] = '\0';
    return 0;
}
static int puts_(sbuf *b, const char *s) { return put(b, s, strlen(s)); }

typedef struct {
    const char *s;
    size_t len, i;
} cursor;

static void skip_ws(cursor *c)
{
    while (c->i < c->len && (c->s[c->i] && strchr(" \t\r\n", c->s[c->i])))
        c->i++;
}
static bool at_end(const cursor *c) { return c->i >= c->len; }
static bool ident_char(char ch, bool first)
{
    return ch == '_' || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (!first && ch >= '0' && ch <= '9');
}

/* Result codes: 1 parsed, 0 text ended (partial), -1 not pythonic. */
static int literal(cursor *c, sbuf *out);

static void put_codepoint(sbuf *out, unsigned cp)
{
    char u[8];
    if (cp < 0x20 || cp == '"' || cp == '\\') {
        const char *esc = cp == '"' ? "\\\"" : cp == '\\' ? "\\\\" : cp == '\n' ? "\\n" : cp == '\r' ? "\\r"
                          : cp == '\t' ? "\\t" : cp == '\b' ? "\\b" : cp == '\f' ? "\\f" : NULL;
        if (esc) {
            puts_(out, esc);
        } else {
            snprintf(u, sizeof u, "\\u%04x", cp);
            puts_(out, u);
        }
        return;
    }
    size_t n;
    if (cp < 0x80) {
        u[0] = (char)cp, n = 1;
    } else if (cp < 0x800) {
        u[0] = (char)(0xC0 | (cp >> 6)), u[1] = (char)(0x80 | (cp & 0x3F)), n = 2;
    } else if (cp < 0x10000) {
        u[0] = (char)(0xE0 | (cp >> 12)), u[1] = (char)(0x80 | ((cp >> 6) & 0x3F)), u[2] = (char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        u[0] = (char)(0xF0 | (cp >> 18)), u[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        u[2] = (char)(0x80 | ((cp >> 6) & 0x3F)), u[3] = (char)(0x80 | (cp & 0x3F)), n = 4;
    }
    put(out, u, n);
}

static int hex_value(const char *s, int n, unsigned *v)
{
    *v = 0;
    for (int k = 0; k < n; k++) {
        char h = s[k];
        int d = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
        if (d < 0)
            return -1;
        *v = *v * 16 + (unsigned)d;
    }
    return 0;
}

static int string_lit(cursor *c, sbuf *out)
{
    char q = c->s[c->i++];
    puts_(out, "\"");
    while (c->i < c->len) {
        char ch = c->s[c->i++];
        if (ch == q) {
            puts_(out, "\"");
            return 1;
        }
        if (ch == '\n')
            return -1;
        if (ch != '\\') {
            if (ch == '"' || (unsigned char)ch < 0x20)
                put_codepoint(out, (unsigned char)ch);
            else
                put(out, &ch, 1);
            continue;
        }
        if (c->i >= c->len)
            return 0;
        char e = c->s[c->i++];
        int hex = e == 'x' ? 2 : e == 'u' ? 4 : e == 'U' ? 8 : 0;
        if (hex) {
            unsigned cp;
            if (c->i + (size_t)hex > c->len)
                return 0;
            if (hex_value(c->s + c->i, hex, &cp) || cp > 0x10FFFF)
                return -1;
            c->i += (size_t)hex;
            put_codepoint(out, cp);
            continue;
        }
        static const char ESC[] = "nrtbf\\'\"";
        static const unsigned CP[] = {'\n', '\r', '\t', '\b', '\f', '\\', '\'', '"'};
        const char *map = e ? strchr(ESC, e) : NULL;
        if (!map)
            return -1;
        put_codepoint(out, CP[map - ESC]);
    }
    return 0;
}

/* Items until the closing bracket; dict = key: value pairs. */
static int sequence(cursor *c, sbuf *out, char close, bool dict)
{
    c->i++;
    puts_(out, dict ? "{" : "[");
    bool first = true;
    for (;;) {
        skip_ws(c);
        if (at_end(c))
            return 0;
        if (c->s[c->i] == close) {
            c->i++;
            puts_(out, dict ? "}" : "]");
            return 1;
        }
        if (!first) {
            if (c->s[c->i] != ',')
                return -1;
            c->i++;
            skip_ws(c);
            if (at_end(c))
                return 0;
            if (c->s[c->i] == close)
                continue; /* trailing comma */
            puts_(out, ", ");
        }
        first = false;
        if (dict) {
            if (c->s[c->i] != '"' && c->s[c->i] != '\'')
                return -1; /* JSON keys are strings */
            int rc = string_lit(c, out);
            if (rc <= 0)
                return rc;
            skip_ws(c);
            if (at_end(c))
                return 0;
            if (c->s[c->i++] != ':')
                return -1;
            puts_(out, ": ");
        }
        int rc = literal(c, out);
        if (rc <= 0)
            return rc;
    }
}

static int literal(cursor *c, sbuf *out)
{
    skip_ws(c);
    if (at_end(c))
        return 0;
    char ch = c->s[c->i];
    if (ch == '"' || ch == '\'')
        return string_lit(c, out);
    if (ch == '[')
        return sequence(c, out, ']', false);
    if (ch == '(')
        return sequence(c, out, ')', false);
    if (ch == '{')
        return sequence(c, out, '}', true);
    size_t b = c->i;
    while (c->i < c->len && (ident_char(c->s[c->i], false) || (c->s[c->i] && strchr("+-.", c->s[c->i]))))
        c->i++;
    if (c->i == c->len)
        return 0; /* the number or name may go on */
    size_t n = c->i - b;
    const char *w = c->s + b;
    if (n == 4 && !memcmp(w, "True", 4))
        return puts_(out, "true") ? -1 : 1;
    if (n == 5 && !memcmp(w, "False", 5))
        return puts_(out, "false") ? -1 : 1;
    if (n == 4 && !memcmp(w, "None", 4))
        return puts_(out, "null") ? -1 : 1;
    char *num = strndup(w, n), *end = NULL;
    bool ok = num && n > 0 && (strtod(num, &end), *end == '\0') && !strpbrk(num, "xXnN_");
    free(num);
    if (!ok)
        return -1;
    return put(out, w, n) ? -1 : 1;
}

/* name(kw=value, ...); 1 complete, 0 partial, -1 not a call. */
static int call(cursor *c, qs_tool_parse *p)
{
    size_t b = c->i;
    while (c->i < c->len && ident_char(c->s[c->i], c->i == b))
        c->i++;
    if (at_end(c))
        return 0;
    if (c->i == b || c->s[c->i] != '(')
        return -1;
    qs_tool_call_text *tc = qs_tp_add_call(p);
    if (!tc || qs_tp_set_name(tc, c->s + b, c->i - b))
        return -1;
    c->i++;
    sbuf args = {0};
    puts_(&args, "{");
    bool first = true;
    int rc;
    for (;;) {
        skip_ws(c);
        if (at_end(c)) {
            rc = 0;
            break;
        }
        if (c->s[c->i] == ')') {
            c->i++;
            puts_(&args, "}");
            if (!args.buf)
                return -1;
            free(tc->args);
            tc->args = args.buf;
            tc->args_len = args.len;
            tc->args_done = true;
            return 1;
        }
        if (!first) {
            if (c->s[c->i] != ',') {
                rc = -1;
                break;
            }
            c->i++;
            skip_ws(c);
            if (at_end(c)) {
                rc = 0;
                break;
            }
            if (c->s[c->i] == ')')
                continue;
            puts_(&args, ", ");
        }
        first = false;
        size_t k = c->i;
        while (c->i < c->len && ident_char(c->s[c->i], c->i == k))
            c->i++;
        skip_ws(c);
        if (at_end(c)) {
            rc = 0;
            break;
        }
        if (c->i == k || c->s[c->i] != '=') {
            rc = -1;
            break;
        }
        size_t key_end = c->i;
        while (key_end > k && (c->s[key_end - 1] && strchr(" \t\r\n", c->s[key_end - 1])))
            key_end--;
        puts_(&args, "\"");
        put(&args, c->s + k, key_end - k);
        puts_(&args, "\": ");
        c->i++;
        rc = literal(c, &args);
        if (rc <= 0)
            break;
    }
    free(args.buf);
    return rc;
}

int qs_tool_parse_pythonic(const char *text, size_t len, bool final, qs_tool_parse *out)
{
    qs_tool_parse_reset(out);
    cursor c = {text, len, 0};
    skip_ws(&c);
    size_t tag = strlen(PY_START);
    if (!final && len - c.i < tag && !memcmp(PY_START, text + c.i, len - c.i))
        return qs_tp_set_content(out, text, 0); /* blank so far, or the tag may be coming */
    if (len - c.i >= tag && !memcmp(text + c.i, PY_START, tag)) {
        c.i += tag;
        skip_ws(&c);
    }
    if (at_end(&c) && !final)
        return qs_tp_set_content(out, text, 0);
    if (at_end(&c) || text[c.i] != '[')
        return qs_tp_set_content(out, text, len);
    if (qs_tp_set_content(out, text, 0))
        return -1;
    c.i++;
    int rc = 0;
    for (;;) {
        skip_ws(&c);
        if (at_end(&c))
            break;
        if (text[c.i] == ']') {
            c.i++;
            rc = 1;
            break;
        }
        if (out->n_calls > 0) {
            if (text[c.i] != ',') {
                rc = -1;
                break;
            }
            c.i++;
            skip_ws(&c);
            if (at_end(&c))
                break;
        }
        rc = call(&c, out);
        if (rc <= 0)
            break;
        rc = 0;
    }
    if (!final)
        return 0;
    if (rc == 1) {
        skip_ws(&c);
        if (len - c.i >= strlen(PY_END) && !memcmp(text + c.i, PY_END, strlen(PY_END)))
            c.i += strlen(PY_END);
        skip_ws(&c);
    }
    if (rc != 1 || !at_end(&c) || !qs_tp_calls_valid(out))
        return qs_tp_as_content(out, text, len);
    out->tools_called = true;
    return 0;
}
