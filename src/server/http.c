/* http.c — libmicrohttpd plumbing: binding (epoll threads in a pool, connection caps fitted to
 * the open-file limit), the request life cycle (--root-path stripped, CORS preflights answered,
 * the gate's checks on the headers before any body is read, the body under a size cap that stops
 * reading at the limit, dispatch through the route table of routes.c, the re-entry of a resumed
 * generation). Responses go out through respond.c. */
#include "server/server_internal.h"

#include "server/conn_watch.h"
#include "server/fd_limit.h"
#include "server/handlers.h"
#include "server/header_limit.h"
#include "server/request_gate.h"
#include "server/respond.h"
#include "server/routes.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "engine/engine.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"
#include "util/log.h"

typedef struct {
    char *body;
    size_t len, cap;
    bool started;       /* routed: the whole request was read */
    qs_gen *gen;        /* a non-streaming generation waiting on the engine */
} conn_ctx;

/* With --root-path /p, "/p/v1/models" is "/v1/models"; paths without the prefix are served as
 * they are (a proxy that strips the prefix), as Starlette does with a root_path. */
static const char *strip_root_path(const qs_server *s, const char *url)
{
    size_t n = strlen(s->root_path);
    if (n && !strncmp(url, s->root_path, n) && (url[n] == '/' || url[n] == '\0'))
        return url[n] ? url + n : "/";
    return url;
}

static enum MHD_Result answer_preflight(qs_server *s, struct MHD_Connection *c)
{
    struct MHD_Response *r = NULL;
    int status = qs_cors_preflight(&s->cors, c, &r);
    if (status < 0)
        return MHD_NO;
    enum MHD_Result ret = MHD_queue_response(c, (unsigned)status, r);
    MHD_destroy_response(r);
    qs_server_count(s, status);
    return ret;
}

static void send_raw_413(qs_server *s, struct MHD_Connection *c)
{
    qs_api_error e;
    qs_api_errorf(&e, 413, NULL, "The request body exceeds %zu bytes; the rest was not read.", s->max_body_bytes);
    char *body = qs_api_error_json(&e);
    int fd = qs_connection_fd(c);
    if (body && fd >= 0) {
        char head[256];
        int n = snprintf(head, sizeof head,
                         "HTTP/1.1 413 Payload Too Large\r\nContent-Type: application/json\r\n"
                         "Content-Length: %zu\r\nConnection: close\r\n\r\n",
                         strlen(body));
        if (send(fd, head, (size_t)n, MSG_NOSIGNAL) == n)
            (void)!send(fd, body, strlen(body), MSG_NOSIGNAL);
        shutdown(fd, SHUT_WR); /* the response ends here; the client sees it before the close */
    }
    free(body);
    qs_server_count(s, 413);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload_data, size_t *upload_size, void **con_cls)
{
    (void)version;
    qs_server *s = cls;
    conn_ctx *cc = *con_cls;
    url = strip_root_path(s, url);
    if (!cc) {
        cc = calloc(1, sizeof *cc);
        if (!cc)
            return MHD_NO;
        *con_cls = cc;
        qs_watch_request_begins(s, c);
        /* Streamed tokens are small writes: without TCP_NODELAY, Nagle's algorithm and the
         * client's delayed ACK hold each one back for ~40 ms. */
        int fd = qs_connection_fd(c), one = 1;
        if (fd >= 0)
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        /* Everything that can be refused from the headers is refused before any body is read:
         * route and method, the API key, the content type and length. */
        if (qs_cors_is_preflight(c, method)) {
            cc->started = true;
            return answer_preflight(s, c);
        }
        qs_api_error e;
        if (qs_gate_check_headers(s, c, url, method, &e)) {
            cc->started = true;
            return qs_send_error(s, c, &e);
        }
        return MHD_YES;
    }
    if (cc->started) {
        if (*upload_size > 0) { /* the rest of a body that was already refused */
            *upload_size = 0;
            return MHD_YES;
        }
        if (cc->gen) /* resumed: the engine has news for a waiting generation */
            return qs_generate_resume(cc->gen, c, &cc->gen);
        return MHD_YES;
    }
    if (*upload_size > 0) {
        size_t n = *upload_size;
        *upload_size = 0;
        if (cc->len + n > s->max_body_bytes) {
            /* A chunked body past the cap: stop reading here. libmicrohttpd 0.9 cannot queue a
             * response in the middle of an upload, so the 413 is written to the socket directly
             * (a final response after "100 Continue" is valid HTTP) and the connection closes. */
            cc->started = true;
            send_raw_413(s, c);
            return MHD_NO;
        }
        if (cc->len + n + 1 > cc->cap) {
            size_t cap = cc->cap ? cc->cap : 4096;
            while (cap < cc->len + n + 1)
                cap *= 2;
            char *p = realloc(cc->body, cap);
            if (!p)
                return MHD_NO;
            cc->body = p;
            cc->cap = cap;
        }
        memcpy(cc->body + cc->len, upload_data, n);
        cc->len += n;
        cc->body[cc->len] = '\0';
        return MHD_YES;
    }
    cc->started = true;
    qs_watch_request_read(s, c);
    const qs_route *r = qs_route_find(url); /* the gate let it through: it has a row */
    return r->handle(s, c, cc->body ? cc->body : "", cc->len, &cc->gen);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe)
{
    (void)toe;
    qs_server *s = cls;
    conn_ctx *cc = *con_cls;
    if (!cc)
        return;
    if (cc->gen)
        qs_generate_cancel(cc->gen);
    free(cc->body);
    free(cc);
    *con_cls = NULL;
    qs_watch_request_ends(s, c);
}

