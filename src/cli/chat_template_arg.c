/* chat_template_arg.c — reads the --chat-template argument (chat_template_arg.h). */
#include "cli/chat_template_arg.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/fileio.h"

/* The escapes a one-line template uses: \n \t \r \\ \" \' (others stay as written). */
static char *unescape(const char *s)
{
    char *out = malloc(strlen(s) + 1), *o = out;
    if (!out)
        return NULL;
    for (; *s; s++) {
        if (*s != '\\' || !s[1]) {
            *o++ = *s;
            continue;
        }
        switch (*++s) {
        case 'n': *o++ = '\n'; break;
        case 't': *o++ = '\t'; break;
        case 'r': *o++ = '\r'; break;
        case '\\': *o++ = '\\'; break;
        case '"': *o++ = '"'; break;
        case '\'': *o++ = '\''; break;
        default:
            *o++ = '\\';
            *o++ = *s;
        }
    }
    *o = '\0';
    return out;
}

int qs_chat_template_arg_load(const char *arg, char **text, char *origin, size_t origin_cap, qs_err *err)
{
    *text = NULL;
    FILE *f = fopen(arg, "rb");
    if (f) {
        fclose(f);
        snprintf(origin, origin_cap, "%s", arg);
        return qs_read_file(arg, text, NULL, err);
    }
    int why = errno;
    if (!strpbrk(arg, "{}\n"))
        return qs_errf(err, "--chat-template: '%.200s' looks like a file path, but it cannot be opened (%s)", arg,
                       strerror(why));
    snprintf(origin, origin_cap, "the inline --chat-template");
    if (!(*text = unescape(arg)))
        return qs_errf(err, "out of memory");
    return 0;
}
