/* server_internal.h — what http.c shares with the endpoint handlers: the server state, the
 * helpers that queue JSON / error / text responses, and client-disconnect detection. */
#ifndef QS_SERVER_SERVER_INTERNAL_H
#define QS_SERVER_SERVER_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>

#include <cJSON.h>
#include <microhttpd.h>

#include "server/api_error.h"
#include "server/metrics.h"
#include "server/server.h"

typedef enum { QS_STATE_LOADING, QS_STATE_READY, QS_STATE_FAILED, QS_STATE_STOPPING } qs_server_state;

struct qs_server {
    struct MHD_Daemon *daemon;
    char model_name[256];
    char api_key[256];
    size_t max_body_bytes;
    int port;
    pthread_mutex_t mu;
    qs_server_state state;
    char failure[512];
    qs_server_model model;
    qs_http_counters counters;
    unsigned long long next_id;
};

/* Snapshot of the served model; false (and a 503 queued) when not ready. */
bool qs_server_get_model(qs_server *s, struct MHD_Connection *c, qs_server_model *out);

enum MHD_Result qs_send_json(qs_server *s, struct MHD_Connection *c, int status, cJSON *body); /* frees body */
enum MHD_Result qs_send_text(qs_server *s, struct MHD_Connection *c, int status, const char *content_type,
                             const char *text);
enum MHD_Result qs_send_error(qs_server *s, struct MHD_Connection *c, const qs_api_error *e);
void qs_server_count(qs_server *s, int status);
void qs_server_count_disconnect(qs_server *s);
/* A fresh id: prefix + 24 hex digits ("cmpl-…", "chatcmpl-…"). */
void qs_server_new_id(qs_server *s, const char *prefix, char *out, size_t cap);

/* True when the peer of connection fd closed or reset it. */
bool qs_client_gone(int fd);
int qs_connection_fd(struct MHD_Connection *c);

/* Endpoint handlers (body is the complete request body). */
enum MHD_Result qs_handle_generate(qs_server *s, struct MHD_Connection *c, bool chat, const char *body, size_t len);
enum MHD_Result qs_handle_models(qs_server *s, struct MHD_Connection *c);
enum MHD_Result qs_handle_health(qs_server *s, struct MHD_Connection *c);
enum MHD_Result qs_handle_metrics(qs_server *s, struct MHD_Connection *c);
enum MHD_Result qs_handle_tokenize(qs_server *s, struct MHD_Connection *c, const char *body, size_t len);
enum MHD_Result qs_handle_detokenize(qs_server *s, struct MHD_Connection *c, const char *body, size_t len);

#endif
