/* conn_watch.h — the connection watchdog (conn_watch.c): the registries of open connections and
 * of generations waiting on the engine, the per-request clock that closes a client too slow to
 * send its request, and the thread that aborts a waiting generation whose client went away. */
#ifndef QS_SERVER_CONN_WATCH_H
#define QS_SERVER_CONN_WATCH_H

#include <microhttpd.h>

#include "server/server_internal.h"

int qs_watch_start(qs_server *s);
void qs_watch_stop(qs_server *s);
void qs_watch_notify_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                                enum MHD_ConnectionNotificationCode code);
void qs_watch_request_begins(qs_server *s, struct MHD_Connection *c); /* headers in: counted busy */
void qs_watch_request_read(qs_server *s, struct MHD_Connection *c);   /* body in: clock stopped */
void qs_watch_request_ends(qs_server *s, struct MHD_Connection *c);   /* response done: clock restarts */
void qs_watch_add_gen(qs_server *s, qs_watch_gen *w);
void qs_watch_remove_gen(qs_server *s, qs_watch_gen *w);

#endif
