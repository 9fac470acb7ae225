/* request_gate.h — what is checked from the request line and headers alone, before a byte of the
 * body is read or any work is done (request_gate.c). */
#ifndef QS_SERVER_REQUEST_GATE_H
#define QS_SERVER_REQUEST_GATE_H

#include <microhttpd.h>

#include "server/api_error.h"
#include "server/routes.h"
#include "server/server_internal.h"

/* 0 when the request may proceed to its body; else -1 with e filled: 431 request line and headers
 * over qs_header_limit (header_limit.h), 404 no route in the table (routes.h), 405 not its method,
 * 401 missing key (as its row says: the /v1 routes, /tokenize, /detokenize, and /metrics with
 * --metrics-require-key), 400 conflicting Content-Length headers, 413 an announced body over the
 * cap, 415 a body that is not JSON. */
int qs_gate_check_headers(qs_server *s, struct MHD_Connection *c, const char *url, const char *method,
                          qs_api_error *e);
/* Constant-time comparison of a bearer token with the key (any length). */
bool qs_gate_key_matches(const char *given, const char *key);

#endif
