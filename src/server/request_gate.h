/* request_gate.h — what is checked from the request line and headers alone, before a byte of the
 * body is read or any work is done (request_gate.c). */
#ifndef QS_SERVER_REQUEST_GATE_H
#define QS_SERVER_REQUEST_GATE_H

#include <microhttpd.h>

#include "server/api_error.h"
#include "server/server_internal.h"

typedef enum {
    QS_ROUTE_NONE = -1,
    QS_ROUTE_COMPLETIONS,
    QS_ROUTE_CHAT,
    QS_ROUTE_MODELS,
    QS_ROUTE_HEALTH,
    QS_ROUTE_METRICS,
    QS_ROUTE_TOKENIZE,
    QS_ROUTE_DETOKENIZE,
    QS_ROUTE_VERSION
} qs_route;

qs_route qs_gate_route(const char *url);
/* 0 when the request may proceed to its body; else -1 with e filled: 431 request line and headers
 * over qs_header_limit, 404 unknown route, 405
 * wrong method, 401 missing key (on the /v1 routes, /tokenize, /detokenize, and /metrics with
 * --metrics-require-key), 400 conflicting Content-Length headers, 413 an announced body over the
 * cap, 415 a body that is not JSON. */
int qs_gate_check_headers(qs_server *s, struct MHD_Connection *c, const char *url, const char *method,
                          qs_api_error *e);
/* Constant-time comparison of a bearer token with the key (any length). */
bool qs_gate_key_matches(const char *given, const char *key);

#endif
