/* shell_split.h — splits a server_args string into arguments exactly like Python's
 * shlex.split (POSIX mode, no comments), which is what vLLM's gsm8k runner does: whitespace
 * separates words; '...' keeps everything literally; "..." keeps everything but lets a backslash
 * escape only '"' and '\'; outside quotes a backslash takes the next character literally;
 * quotes inside a word join with it (a"b c"d -> "ab cd"); '' yields an empty argument. */
#ifndef QS_EVAL_SHELL_SPLIT_H
#define QS_EVAL_SHELL_SPLIT_H

#include "eval/strlist.h"
#include "util/error.h"

/* Appends the words of s to out. An unclosed quote or a trailing backslash is an error naming
 * the quote and the column (1-based) where it opened. */
int qs_shell_split(const char *s, qs_eval_strlist *out, qs_err *err);

/* Writes s quoted for a POSIX shell into buf (for logging the server command line). */
void qs_shell_quote(const char *s, char *buf, size_t cap);

#endif
