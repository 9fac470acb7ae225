/* strlist.c — the growable string list of strlist.h. */
#include "eval/strlist.h"

#include <stdlib.h>
#include <string.h>

int qs_eval_strlist_push_n(qs_eval_strlist *l, const char *s, size_t len)
{
    if (l->count + 2 > l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 8;
        char **items = realloc(l->items, cap * sizeof *items);
        if (!items)
            return -1;
        l->items = items;
        l->cap = cap;
    }
    char *copy = malloc(len + 1);
    if (!copy)
        return -1;
    memcpy(copy, s, len);
    copy[len] = '\0';
    l->items[l->count++] = copy;
    l->items[l->count] = NULL;
    return 0;
}

int qs_eval_strlist_push(qs_eval_strlist *l, const char *s)
{
    return qs_eval_strlist_push_n(l, s, strlen(s));
}

int qs_eval_strlist_extend(qs_eval_strlist *l, const qs_eval_strlist *src)
{
    for (size_t i = 0; i < src->count; i++)
        if (qs_eval_strlist_push(l, src->items[i]) != 0)
            return -1;
    return 0;
}

void qs_eval_strlist_free(qs_eval_strlist *l)
{
    for (size_t i = 0; i < l->count; i++)
        free(l->items[i]);
    free(l->items);
    l->items = NULL;
    l->count = l->cap = 0;
}
