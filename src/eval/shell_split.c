/* shell_split.c — shlex.split-compatible word splitting (see shell_split.h for the rules). */
#include "eval/shell_split.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char *buf;
    size_t len, cap;
} word_buf;

static int word_add(word_buf *w, char c)
{
    if (w->len + 1 >= w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 64;
        char *b = realloc(w->buf, cap);
        if (!b)
            return -1;
        w->buf = b;
        w->cap = cap;
    }
    w->buf[w->len++] = c;
    return 0;
}

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

int qs_shell_split(const char *s, qs_eval_strlist *out, qs_err *err)
{
    word_buf w = {0};
    bool in_word = false; /* a word has started (possibly empty, from '') */
    int rc = -1;
    size_t i = 0;
    while (s[i]) {
        char c = s[i];
        if (is_space(c)) {
            if (in_word) {
                if (qs_eval_strlist_push_n(out, w.len ? w.buf : "", w.len) != 0)
                    goto oom;
                w.len = 0;
                in_word = false;
            }
            i++;
        } else if (c == '\'' || c == '"') {
            size_t open = i++;
            in_word = true;
            while (s[i] && s[i] != c) {
                if (c == '"' && s[i] == '\\' && (s[i + 1] == '"' || s[i + 1] == '\\'))
                    i++;
                if (word_add(&w, s[i++]) != 0)
                    goto oom;
            }
            if (!s[i]) {
                qs_errf(err, "no closing quotation: the %c opened at column %zu is never closed", c, open + 1);
                goto done;
            }
            i++; /* the closing quote */
        } else if (c == '\\') {
            if (!s[i + 1]) {
                qs_errf(err, "no escaped character: the string ends with a backslash (column %zu)", i + 1);
                goto done;
            }
            in_word = true;
            if (word_add(&w, s[i + 1]) != 0)
                goto oom;
            i += 2;
        } else {
            in_word = true;
            if (word_add(&w, c) != 0)
                goto oom;
            i++;
        }
    }
    if (in_word && qs_eval_strlist_push_n(out, w.len ? w.buf : "", w.len) != 0)
        goto oom;
    rc = 0;
    goto done;
oom:
    qs_errf(err, "out of memory splitting arguments");
done:
    free(w.buf);
    return rc;
}

void qs_shell_quote(const char *s, char *buf, size_t cap)
{
    if (cap < 8) {
        if (cap)
            buf[0] = '\0';
        return;
    }
    bool plain = *s != '\0';
    for (const char *p = s; *p && plain; p++)
        plain = strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%+=:,./-_", *p) != NULL;
    if (plain) {
        snprintf(buf, cap, "%s", s);
        return;
    }
    size_t n = 0;
    buf[n++] = '\'';
    for (const char *p = s; *p && n + 6 < cap; p++) {
        if (*p == '\'') {
            memcpy(buf + n, "'\"'\"'", 5);
            n += 5;
        } else {
            buf[n++] = *p;
        }
    }
    if (n + 1 < cap)
        buf[n++] = '\'';
    buf[n < cap ? n : cap - 1] = '\0';
}
