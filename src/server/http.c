/* http.c — libmicrohttpd plumbing: binding, one thread per connection, reading request bodies
 * under a size cap (413 as soon as Content-Length or the data read says too much), routing,
 * API-key checks on the /v1 routes, response helpers and client-disconnect detection. */
#include "server/server_internal.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
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
    bool too_large;
    bool started;
} conn_ctx;

void qs_server_count(qs_server *s, int status)
{
    pthread_mutex_lock(&s->mu);
    s->counters.requests_total++;
    if (status >= 400 && status < 500)
        s->counters.errors_4xx++;
    else if (status >= 500)
        s->counters.errors_5xx++;
    pthread_mutex_unlock(&s->mu);
}

void qs_server_count_disconnect(qs_server *s)
{
    pthread_mutex_lock(&s->mu);
    s->counters.aborted_by_client++;
    pthread_mutex_unlock(&s->mu);
}

void qs_server_new_id(qs_server *s, const char *prefix, char *out, size_t cap)
{
    pthread_mutex_lock(&s->mu);
    unsigned long long n = ++s->next_id;
    pthread_mutex_unlock(&s->mu);
    /* splitmix64 over the counter and the start time: unique per server, unguessable enough */
    unsigned long long x = n * 0x9E3779B97F4A7C15ull ^ (unsigned long long)(uintptr_t)s;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    x ^= x >> 31;
    snprintf(out, cap, "%s%016llx%08llx", prefix, x, n & 0xffffffffull);
}

static enum MHD_Result queue(qs_server *s, struct MHD_Connection *c, int status, const char *ctype, char *data,
                             size_t len)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(len, data, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(data);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", ctype);
    enum MHD_Result ret = MHD_queue_response(c, (unsigned)status, r);
    MHD_destroy_response(r);
    qs_server_count(s, status);
    return ret;
}

enum MHD_Result qs_send_json(qs_server *s, struct MHD_Connection *c, int status, cJSON *body)
{
    char *text = cJSON_PrintUnformatted(body);
    cJSON_Delete(body);
    if (!text)
        return MHD_NO;
    return queue(s, c, status, "application/json", text, strlen(text));
}

enum MHD_Result qs_send_text(qs_server *s, struct MHD_Connection *c, int status, const char *content_type,
                             const char *text)
{
    char *copy = strdup(text);
    if (!copy)
        return MHD_NO;
    return queue(s, c, status, content_type, copy, strlen(copy));
}

enum MHD_Result qs_send_error(qs_server *s, struct MHD_Connection *c, const qs_api_error *e)
{
    char *text = qs_api_error_json(e);
    if (!text)
        return MHD_NO;
    return queue(s, c, e->status, "application/json", text, strlen(text));
}

bool qs_client_gone(int fd)
{
    if (fd < 0)
        return false;
    struct pollfd p = {.fd = fd, .events = POLLIN | POLLRDHUP};
    if (poll(&p, 1, 0) <= 0)
        return false;
    if (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL))
        return true;
    if (p.revents & POLLIN) {
        char byte;
        return recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
    }
    return false;
}

int qs_connection_fd(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info ? info->connect_fd : -1;
}

bool qs_server_get_model(qs_server *s, struct MHD_Connection *c, qs_server_model *out)
{
    pthread_mutex_lock(&s->mu);
    qs_server_state st = s->state;
    *out = s->model;
    pthread_mutex_unlock(&s->mu);
    if (st == QS_STATE_READY)
        return true;
    qs_api_error e;
    qs_api_errorf(&e, 503, NULL, "%s",
                  st == QS_STATE_LOADING    ? "The model is still loading; retry when /health answers 200."
                  : st == QS_STATE_STOPPING ? "The server is shutting down."
                                            : "The model failed to load; see the server log.");
    qs_send_error(s, c, &e);
    return false;
}

/* Constant-time comparison of the bearer token with the key. */
static bool key_matches(const char *given, const char *key)
{
    size_t a = strlen(given), b = strlen(key);
    unsigned char diff = (unsigned char)(a != b);
    for (size_t i = 0; i < b; i++)
        diff |= (unsigned char)(given[i < a ? i : 0] ^ key[i]);
    return diff == 0 && a > 0;
}

static bool authorized(qs_server *s, struct MHD_Connection *c)
{
    if (!s->api_key[0])
        return true;
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    if (!h || strncasecmp(h, "Bearer ", 7) != 0)
        return false;
    h += 7;
    while (*h == ' ')
        h++;
    return key_matches(h, s->api_key);
}

