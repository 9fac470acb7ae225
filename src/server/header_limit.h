/* header_limit.h — qserve's limit on the request line and headers, refused with an OpenAI error
 * body (header_limit.c). */
#ifndef QS_SERVER_HEADER_LIMIT_H
#define QS_SERVER_HEADER_LIMIT_H

#include <microhttpd.h>
#include <stddef.h>

/* Bytes of request line and headers a request may have: QS_HTTP_HEADER_BYTES plus the API key's
 * length, so that a key of any length fits. */
size_t qs_header_limit(const char *api_key);
/* libmicrohttpd's memory per connection for that limit: one and a half times it, so that a header
 * block between the limit and about 1.5 times it still reaches qserve and gets the JSON 431. */
size_t qs_header_pool_bytes(size_t limit);
/* The request line and headers of c as sent, in bytes (the query string as libmicrohttpd
 * decoded it). */
size_t qs_request_head_bytes(struct MHD_Connection *c, const char *method, const char *url);

#endif
