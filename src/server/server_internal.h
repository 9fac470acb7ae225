/* server_internal.h — what http.c shares with the endpoint handlers, the connection watchdog and
 * the drain: the server state, the helpers that queue JSON / error / text responses, and the
 * registries of open connections and of generations waiting on the engine. */
#ifndef QS_SERVER_SERVER_INTERNAL_H
#define QS_SERVER_SERVER_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include <cJSON.h>
#include <microhttpd.h>

#include "server/api_error.h"
#include "server/cors.h"
#include "server/metrics.h"
#include "server/reasoning_parser.h"
#include "server/server.h"
#include "server/tool_request.h"

#define QS_SERVER_MAX_NAMES 8

typedef enum {
    QS_STATE_LOADING,
    QS_STATE_READY,
    QS_STATE_FAILED,
    QS_STATE_DRAINING, /* SIGTERM/SIGINT: running requests finish, new ones get 503 */
    QS_STATE_STOPPING
} qs_server_state;

/* One open TCP connection (conn_watch.c). deadline_ms != 0 while it owes a request. */
typedef struct qs_conn_rec {
    int fd;
    long long deadline_ms;
    bool served;               /* a response was completed on it (else: a request may be on its way) */
    struct qs_conn_rec *prev, *next;
} qs_conn_rec;

/* One generation whose connection may be suspended while it waits for the engine. */
typedef struct qs_watch_gen {
    int fd;
    qs_engine *engine;
    qs_event_sink *sink;
    atomic_bool gone;          /* the client closed the connection: sequences aborted */
    struct qs_watch_gen *prev, *next;
} qs_watch_gen;

struct qs_server {
    struct MHD_Daemon *daemon;
    char model_name[256];      /* the first served name: what responses and metrics report */
    char model_names[QS_SERVER_MAX_NAMES][256]; /* every name `model` may give */
    int n_model_names;
    char root_path[256];       /* "" or "/prefix" */
    qs_cors cors;
    bool log_requests;
    int max_logprobs;
    char response_role[64];
    qs_sampling_defaults sampling_defaults;
    char *api_key;             /* "" = open */
    bool metrics_require_key;
    size_t max_body_bytes;
    int client_timeout_s;
    qs_tool_server_config tools;  /* --enable-auto-tool-choice, --tool-call-parser */
    qs_reasoning_kind reasoning;  /* --reasoning-parser */
    int port;
    pthread_mutex_t mu;
    qs_server_state state;
    char failure[512];
    qs_server_model model;
    qs_http_counters counters;
    unsigned long long next_id;
    /* conn_watch.c: registries and the watchdog thread, under watch_mu */
    pthread_mutex_t watch_mu;
    pthread_cond_t watch_cv;   /* signalled when a generation or a request ends, and on stop */
    qs_conn_rec *conns;
    qs_watch_gen *gens;
    int n_conns, n_gens, n_busy; /* open connections, waiting generations, requests in progress */
    int n_fresh;               /* connections that have not completed a request yet */
    bool watch_stop;
    bool watch_started;
    pthread_t watch_thread;
};

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

/* conn_watch.c */
int qs_watch_start(qs_server *s);
void qs_watch_stop(qs_server *s);
void qs_watch_notify_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                                enum MHD_ConnectionNotificationCode code);
void qs_watch_request_begins(qs_server *s, struct MHD_Connection *c); /* headers in: counted busy */
void qs_watch_request_read(qs_server *s, struct MHD_Connection *c);   /* body in: clock stopped */
void qs_watch_request_ends(qs_server *s, struct MHD_Connection *c);   /* response done: clock restarts */
void qs_watch_add_gen(qs_server *s, qs_watch_gen *w);
void qs_watch_remove_gen(qs_server *s, qs_watch_gen *w);

/* Endpoint handlers (body is the complete request body). A generation that must wait for the
 * engine suspends the connection and leaves itself in *pending; libmicrohttpd calls the access
 * handler again once it is resumed, which then calls qs_generate_resume. */
typedef struct qs_gen qs_gen;
enum MHD_Result qs_handle_generate(qs_server *s, struct MHD_Connection *c, bool chat, const char *body, size_t len,
                                   qs_gen **pending);
enum MHD_Result qs_generate_resume(qs_gen *g, struct MHD_Connection *c, qs_gen **pending);
/* The connection ended while a non-streaming generation was pending: abort and free it. */
void qs_generate_cancel(qs_gen *g);
enum MHD_Result qs_handle_models(qs_server *s, struct MHD_Connection *c);
enum MHD_Result qs_handle_health(qs_server *s, struct MHD_Connection *c);
enum MHD_Result qs_handle_metrics(qs_server *s, struct MHD_Connection *c);
enum MHD_Result qs_handle_tokenize(qs_server *s, struct MHD_Connection *c, const char *body, size_t len);
enum MHD_Result qs_handle_detokenize(qs_server *s, struct MHD_Connection *c, const char *body, size_t len);

#endif
