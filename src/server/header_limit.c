/* header_limit.c — qserve's own limit on the request line and headers. libmicrohttpd answers a
 * header block that does not fit its per-connection memory with its built-in HTML 431 and has no
 * hook to replace that body; so its memory is made 1.5 times qserve's limit and qserve measures
 * the headers that arrive, answering a block over the limit with an OpenAI JSON 431
 * (request_gate.c). Only a block past about 1.5 times the limit still gets libmicrohttpd's HTML.
 * Not more: libmicrohttpd clears (so touches) all of a connection's memory after each request,
 * so every kept-alive connection holds it resident. */
#include "server/header_limit.h"

#include <string.h>

#include "server/server.h"

size_t qs_header_limit(const char *api_key) { return QS_HTTP_HEADER_BYTES + strlen(api_key); }

size_t qs_header_pool_bytes(size_t limit) { return limit + limit / 2; }

static enum MHD_Result add_header_line(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    (void)kind;
    *(size_t *)cls += strlen(key) + (value ? strlen(value) : 0) + 4; /* ": " and CRLF */
    return MHD_YES;
}

static enum MHD_Result add_query_arg(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    (void)kind;
    *(size_t *)cls += strlen(key) + (value ? strlen(value) + 1 : 0) + 1; /* "=" and "?" or "&" */
    return MHD_YES;
}

size_t qs_request_head_bytes(struct MHD_Connection *c, const char *method, const char *url)
{
    size_t n = strlen(method) + 1 + strlen(url) + 1 + strlen("HTTP/1.1") + 2 + 2; /* and the blank line */
    MHD_get_connection_values(c, MHD_HEADER_KIND, add_header_line, &n);
    MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, add_query_arg, &n);
    return n;
}