static enum MHD_Result route(qs_server *s, struct MHD_Connection *c, const char *url, const char *method,
                             conn_ctx *cc)
{
    bool get = !strcmp(method, "GET"), post = !strcmp(method, "POST");
    qs_api_error e;
    if (!strncmp(url, "/v1/", 4) && !authorized(s, c)) {
        qs_api_errorf(&e, 401, NULL, "Missing or invalid API key: send 'Authorization: Bearer <key>'.");
        qs_api_error_code(&e, "invalid_api_key");
        return qs_send_error(s, c, &e);
    }
    struct {
        const char *path;
        bool is_post;
    } routes[] = {{"/v1/completions", true}, {"/v1/chat/completions", true}, {"/v1/models", false},
                  {"/health", false},        {"/metrics", false},            {"/tokenize", true},
                  {"/detokenize", true},     {"/ping", false},               {"/version", false}};
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
        if (strcmp(url, routes[i].path))
            continue;
        if ((routes[i].is_post && !post) || (!routes[i].is_post && !get)) {
            qs_api_errorf(&e, 405, NULL, "Method %s is not allowed on %s; use %s.", method, url,
                          routes[i].is_post ? "POST" : "GET");
            return qs_send_error(s, c, &e);
        }
        if (cc->too_large) {
            qs_api_errorf(&e, 413, NULL, "The request body exceeds %zu bytes.", s->max_body_bytes);
            return qs_send_error(s, c, &e);
        }
        switch (i) {
        case 0: return qs_handle_generate(s, c, false, cc->body, cc->len);
        case 1: return qs_handle_generate(s, c, true, cc->body, cc->len);
        case 2: return qs_handle_models(s, c);
        case 3: case 7: return qs_handle_health(s, c);
        case 4: return qs_handle_metrics(s, c);
        case 5: return qs_handle_tokenize(s, c, cc->body, cc->len);
        case 6: return qs_handle_detokenize(s, c, cc->body, cc->len);
        default: {
            cJSON *v = cJSON_CreateObject();
            cJSON_AddStringToObject(v, "version", "0.1.0");
            return qs_send_json(s, c, 200, v);
        }
        }
    }
    qs_api_errorf(&e, 404, NULL, "No route for %s %s.", method, url);
    return qs_send_error(s, c, &e);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload_data, size_t *upload_size, void **con_cls)
{
    (void)version;
    qs_server *s = cls;
    conn_ctx *cc = *con_cls;
    if (!cc) {
        cc = calloc(1, sizeof *cc);
        if (!cc)
            return MHD_NO;
        *con_cls = cc;
        /* Streamed tokens are small writes: without TCP_NODELAY, Nagle's algorithm and the
         * client's delayed ACK hold each one back for ~40 ms. */
        int fd = qs_connection_fd(c), one = 1;
        if (fd >= 0)
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        /* Refuse an announced oversize body before reading any of it. */
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
        if (cl) {
            char *end;
            unsigned long long n = strtoull(cl, &end, 10);
            if (*end == '\0' && n > s->max_body_bytes) {
                qs_api_error e;
                qs_api_errorf(&e, 413, NULL, "The request body (%llu bytes) exceeds %zu bytes.", n, s->max_body_bytes);
                return qs_send_error(s, c, &e);
            }
        }
        return MHD_YES;
    }
    if (*upload_size > 0) {
        size_t n = *upload_size;
        *upload_size = 0;
        if (cc->too_large || cc->len + n > s->max_body_bytes) {
            cc->too_large = true; /* keep reading and dropping; answer 413 at the end */
            return MHD_YES;
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
    if (cc->started)
        return MHD_YES;
    cc->started = true;
    return route(s, c, url, method, cc);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe)
{
    (void)cls;
    (void)c;
    (void)toe;
    conn_ctx *cc = *con_cls;
    if (cc) {
        free(cc->body);
        free(cc);
        *con_cls = NULL;
    }
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
    if (!s) {
        freeaddrinfo(ai);
        return qs_errf(err, "out of memory");
    }
    pthread_mutex_init(&s->mu, NULL);
    snprintf(s->model_name, sizeof s->model_name, "%s", opt->model_name ? opt->model_name : "model");
    snprintf(s->api_key, sizeof s->api_key, "%s", opt->api_key ? opt->api_key : "");
    s->max_body_bytes = opt->max_body_bytes ? opt->max_body_bytes : QS_MAX_BODY_BYTES;
    s->state = QS_STATE_LOADING;
    s->next_id = (unsigned long long)time(NULL) << 20;
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ITC | MHD_USE_ERROR_LOG;
    if (ai->ai_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    s->daemon = MHD_start_daemon(flags, (uint16_t)opt->port, NULL, NULL, on_request, s, MHD_OPTION_SOCK_ADDR,
                                 ai->ai_addr, MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
                                 MHD_OPTION_CONNECTION_TIMEOUT, 600u, MHD_OPTION_CONNECTION_LIMIT, 2048u,
                                 MHD_OPTION_EXTERNAL_LOGGER, log_mhd, s, MHD_OPTION_END);
    freeaddrinfo(ai);
    if (!s->daemon) {
        pthread_mutex_destroy(&s->mu);
        free(s);
        return qs_errf(err, "cannot listen on %s:%d (address in use, or not an address of this machine)", host,
                       opt->port);
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
    s->port = info && info->port ? info->port : opt->port;
    *out = s;
    return 0;
}

int qs_server_port(const qs_server *s) { return s->port; }

void qs_server_set_ready(qs_server *s, const qs_server_model *m)
{
    pthread_mutex_lock(&s->mu);
    s->model = *m;
    s->state = QS_STATE_READY;
    pthread_mutex_unlock(&s->mu);
}

void qs_server_set_failed(qs_server *s, const char *why)
{
    pthread_mutex_lock(&s->mu);
    s->state = QS_STATE_FAILED;
    snprintf(s->failure, sizeof s->failure, "%s", why);
    pthread_mutex_unlock(&s->mu);
}

void qs_server_stop(qs_server *s)
{
    if (!s)
        return;
    MHD_socket listen_fd = MHD_quiesce_daemon(s->daemon);
    if (listen_fd != MHD_INVALID_SOCKET)
        close(listen_fd);
    pthread_mutex_lock(&s->mu);
    s->state = QS_STATE_STOPPING;
    qs_server_model m = s->model;
    pthread_mutex_unlock(&s->mu);
    if (m.engine)
        qs_engine_close(m.engine); /* in-flight requests get their final events and return */
    MHD_stop_daemon(s->daemon);
    qs_engine_free(m.engine);
    if (m.chat_template)
        qs_chat_template_free(m.chat_template);
    if (m.tokenizer)
        qs_tokenizer_free(m.tokenizer);
    pthread_mutex_destroy(&s->mu);
    free(s);
}
