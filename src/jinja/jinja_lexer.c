/* jinja_lexer.c — turns chat-template source into tokens. Outside tags it emits text; inside
 * {{ }} and {% %} it emits names, numbers, strings and operators. Whitespace control follows
 * Jinja2 as Hugging Face configures it: {%- / -%} strip all whitespace on that side, trim_blocks
 * drops the first newline after %} and #}, lstrip_blocks drops spaces and tabs between a line
 * start and {% or {#, and one trailing newline of the whole source is dropped
 * (keep_trailing_newline=False). Comments {# #} vanish. */
#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "jinja/jinja_lexer.h"

typedef struct {
    qs_jj_arena *arena;
    const char *name;
    qs_err *err;
    qs_jj_token *toks;
    size_t n, cap;
} lexer;

static qs_jj_token *push(lexer *lx, qs_jt_kind kind, int line, const char *s, size_t len)
{
    if (lx->n == lx->cap) {
        size_t cap = lx->cap ? lx->cap * 2 : 256;
        qs_jj_token *t = qs_jj_alloc(lx->arena, cap * sizeof *t);
        if (lx->n)
            memcpy(t, lx->toks, lx->n * sizeof *t);
        lx->toks = t;
        lx->cap = cap;
    }
    qs_jj_token *t = &lx->toks[lx->n++];
    memset(t, 0, sizeof *t);
    t->kind = kind;
    t->line = line;
    t->s = s ? qs_jj_strndup(lx->arena, s, len) : NULL;
    t->len = len;
    return t;
}

static int count_lines(const char *s, size_t n)
{
    int k = 0;
    for (size_t i = 0; i < n; i++)
        k += s[i] == '\n';
    return k;
}

