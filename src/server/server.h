/* server.h — the HTTP server: libmicrohttpd with a small pool of epoll threads (no thread per
 * connection, no select() ceiling), routes for the OpenAI endpoints, API-key checks, per-client
 * and total connection caps, a deadline for connections that owe a request, and the hand-off to
 * the engine: a request waiting for tokens suspends its connection and the engine's event sink
 * resumes it, so thousands of idle or slow connections cost no threads. The server binds before
 * the model loads so /health can answer 503 while loading, then 200 once qs_server_set_ready.
 * Shutdown drains: qs_server_drain refuses new work, lets running requests finish for a while,
 * then ends the rest with proper error bodies / events before qs_server_stop frees it all. */
#ifndef QS_SERVER_SERVER_H
#define QS_SERVER_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/engine.h"
#include "engine/sampling_defaults.h"
#include "server/metrics.h"
#include "util/error.h"

typedef struct qs_tokenizer qs_tokenizer;
typedef struct qs_chat_template qs_chat_template;

#define QS_MAX_BODY_BYTES (8u << 20)      /* larger request bodies get 413 */
/* A request's line and headers may take this plus the API key's length, so a key of any length
 * fits; a larger block gets a JSON 431 (past 1.5 times that, libmicrohttpd's HTML one: header_limit.c). */
#define QS_HTTP_HEADER_BYTES (32u << 10)
#define QS_DEFAULT_MAX_CONNECTIONS 4096   /* also bounded by the open-file limit */
#define QS_DEFAULT_MAX_CONN_PER_CLIENT 256
#define QS_DEFAULT_CLIENT_TIMEOUT_S 10
#define QS_DEFAULT_SHUTDOWN_TIMEOUT_S 5
/* A prompt longer than SLACK x max_model_len x the longest token's bytes cannot fit the context:
 * refused before tokenizing (normalisation may shrink text, hence the slack). */
#define QS_PROMPT_BYTES_SLACK 4

typedef struct qs_server_options {
    const char *host;          /* "0.0.0.0", "127.0.0.1", "::", a name */
    int port;                  /* 0 = any free port (see qs_server_port) */
    const char *model_name;    /* served model name: the one responses and metrics report */
    const char *const *model_names; /* every name `model` may give (/v1/models lists them); NULL = model_name only */
    int n_model_names;
    const char *api_key;       /* "" or NULL = open; any length */
    bool metrics_require_key;  /* /metrics needs the key too */
    size_t max_body_bytes;     /* 0 = QS_MAX_BODY_BYTES */
    int max_connections;       /* 0 = QS_DEFAULT_MAX_CONNECTIONS */
    int max_connections_per_client; /* 0 = QS_DEFAULT_MAX_CONN_PER_CLIENT */
    int client_timeout_s;      /* 0 = QS_DEFAULT_CLIENT_TIMEOUT_S: seconds to deliver a whole request */
    int http_threads;          /* 0 = automatic */
    const char *root_path;     /* "/prefix" a proxy adds before every route; NULL or "" = none */
    /* CORS (vLLM's --allowed-origins / --allowed-methods / --allowed-headers, JSON lists; NULL =
     * ["*"]) and --allow-credentials */
    const char *allowed_origins, *allowed_methods, *allowed_headers;
    bool allow_credentials;
    bool log_requests;         /* --enable-log-requests */
    int max_logprobs;          /* requests asking for more get 400; 0 with max_logprobs_set false = 20 */
    bool max_logprobs_set;
    const char *response_role; /* chat responses' role with add_generation_prompt; NULL = "assistant" */
    const qs_sampling_defaults *sampling_defaults; /* NULL = none; copied */
    bool enable_auto_tool_choice; /* --enable-auto-tool-choice */
    const char *tool_call_parser; /* --tool-call-parser NAME, NULL/"" = none (checked by the config) */
    const char *reasoning_parser; /* --reasoning-parser NAME, NULL/"" = none */
} qs_server_options;

typedef struct qs_server qs_server;

/* What the server serves once the model is loaded; the server takes ownership. */
typedef struct qs_server_model {
    qs_engine *engine;
    qs_tokenizer *tokenizer;
    qs_chat_template *chat_template; /* may be NULL: chat requests get 400 */
    int max_model_len;
    int vocab_size;
    int64_t created;           /* unix time the model was loaded */
    size_t max_prompt_bytes;   /* set by qs_server_set_ready: longer prompt text cannot fit */
} qs_server_model;

/* Binds and starts answering (/health = 503 until ready). */
int qs_server_start(const qs_server_options *opt, qs_server **out, qs_err *err);
int qs_server_port(const qs_server *s);
void qs_server_set_ready(qs_server *s, const qs_server_model *m);
/* The sampling defaults known once the model folder is (before qs_server_set_ready). */
void qs_server_set_sampling_defaults(qs_server *s, const qs_sampling_defaults *d);
/* Loading failed: /health answers 500 with this message. */
void qs_server_set_failed(qs_server *s, const char *why);
/* Graceful drain (server_drain.c): new requests get 503 from now on; running generations get up
 * to timeout_s seconds to finish (0 = none), then every remaining one is aborted: streams end with
 * an error event, `data: [DONE]` and the chunked terminator, non-streaming requests get a 503
 * body. Returns once every response has been handed over (or a last grace period ran out). */
void qs_server_drain(qs_server *s, double timeout_s);
/* Stop: close the listener and every connection, abort what is left, free all. */
void qs_server_stop(qs_server *s);

#endif
