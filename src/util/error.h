/* error.h — how failures are reported across qserve.
 * Every function that can fail returns 0 on success or -1 on failure and fills a qs_err whose
 * message names the culprit (file, tensor, field, parameter). Callers add context by prefixing. */
#ifndef QS_UTIL_ERROR_H
#define QS_UTIL_ERROR_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define QS_ERR_MSG_MAX 1024

typedef struct qs_err {
    char msg[QS_ERR_MSG_MAX];
} qs_err;

/* Sets err->msg (printf-style) and returns -1, so `return qs_errf(err, ...)` reads naturally.
 * err may be NULL. */
int qs_errf(qs_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prefixes the existing message with more context ("loading model.safetensors: " + old msg). */
int qs_err_prefix(qs_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#ifdef __cplusplus
}
#endif

#endif
