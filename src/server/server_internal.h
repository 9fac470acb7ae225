/* server_internal.h — the server's state, shared by http.c, the response helpers (respond.h), the
 * endpoint handlers (handlers.h), the connection watchdog (conn_watch.h) and the drain: the
 * options it was started with, its life-cycle state, the served model, the counters, and the
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

#endif
