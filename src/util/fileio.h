/* fileio.h — whole-file reads and writes and path helpers used by every loader and writer. */
#ifndef QS_UTIL_FILEIO_H
#define QS_UTIL_FILEIO_H

#include <stdbool.h>
#include <stddef.h>

#include "util/error.h"

struct cJSON;

/* Reads a whole file into a NUL-terminated malloc'd buffer. *len (may be NULL) excludes the NUL. */
int qs_read_file(const char *path, char **out, size_t *len, qs_err *err);
/* Reads all of stdin the same way. */
int qs_read_stdin(char **out, size_t *len, qs_err *err);
/* Writes len bytes to path (created or truncated). */
int qs_write_file(const char *path, const void *data, size_t len, qs_err *err);
/* Writes root, pretty-printed by cJSON_Print, to dir/name; an error names the file. */
int qs_write_json_file(const char *dir, const char *name, const struct cJSON *root, qs_err *err);
bool qs_file_exists(const char *path);
/* snprintf(dir + "/" + name) into buf; returns buf. */
char *qs_path_join(char *buf, size_t cap, const char *dir, const char *name);
/* Where ../shared/data lives: $QSERVE_SHARED_DATA, else "../shared/data" (tests run from the repo root). */
const char *qs_shared_data_dir(void);

#endif
