/* jinja_arena.c — memory for the chat-template interpreter. A template's AST and every value a
 * render creates come from an arena freed in one go, so the evaluator never tracks ownership;
 * qs_jj_buf is the growable byte string used for output and formatting. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jinja/jinja_arena.h"

typedef struct chunk {
    struct chunk *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
} chunk;

struct qs_jj_arena {
    chunk *head;
    size_t used; /* bytes handed out, for the render's memory limit */
};

size_t qs_jj_arena_used(const qs_jj_arena *a) { return a->used; }

static void out_of_memory(void)
{
    fprintf(stderr, "qserve: out of memory in the chat template interpreter\n");
    abort();
}

qs_jj_arena *qs_jj_arena_new(void)
{
    qs_jj_arena *a = calloc(1, sizeof *a);
    if (!a)
        out_of_memory();
    return a;
}

void qs_jj_arena_free(qs_jj_arena *a)
{
    if (!a)
        return;
    for (chunk *c = a->head; c;) {
        chunk *next = c->next;
        free(c);
        c = next;
    }
    free(a);
}

void *qs_jj_alloc(qs_jj_arena *a, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    if (!a->head || a->head->cap - a->head->used < n) {
        size_t cap = n > 60000 ? n : 60000;
        chunk *c = malloc(sizeof *c + cap);
        if (!c)
            out_of_memory();
        c->next = a->head;
        c->used = 0;
        c->cap = cap;
        a->head = c;
    }
    void *p = a->head->data + a->head->used;
    a->head->used += n;
    a->used += n;
    memset(p, 0, n);
    return p;
}

char *qs_jj_strndup(qs_jj_arena *a, const char *s, size_t n)
{
    char *p = qs_jj_alloc(a, n + 1);
    if (n)
        memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

void qs_jj_buf_put(qs_jj_buf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *d = realloc(b->data, cap);
        if (!d)
            out_of_memory();
        b->data = d;
        b->cap = cap;
    }
    if (n)
        memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void qs_jj_buf_puts(qs_jj_buf *b, const char *s) { qs_jj_buf_put(b, s, strlen(s)); }

void qs_jj_buf_printf(qs_jj_buf *b, const char *fmt, ...)
{
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < sizeof small) {
        qs_jj_buf_put(b, small, (size_t)n);
        return;
    }
    char *big = malloc((size_t)n + 1);
    if (!big)
        out_of_memory();
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    qs_jj_buf_put(b, big, (size_t)n);
    free(big);
}

void qs_jj_buf_free(qs_jj_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}
