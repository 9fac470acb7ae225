/* server.h — the HTTP server: libmicrohttpd with a thread per connection (a handler may block
 * while its request generates; a streaming response blocks in its content reader), routes for
 * the OpenAI endpoints, API-key checks, and the hand-off to the engine. The server binds before
 * the model loads so /health can answer 503 while loading, then 200 once qs_server_set_ready. */
#ifndef QS_SERVER_SERVER_H
#define QS_SERVER_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/engine.h"
#include "server/metrics.h"
#include "util/error.h"

typedef struct qs_tokenizer qs_tokenizer;
typedef struct qs_chat_template qs_chat_template;

#define QS_MAX_BODY_BYTES (8u << 20) /* larger request bodies get 413 */

typedef struct qs_server_options {
    const char *host;          /* "0.0.0.0", "127.0.0.1", "::", a name */
    int port;                  /* 0 = any free port (see qs_server_port) */
    const char *model_name;    /* served model name */
    const char *api_key;       /* "" or NULL = open */
    size_t max_body_bytes;     /* 0 = QS_MAX_BODY_BYTES */
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
} qs_server_model;

/* Binds and starts answering (/health = 503 until ready). */
int qs_server_start(const qs_server_options *opt, qs_server **out, qs_err *err);
int qs_server_port(const qs_server *s);
void qs_server_set_ready(qs_server *s, const qs_server_model *m);
/* Loading failed: /health answers 500 with this message. */
void qs_server_set_failed(qs_server *s, const char *why);
/* Graceful stop: refuse new connections, abort in-flight requests, wait for handlers, free all. */
void qs_server_stop(qs_server *s);

#endif
