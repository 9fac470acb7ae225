/* fileio.c — whole-file reads and path helpers (see fileio.h). */
#include "util/fileio.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cJSON.h>

static int read_stream(FILE *f, const char *what, char **out, size_t *len, qs_err *err)
{
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    if (!buf)
        return qs_errf(err, "%s: out of memory", what);
    for (;;) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (n < cap) {
            if (ferror(f)) {
                free(buf);
                return qs_errf(err, "%s: read error: %s", what, strerror(errno));
            }
            break;
        }
        char *bigger = realloc(buf, cap * 2 + 1);
        if (!bigger) {
            free(buf);
            return qs_errf(err, "%s: out of memory", what);
        }
        buf = bigger;
        cap *= 2;
    }
    buf[n] = '\0';
    *out = buf;
    if (len)
        *len = n;
    return 0;
}

int qs_read_file(const char *path, char **out, size_t *len, qs_err *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return qs_errf(err, "%s: %s", path, strerror(errno));
    int rc = read_stream(f, path, out, len, err);
    fclose(f);
    return rc;
}

int qs_read_stdin(char **out, size_t *len, qs_err *err) { return read_stream(stdin, "stdin", out, len, err); }

int qs_write_file(const char *path, const void *data, size_t len, qs_err *err)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return qs_errf(err, "%s: %s", path, strerror(errno));
    size_t put = fwrite(data, 1, len, f);
    int close_rc = fclose(f);
    if (put != len || close_rc != 0)
        return qs_errf(err, "%s: write failed: %s", path, strerror(errno));
    return 0;
}

bool qs_file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

char *qs_path_join(char *buf, size_t cap, const char *dir, const char *name)
{
    size_t dl = strlen(dir);
    if (dl > 0 && dir[dl - 1] == '/')
        snprintf(buf, cap, "%s%s", dir, name);
    else
        snprintf(buf, cap, "%s/%s", dir, name);
    return buf;
}

const char *qs_shared_data_dir(void)
{
    const char *s = getenv("QSERVE_SHARED_DATA");
    return (s && *s) ? s : "../shared/data";
}

int qs_write_json_file(const char *dir, const char *name, const cJSON *root, qs_err *err)
{
    char *text = cJSON_Print(root);
    if (!text)
        return qs_errf(err, "%s: out of memory", name);
    char path[2048];
    int rc = qs_write_file(qs_path_join(path, sizeof path, dir, name), text, strlen(text), err);
    free(text);
    return rc;
}
