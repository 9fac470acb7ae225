/* jinja_arena.h — the Jinja engine's memory: one arena per compiled template and per render
 * (every AST node and value lives in one and is freed at once), and qs_jj_buf, the growable byte
 * string used for output and formatting. Internal to src/jinja and its one user,
 * tokenizer/chat_template.c. */
#ifndef QS_JINJA_ARENA_H
#define QS_JINJA_ARENA_H

#include <stddef.h>

typedef struct qs_jj_arena qs_jj_arena;
qs_jj_arena *qs_jj_arena_new(void);
void qs_jj_arena_free(qs_jj_arena *a);
/* Zeroed memory that lives until the arena is freed; aborts the process only on OOM. */
void *qs_jj_alloc(qs_jj_arena *a, size_t n);
char *qs_jj_strndup(qs_jj_arena *a, const char *s, size_t n);
size_t qs_jj_arena_used(const qs_jj_arena *a);

typedef struct {
    char *data;
    size_t len, cap;
} qs_jj_buf;
void qs_jj_buf_put(qs_jj_buf *b, const char *s, size_t n);
void qs_jj_buf_puts(qs_jj_buf *b, const char *s);
void qs_jj_buf_printf(qs_jj_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void qs_jj_buf_free(qs_jj_buf *b);

#endif
