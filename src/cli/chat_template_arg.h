/* chat_template_arg.h — vLLM's --chat-template value: the path of a Jinja file, or, when no such
 * file opens and the text holds '{', '}' or a newline, the template itself with its backslash
 * escapes decoded (vLLM decodes it as Python's unicode_escape); else an error saying the path
 * cannot be opened. */
#ifndef QS_CLI_CHAT_TEMPLATE_ARG_H
#define QS_CLI_CHAT_TEMPLATE_ARG_H

#include "util/error.h"

/* *text malloc'd; *origin says where it came from ("FILE" or "the inline --chat-template"). */
int qs_chat_template_arg_load(const char *arg, char **text, char *origin, size_t origin_cap, qs_err *err);

#endif
