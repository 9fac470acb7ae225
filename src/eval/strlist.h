/* strlist.h — a growable NULL-terminated list of malloc'd strings: the argv the harness builds
 * for the server, the split server_args, the config paths of a config list. */
#ifndef QS_EVAL_STRLIST_H
#define QS_EVAL_STRLIST_H

#include <stddef.h>

typedef struct qs_eval_strlist {
    char **items; /* items[count] is NULL, so items can be passed to execv */
    size_t count;
    size_t cap;
} qs_eval_strlist;

/* Appends a copy of s (or of its first len bytes with push_n). Returns 0, or -1 when out of memory. */
int qs_eval_strlist_push(qs_eval_strlist *l, const char *s);
int qs_eval_strlist_push_n(qs_eval_strlist *l, const char *s, size_t len);
/* Appends copies of every item of src. */
int qs_eval_strlist_extend(qs_eval_strlist *l, const qs_eval_strlist *src);
void qs_eval_strlist_free(qs_eval_strlist *l);

#endif
