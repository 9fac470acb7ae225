/* respond.h — what a handler needs to answer a request (respond.c): the served-model snapshot and
 * state queries, fresh ids, the counters, the helpers that queue JSON / text / error responses,
 * and whether a connection's client is still there. Handlers include this, never http.c's
 * plumbing. */
#ifndef QS_SERVER_RESPOND_H
#define QS_SERVER_RESPOND_H

#include <stdbool.h>
#include <stddef.h>

#include <cJSON.h>
#include <microhttpd.h>

#include "server/api_error.h"
#include "server/server_internal.h"

/* True when name is one of the served model names. */
bool qs_server_serves_name(const qs_server *s, const char *name);

/* Snapshot of the served model; false (and a 503 queued) when not ready. */
bool qs_server_get_model(qs_server *s, struct MHD_Connection *c, qs_server_model *out);
bool qs_server_draining(qs_server *s);

enum MHD_Result qs_send_json(qs_server *s, struct MHD_Connection *c, int status, cJSON *body); /* frees body */
enum MHD_Result qs_send_text(qs_server *s, struct MHD_Connection *c, int status, const char *content_type,
                             const char *text);
/* 429 and 503 carry Retry-After; during a drain every response says Connection: close. */
enum MHD_Result qs_send_error(qs_server *s, struct MHD_Connection *c, const qs_api_error *e);
void qs_server_count(qs_server *s, int status);
void qs_server_count_disconnect(qs_server *s);
/* A fresh id: prefix + 24 hex digits ("cmpl-…", "chatcmpl-…"). */
void qs_server_new_id(qs_server *s, const char *prefix, char *out, size_t cap);

/* True when the peer of connection fd closed or reset it. */
bool qs_client_gone(int fd);
int qs_connection_fd(struct MHD_Connection *c);

#endif
