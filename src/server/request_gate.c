/* request_gate.c — the checks made on the request line and headers before any body is read:
 * the size of the request line and headers (header_limit.c), route and method, the API key on
 * every endpoint that does work, the Content-Length (one value,
 * within the cap) and the Content-Type (JSON or none). A refused request costs no body read and
 * no parsing, so an unauthenticated client cannot make the server tokenize or buffer anything. */
#include "server/request_gate.h"

#include "server/header_limit.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

bool qs_gate_key_matches(const char *given, const char *key)
{
    size_t a = strlen(given), b = strlen(key);
    unsigned char diff = (unsigned char)(a != b);
    for (size_t i = 0; i < b; i++)
        diff |= (unsigned char)(given[i < a ? i : 0] ^ key[i]);
    return diff == 0 && a > 0;
}

static bool authorized(qs_server *s, struct MHD_Connection *c)
{
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    if (!h || strncasecmp(h, "Bearer ", 7) != 0)
        return false;
    h += 7;
    while (*h == ' ')
        h++;
    return qs_gate_key_matches(h, s->api_key);
}

typedef struct {
    const char *first;
    bool conflict;
    int count;
} length_headers;

static enum MHD_Result each_header(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    (void)kind;
    length_headers *lh = cls;
    if (strcasecmp(key, "Content-Length") != 0 || !value)
        return MHD_YES;
    if (lh->count++ == 0)
        lh->first = value;
    else if (strcmp(lh->first, value) != 0)
        lh->conflict = true;
    return MHD_YES;
}

/* application/json, optionally with parameters ("; charset=utf-8"), or any +json type. */
static bool json_content_type(const char *ct)
{
    size_t n = strcspn(ct, ";");
    while (n && (ct[n - 1] == ' ' || ct[n - 1] == '\t'))
        n--;
    while (n && (*ct == ' ' || *ct == '\t')) {
        ct++;
        n--;
    }
    if (n == 16 && !strncasecmp(ct, "application/json", 16))
        return true;
    return n > 5 && !strncasecmp(ct + n - 5, "+json", 5);
}

int qs_gate_check_headers(qs_server *s, struct MHD_Connection *c, const char *url, const char *method,
                          qs_api_error *e)
{
    size_t head = qs_request_head_bytes(c, method, url), limit = qs_header_limit(s->api_key);
    if (head > limit)
        return qs_api_errorf(e, 431, NULL, "The request line and headers (%zu bytes) exceed %zu bytes.", head, limit);
    const qs_route *r = qs_route_find(url);
    if (!r)
        return qs_api_errorf(e, 404, NULL, "No route for %.16s %.200s.", method, url);
    if (strcmp(method, r->method) != 0)
        return qs_api_errorf(e, 405, NULL, "Method %.16s is not allowed on %s; use %s.", method, url, r->method);
    bool needs_key = r->key == QS_KEY_REQUIRED || (r->key == QS_KEY_WITH_METRICS_FLAG && s->metrics_require_key);
    if (s->api_key[0] && needs_key && !authorized(s, c)) {
        qs_api_errorf(e, 401, NULL, "Missing or invalid API key: send 'Authorization: Bearer <key>'.");
        return qs_api_error_code(e, "invalid_api_key");
    }
    length_headers lh = {0};
    MHD_get_connection_values(c, MHD_HEADER_KIND, each_header, &lh);
    if (lh.conflict)
        return qs_api_errorf(e, 400, NULL, "The request has conflicting Content-Length headers (%.40s, ...).",
                             lh.first);
    if (lh.first) {
        char *end;
        unsigned long long n = strtoull(lh.first, &end, 10);
        if (end == lh.first || *end != '\0')
            return qs_api_errorf(e, 400, NULL, "Content-Length '%.40s' is not a byte count.", lh.first);
        if (n > s->max_body_bytes)
            return qs_api_errorf(e, 413, NULL, "The request body (%llu bytes) exceeds %zu bytes.", n,
                                 s->max_body_bytes);
    }
    if (!strcmp(method, "POST")) {
        const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
        if (ct && !json_content_type(ct)) {
            qs_api_errorf(e, 415, NULL, "The body must be JSON (Content-Type: application/json), not '%.80s'.", ct);
            return qs_api_error_code(e, "unsupported_media_type");
        }
    }
    return 0;
}
