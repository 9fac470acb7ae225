/* routes.h — the server's route table (routes.c): each row names a method, a path, whether the
 * API key guards it, and the handler that answers it. The gate (request_gate.c) refuses what the
 * table does not allow before a body is read; http.c calls the row's handler once it is. */
#ifndef QS_SERVER_ROUTES_H
#define QS_SERVER_ROUTES_H

#include <stddef.h>

#include <microhttpd.h>

#include "server/handlers.h"
#include "server/server_internal.h"

/* body is the complete request body (NUL-terminated, len bytes); a generation that waits for the
 * engine leaves itself in *pending (handlers.h). */
typedef enum MHD_Result (*qs_route_handler)(qs_server *s, struct MHD_Connection *c, const char *body, size_t len,
                                             qs_gen **pending);

typedef enum {
    QS_KEY_NONE,            /* open even with --api-key */
    QS_KEY_REQUIRED,        /* with --api-key */
    QS_KEY_WITH_METRICS_FLAG /* with --api-key and --metrics-require-key */
} qs_route_key;

typedef struct qs_route {
    const char *method;     /* "GET" or "POST" */
    const char *path;
    qs_route_key key;
    qs_route_handler handle;
} qs_route;

/* The row serving url (after --root-path is stripped), whatever the method; NULL: no route. */
const qs_route *qs_route_find(const char *url);

#endif
