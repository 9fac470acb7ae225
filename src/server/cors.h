/* cors.h — Cross-Origin Resource Sharing as vLLM does it (Starlette's CORSMiddleware configured by
 * --allowed-origins, --allowed-methods, --allowed-headers, --allow-credentials; all three lists
 * default to ["*"]): a request carrying Origin gets Access-Control-Allow-* headers on its
 * response, and an OPTIONS preflight (Origin + Access-Control-Request-Method) is answered here,
 * 200 "OK" or 400 "Disallowed CORS origin, method, headers", before routing or the API key (as
 * vLLM's key check lets OPTIONS through). Written here because libmicrohttpd has no CORS layer. */
#ifndef QS_SERVER_CORS_H
#define QS_SERVER_CORS_H

#include <stdbool.h>

#include <microhttpd.h>

#include "util/error.h"

typedef struct qs_cors {
    bool all_origins, all_headers, credentials;
    char **origins;
    int n_origins;
    char *methods;        /* "GET, POST" (every method for "*") */
    char **headers;       /* lowercased, with the CORS-safelisted ones */
    int n_headers;
    char *headers_joined; /* "accept, accept-language, ..." */
} qs_cors;

/* Lists are JSON arrays of strings; NULL or "" = ["*"]. */
int qs_cors_init(qs_cors *c, const char *origins, const char *methods, const char *headers, bool credentials,
                 qs_err *err);
void qs_cors_free(qs_cors *c);

/* An OPTIONS request with Origin and Access-Control-Request-Method. */
bool qs_cors_is_preflight(struct MHD_Connection *conn, const char *method);
/* The preflight answer: status 200 or 400, its body, its headers added to r. */
int qs_cors_preflight(const qs_cors *c, struct MHD_Connection *conn, struct MHD_Response **out);
/* Adds the headers a simple (non-preflight) response carries for a request with Origin. */
void qs_cors_add_headers(const qs_cors *c, struct MHD_Connection *conn, struct MHD_Response *r);

#endif
