/* api_error.h — an OpenAI error: HTTP status plus the body
 * {"error": {"message", "type", "param", "code"}} every client library knows how to read. */
#ifndef QS_SERVER_API_ERROR_H
#define QS_SERVER_API_ERROR_H

typedef struct qs_api_error {
    int status;          /* HTTP status: 400, 401, 404, 413, 429, 500, 503 */
    char type[48];       /* "invalid_request_error", "authentication_error", ... */
    char param[64];      /* the offending parameter, "" = null */
    char code[48];       /* "" = null */
    char message[1024];
} qs_api_error;

/* Fills e and returns -1. param and code may be NULL. */
int qs_api_errorf(qs_api_error *e, int status, const char *param, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Sets the code field (e.g. "model_not_found"); returns -1. */
int qs_api_error_code(qs_api_error *e, const char *code);
/* The JSON body (malloc'd). */
char *qs_api_error_json(const qs_api_error *e);
/* The default type for a status ("invalid_request_error" for 4xx, "server_error" for 5xx, ...). */
const char *qs_api_error_type_for(int status);

#endif
