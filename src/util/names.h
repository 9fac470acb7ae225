/* names.h — the spelling rule for kernel, backend and option names, shared by the config and the
 * kernel registry, so every source agrees on what a name is. */
#ifndef QS_UTIL_NAMES_H
#define QS_UTIL_NAMES_H

/* Normalises a name in place: lowercase, '-' -> '_'. */
void qs_normalize_name(char *s);
/* Levenshtein distance (case-insensitive, '-' == '_'), for "did you mean" suggestions. */
int qs_edit_distance(const char *a, const char *b);

#endif
