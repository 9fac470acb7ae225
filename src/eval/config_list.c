/* config_list.c — reading a config list (see config_list.h). */
#include "eval/config_list.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/fileio.h"

int qs_eval_read_config_list(const char *list_path, qs_eval_strlist *out, qs_err *err)
{
    char *text;
    if (qs_read_file(list_path, &text, NULL, err) != 0)
        return qs_err_prefix(err, "--config-list: ");
    char dir[2048];
    const char *slash = strrchr(list_path, '/');
    if (slash)
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - list_path), list_path);
    else
        snprintf(dir, sizeof dir, ".");
    if (!dir[0])
        snprintf(dir, sizeof dir, "/");
    int rc = 0;
    for (char *line = strtok(text, "\n"); line && rc == 0; line = strtok(NULL, "\n")) {
        while (*line == ' ' || *line == '\t')
            line++;
        size_t len = strlen(line);
        while (len > 0 && (line[len - 1] == ' ' || line[len - 1] == '\t' || line[len - 1] == '\r'))
            line[--len] = '\0';
        if (!len || line[0] == '#')
            continue;
        char path[4096];
        if (line[0] == '/')
            snprintf(path, sizeof path, "%s", line);
        else
            qs_path_join(path, sizeof path, dir, line);
        if (qs_eval_strlist_push(out, path) != 0)
            rc = qs_errf(err, "out of memory");
    }
    free(text);
    return rc;
}