static void log_mhd(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    char line[512];
    vsnprintf(line, sizeof line, fmt, ap);
    size_t n = strlen(line);
    while (n && line[n - 1] == '\n')
        line[--n] = '\0';
    qs_debug("http: %s", line);
}

static void free_server(qs_server *s)
{
    pthread_mutex_destroy(&s->mu);
    qs_cors_free(&s->cors);
    free(s->api_key);
    free(s);
}

int qs_server_start(const qs_server_options *opt, qs_server **out, qs_err *err)
{
    if (opt->port < 0 || opt->port > 65535)
        return qs_errf(err, "--port %d is not a TCP port (0..65535)", opt->port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE};
    struct addrinfo *ai = NULL;
    const char *host = opt->host && opt->host[0] ? opt->host : "0.0.0.0";
    char port[16];
    snprintf(port, sizeof port, "%d", opt->port);
    int rc = getaddrinfo(host, port, &hints, &ai);
    if (rc)
        return qs_errf(err, "--host %s: %s", host, gai_strerror(rc));
    qs_server *s = calloc(1, sizeof *s);
    if (!s || !(s->api_key = strdup(opt->api_key ? opt->api_key : ""))) {
        free(s);
        freeaddrinfo(ai);
        return qs_errf(err, "out of memory");
    }
    if (qs_cors_init(&s->cors, opt->allowed_origins, opt->allowed_methods, opt->allowed_headers, opt->allow_credentials,
                     err)) {
        free(s->api_key);
        free(s);
        freeaddrinfo(ai);
        return -1;
    }
    pthread_mutex_init(&s->mu, NULL);
    snprintf(s->model_name, sizeof s->model_name, "%s", opt->model_name ? opt->model_name : "model");
    for (int i = 0; opt->model_names && i < opt->n_model_names && i < QS_SERVER_MAX_NAMES; i++)
        snprintf(s->model_names[s->n_model_names++], sizeof s->model_names[0], "%s", opt->model_names[i]);
    if (s->n_model_names == 0)
        snprintf(s->model_names[s->n_model_names++], sizeof s->model_names[0], "%s", s->model_name);
    snprintf(s->root_path, sizeof s->root_path, "%s", opt->root_path ? opt->root_path : "");
    size_t rp = strlen(s->root_path);
    while (rp && s->root_path[rp - 1] == '/') /* "/api/" routes like "/api" */
        s->root_path[--rp] = '\0';
    s->log_requests = opt->log_requests;
    s->max_logprobs = opt->max_logprobs_set ? opt->max_logprobs : QS_MAX_LOGPROBS;
    snprintf(s->response_role, sizeof s->response_role, "%s",
             opt->response_role && opt->response_role[0] ? opt->response_role : "assistant");
    if (opt->sampling_defaults)
        s->sampling_defaults = *opt->sampling_defaults;
    s->metrics_require_key = opt->metrics_require_key;
    s->tools.enable_auto_tool_choice = opt->enable_auto_tool_choice;
    s->tools.parser = opt->tool_call_parser && opt->tool_call_parser[0] ? qs_tool_parser_find(opt->tool_call_parser) : NULL;
    if (opt->tool_call_parser && opt->tool_call_parser[0] && !s->tools.parser) {
        free(s->api_key);
        free(s);
        freeaddrinfo(ai);
        return qs_errf(err, "--tool-call-parser %s: unknown parser (valid: %s)", opt->tool_call_parser,
                       qs_tool_parser_names());
    }
    if (!qs_reasoning_parser_find(opt->reasoning_parser, &s->reasoning)) {
        free(s->api_key);
        free(s);
        freeaddrinfo(ai);
        return qs_errf(err, "--reasoning-parser %s: unknown parser (valid: %s)", opt->reasoning_parser,
                       qs_reasoning_parser_names());
    }
    s->max_body_bytes = opt->max_body_bytes ? opt->max_body_bytes : QS_MAX_BODY_BYTES;
    s->client_timeout_s = opt->client_timeout_s > 0 ? opt->client_timeout_s : QS_DEFAULT_CLIENT_TIMEOUT_S;
    s->state = QS_STATE_LOADING;
    s->next_id = (unsigned long long)time(NULL) << 20;
    int max_conn = qs_fit_connections_to_fd_limit(opt->max_connections > 0 ? opt->max_connections
                                                                           : QS_DEFAULT_MAX_CONNECTIONS);
    unsigned per_client =
        (unsigned)(opt->max_connections_per_client > 0 ? opt->max_connections_per_client : QS_DEFAULT_MAX_CONN_PER_CLIENT);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned threads = (unsigned)(opt->http_threads > 0 ? opt->http_threads : cores < 4 ? 4 : cores > 16 ? 16 : cores);
    if (qs_watch_start(s)) {
        freeaddrinfo(ai);
        free_server(s);
        return qs_errf(err, "cannot start the connection watchdog thread");
    }
    /* Internal epoll threads in a pool: a connection costs a descriptor and a few hundred bytes,
     * never a thread; generations suspend their connection while they wait for the engine. */
    unsigned flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
    if (ai->ai_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    unsigned idle_timeout = (unsigned)(s->client_timeout_s > 60 ? s->client_timeout_s : 60);
    /* header limit: libmicrohttpd's memory is 1.5 times qserve's limit, see header_limit.c */
    size_t header_bytes = qs_header_limit(s->api_key), header_pool = qs_header_pool_bytes(header_bytes);
    s->daemon = MHD_start_daemon(
        flags, (uint16_t)opt->port, NULL, NULL, on_request, s, MHD_OPTION_SOCK_ADDR, ai->ai_addr,
        MHD_OPTION_THREAD_POOL_SIZE, threads, MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
        MHD_OPTION_NOTIFY_CONNECTION, qs_watch_notify_connection, s, MHD_OPTION_CONNECTION_TIMEOUT, idle_timeout,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)max_conn, MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_client,
        MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024u, MHD_OPTION_CONNECTION_MEMORY_LIMIT, header_pool,
        MHD_OPTION_EXTERNAL_LOGGER, log_mhd, s, MHD_OPTION_END);
    freeaddrinfo(ai);
    if (!s->daemon) {
        qs_watch_stop(s);
        free_server(s);
        return qs_errf(err, "cannot listen on %s:%d (address in use, or not an address of this machine)", host,
                       opt->port);
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
    s->port = info && info->port ? info->port : opt->port;
    qs_info("http: %u epoll threads, at most %d connections (%u per client address), %d s to send a request, "
            "%zu bytes of request line and headers",
            threads, max_conn, per_client, s->client_timeout_s, header_bytes);
    *out = s;
    return 0;
}

int qs_server_port(const qs_server *s) { return s->port; }

/* The longest token's bytes: a prompt of B bytes is at least B / that many tokens. */
static size_t longest_token_bytes(const qs_tokenizer *tok)
{
    size_t longest = 1;
    size_t n = tok ? qs_tokenizer_vocab_size(tok) : 0;
    for (size_t i = 0; i < n; i++) {
        const char *t = qs_tokenizer_id_to_token(tok, (int32_t)i);
        size_t l = t ? strlen(t) : 0;
        if (l > longest)
            longest = l;
    }
    return longest;
}

void qs_server_set_ready(qs_server *s, const qs_server_model *m)
{
    qs_server_model copy = *m;
    /* Normalisation may shrink text (NFC composes, accents are stripped), so 4x of slack. */
    copy.max_prompt_bytes = QS_PROMPT_BYTES_SLACK * longest_token_bytes(m->tokenizer) * (size_t)m->max_model_len;
    pthread_mutex_lock(&s->mu);
    s->model = copy;
    if (s->state == QS_STATE_LOADING) /* a drain that began while loading stays a drain */
        s->state = QS_STATE_READY;
    pthread_mutex_unlock(&s->mu);
}

void qs_server_set_sampling_defaults(qs_server *s, const qs_sampling_defaults *d)
{
    pthread_mutex_lock(&s->mu);
    s->sampling_defaults = *d;
    pthread_mutex_unlock(&s->mu);
}

void qs_server_set_failed(qs_server *s, const char *why)
{
    pthread_mutex_lock(&s->mu);
    if (s->state == QS_STATE_LOADING)
        s->state = QS_STATE_FAILED;
    snprintf(s->failure, sizeof s->failure, "%s", why);
    pthread_mutex_unlock(&s->mu);
}
