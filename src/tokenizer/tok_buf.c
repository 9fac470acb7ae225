/* tok_buf.c — the growable byte buffer and id list the tokenizer files build their output in. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tokenizer_internal.h"

int qs_tbuf_reserve(qs_tbuf *b, size_t extra)
{
    if (b->len + extra + 1 <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->len + extra + 1)
        cap *= 2;
    char *d = realloc(b->data, cap);
    if (!d)
        return -1;
    b->data = d;
    b->cap = cap;
    return 0;
}

int qs_tbuf_append(qs_tbuf *b, const void *p, size_t n)
{
    if (qs_tbuf_reserve(b, n))
        return -1;
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

void qs_tbuf_free(qs_tbuf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

int qs_tids_reserve(qs_tids *v, size_t n)
{
    if (n <= v->cap)
        return 0;
    int32_t *d = realloc(v->data, n * sizeof *d);
    if (!d)
        return -1;
    v->data = d;
    v->cap = n;
    return 0;
}

int qs_tids_append(qs_tids *v, const int32_t *ids, size_t n)
{
    if (v->len + n > v->cap) {
        size_t cap = v->cap ? v->cap : 64;
        while (cap < v->len + n)
            cap *= 2;
        int32_t *d = realloc(v->data, cap * sizeof *d);
        if (!d)
            return -1;
        v->data = d;
        v->cap = cap;
    }
    if (n)
        memcpy(v->data + v->len, ids, n * sizeof *ids);
    v->len += n;
    return 0;
}

int qs_tids_push(qs_tids *v, int32_t id) { return qs_tids_append(v, &id, 1); }