static void put_utf8(qs_jj_buf *b, unsigned cp)
{
    char o[4];
    size_t n;
    if (cp < 0x80) {
        o[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        o[0] = (char)(0xc0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3f));
        n = 2;
    } else if (cp < 0x10000) {
        o[0] = (char)(0xe0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        o[2] = (char)(0x80 | (cp & 0x3f));
        n = 3;
    } else {
        o[0] = (char)(0xf0 | (cp >> 18));
        o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
        o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
        o[3] = (char)(0x80 | (cp & 0x3f));
        n = 4;
    }
    qs_jj_buf_put(b, o, n);
}

static int hex_value(const char *s, int digits, unsigned *out)
{
    unsigned v = 0;
    for (int k = 0; k < digits; k++) {
        char c = s[k];
        if (!isxdigit((unsigned char)c))
            return -1;
        v = v * 16 + (unsigned)(isdigit((unsigned char)c) ? c - '0' : (tolower((unsigned char)c) - 'a' + 10));
    }
    *out = v;
    return 0;
}

/* Reads a quoted string at src[*pos] with Python escapes; unknown escapes keep their backslash. */
static int lex_string(lexer *lx, const char *src, size_t *pos, int *line)
{
    char quote = src[*pos];
    size_t i = *pos + 1;
    int start_line = *line;
    qs_jj_buf b = {0};
    for (;;) {
        char c = src[i];
        if (c == '\0') {
            qs_jj_buf_free(&b);
            return qs_errf(lx->err, "%s: line %d: unterminated string literal", lx->name, start_line);
        }
        if (c == quote)
            break;
        if (c == '\n')
            (*line)++;
        if (c != '\\') {
            qs_jj_buf_put(&b, &c, 1);
            i++;
            continue;
        }
        char e = src[i + 1];
        unsigned cp;
        i += 2;
        switch (e) {
        case 'n': qs_jj_buf_put(&b, "\n", 1); break;
        case 't': qs_jj_buf_put(&b, "\t", 1); break;
        case 'r': qs_jj_buf_put(&b, "\r", 1); break;
        case 'b': qs_jj_buf_put(&b, "\b", 1); break;
        case 'f': qs_jj_buf_put(&b, "\f", 1); break;
        case 'v': qs_jj_buf_put(&b, "\v", 1); break;
        case 'a': qs_jj_buf_put(&b, "\a", 1); break;
        case '0': qs_jj_buf_put(&b, "\0", 1); break;
        case '\\': qs_jj_buf_put(&b, "\\", 1); break;
        case '\'': qs_jj_buf_put(&b, "'", 1); break;
        case '"': qs_jj_buf_put(&b, "\"", 1); break;
        case '\n': (*line)++; break; /* line continuation */
        case 'x':
        case 'u':
        case 'U': {
            int digits = e == 'x' ? 2 : e == 'u' ? 4 : 8;
            if (strnlen(src + i, (size_t)digits) < (size_t)digits || hex_value(src + i, digits, &cp) ||
                cp > 0x10ffff) {
                qs_jj_buf_free(&b);
                return qs_errf(lx->err, "%s: line %d: bad \\%c escape in string literal", lx->name, *line, e);
            }
            put_utf8(&b, cp);
            i += (size_t)digits;
            break;
        }
        case '\0':
            qs_jj_buf_free(&b);
            return qs_errf(lx->err, "%s: line %d: unterminated string literal", lx->name, start_line);
        default:
            qs_jj_buf_put(&b, "\\", 1);
            qs_jj_buf_put(&b, &e, 1);
        }
    }
    push(lx, QS_JT_STRING, start_line, b.data ? b.data : "", b.len);
    qs_jj_buf_free(&b);
    *pos = i + 1;
    return 0;
}

static const char *const OPERATORS[] = {"**", "//", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "~", "|",
                                        ".",  ",",  ":",  "(",  ")",  "[",  "]", "{", "}", "<", ">", "="};

/* Lexes the inside of a tag from src[*pos] up to its closing delimiter ("}}" or "%}").
 * On return *pos is just past the delimiter and *strip_after tells whether it was "-}}"/"-%}",
 * *keep_newline whether it was "+%}". */
static int lex_tag(lexer *lx, const char *src, size_t *pos, int *line, char closer, int open_line,
                   bool *strip_after, bool *keep_newline)
{
    size_t i = *pos;
    int depth = 0; /* brackets, so "}}" inside a dict literal is not the end */
    for (;;) {
        char c = src[i];
        if (c == '\0')
            return qs_errf(lx->err, "%s: line %d: unclosed '%s' tag (missing '%c}')", lx->name, open_line,
                           closer == '}' ? "{{" : "{%", closer);
        if (c == '\n') {
            (*line)++;
            i++;
            continue;
        }
        if (isspace((unsigned char)c)) {
            i++;
            continue;
        }
        if (depth == 0 || closer == '%') {
            if ((c == '-' || c == '+') && src[i + 1] == closer && src[i + 2] == '}') {
                *strip_after = c == '-';
                *keep_newline = c == '+';
                *pos = i + 3;
                return 0;
            }
            if (c == closer && src[i + 1] == '}') {
                *strip_after = false;
                *keep_newline = false;
                *pos = i + 2;
                return 0;
            }
        }
        if (c == '\'' || c == '"') {
            if (lex_string(lx, src, &i, line))
                return -1;
            continue;
        }
        if (isdigit((unsigned char)c)) {
            size_t j = i;
            bool is_float = false;
            while (isdigit((unsigned char)src[j]) || (src[j] == '_' && isdigit((unsigned char)src[j + 1])))
                j++;
            if (src[j] == '.' && isdigit((unsigned char)src[j + 1])) {
                is_float = true;
                j++;
                while (isdigit((unsigned char)src[j]))
                    j++;
            }
            if ((src[j] == 'e' || src[j] == 'E') &&
                (isdigit((unsigned char)src[j + 1]) ||
                 ((src[j + 1] == '+' || src[j + 1] == '-') && isdigit((unsigned char)src[j + 2])))) {
                is_float = true;
                j += 2;
                while (isdigit((unsigned char)src[j]))
                    j++;
            }
            char num[64];
            size_t k = 0;
            for (size_t p = i; p < j && k + 1 < sizeof num; p++)
                if (src[p] != '_')
                    num[k++] = src[p];
            num[k] = '\0';
            qs_jj_token *t = push(lx, is_float ? QS_JT_FLOAT : QS_JT_INT, *line, src + i, j - i);
            if (is_float)
                t->f = strtod(num, NULL);
            else
                t->i = strtoll(num, NULL, 10);
            i = j;
            continue;
        }
        if (isalpha((unsigned char)c) || c == '_') {
            size_t j = i;
            while (isalnum((unsigned char)src[j]) || src[j] == '_')
                j++;
            push(lx, QS_JT_NAME, *line, src + i, j - i);
            i = j;
            continue;
        }
        bool matched = false;
        for (size_t k = 0; k < sizeof OPERATORS / sizeof OPERATORS[0]; k++) {
            size_t n = strlen(OPERATORS[k]);
            if (!strncmp(src + i, OPERATORS[k], n)) {
                push(lx, QS_JT_OP, *line, src + i, n);
                if (c == '(' || c == '[' || c == '{')
                    depth++;
                else if ((c == ')' || c == ']' || c == '}') && depth > 0)
                    depth--;
                i += n;
                matched = true;
                break;
            }
        }
        if (!matched)
            return qs_errf(lx->err, "%s: line %d: unexpected character '%c' inside a tag", lx->name, *line, c);
    }
}

int qs_jj_lex(qs_jj_arena *a, const char *source, const char *name, qs_jj_token **out, size_t *n_out,
              qs_err *err)
{
    lexer lx = {.arena = a, .name = name, .err = err};
    /* Normalise newlines like Jinja2 and drop one trailing newline. */
    size_t sn = strlen(source);
    char *src = qs_jj_alloc(a, sn + 1);
    size_t w = 0;
    for (size_t r = 0; r < sn; r++) {
        if (source[r] == '\r') {
            src[w++] = '\n';
            if (source[r + 1] == '\n')
                r++;
        } else {
            src[w++] = source[r];
        }
    }
    if (w > 0 && src[w - 1] == '\n')
        w--;
    src[w] = '\0';

    size_t pos = 0;
    int line = 1;
    bool line_starting = true;
    while (pos < w) {
        /* Find the next tag opener. */
        size_t p = pos;
        char kind = 0;
        while (p + 1 < w) {
            if (src[p] == '{' && (src[p + 1] == '{' || src[p + 1] == '%' || src[p + 1] == '#')) {
                kind = src[p + 1];
                break;
            }
            p++;
        }
        if (!kind)
            p = w;
        size_t text_end = p;
        char modifier = kind ? src[p + 2] : 0;
        if (kind && modifier == '-') {
            while (text_end > pos && isspace((unsigned char)src[text_end - 1]))
                text_end--;
        } else if (kind && kind != '{' && modifier != '+') {
            size_t l = p;
            while (l > pos && src[l - 1] != '\n')
                l--;
            if (l > pos || line_starting) {
                size_t k = l;
                while (k < p && (src[k] == ' ' || src[k] == '\t'))
                    k++;
                if (k == p)
                    text_end = l;
            }
        }
        if (text_end > pos)
            push(&lx, QS_JT_TEXT, line, src + pos, text_end - pos);
        line += count_lines(src + pos, p - pos);
        if (!kind)
            break;
        int open_line = line;
        size_t body = p + 2 + (modifier == '-' || modifier == '+');
        bool strip_after = false, keep_newline = false;
        if (kind == '#') {
            const char *end = strstr(src + body, "#}");
            if (!end)
                return qs_errf(err, "%s: line %d: unclosed comment (missing '#}')", name, open_line);
            size_t e = (size_t)(end - src);
            strip_after = e > body && src[e - 1] == '-';
            keep_newline = e > body && src[e - 1] == '+';
            line += count_lines(src + body, e - body);
            pos = e + 2;
        } else {
            push(&lx, kind == '{' ? QS_JT_VAR_BEGIN : QS_JT_BLOCK_BEGIN, line, NULL, 0);
            pos = body;
            if (lex_tag(&lx, src, &pos, &line, kind == '{' ? '}' : '%', open_line, &strip_after, &keep_newline))
                return -1;
            push(&lx, kind == '{' ? QS_JT_VAR_END : QS_JT_BLOCK_END, line, NULL, 0);
        }
        line_starting = false;
        if (strip_after) {
            while (pos < w && isspace((unsigned char)src[pos])) {
                line_starting = src[pos] == '\n';
                line += src[pos] == '\n';
                pos++;
            }
        } else if (kind != '{' && !keep_newline && src[pos] == '\n') {
            pos++;
            line++;
            line_starting = true;
        }
    }
    push(&lx, QS_JT_EOF, line, NULL, 0);
    *out = lx.toks;
    *n_out = lx.n;
    return 0;
}
