/* respond.c — how every part of the server answers a request: the response helpers (JSON, text
 * and OpenAI error bodies, with the CORS headers, Retry-After on 429 / 503 and Connection: close
 * during a drain, each counted for /metrics), fresh response ids, the served-model snapshot and
 * the state queries the handlers make, and client-disconnect detection on a connection's socket.
 * The handlers, the watchdog and http.c's plumbing all use it; it calls none of them. */
#include "server/respond.h"

#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "util/json_strings.h"

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
    qs_cors_add_headers(&s->cors, c, r);
    if (status == 429)
        MHD_add_response_header(r, "Retry-After", "1");
    else if (status == 503)
        MHD_add_response_header(r, "Retry-After", "5");
    if (qs_server_draining(s))
        MHD_add_response_header(r, "Connection", "close");
    enum MHD_Result ret = MHD_queue_response(c, (unsigned)status, r);
    MHD_destroy_response(r);
    qs_server_count(s, status);
    return ret;
}

enum MHD_Result qs_send_json(qs_server *s, struct MHD_Connection *c, int status, cJSON *body)
{
    char *text = qs_json_print(body);
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

bool qs_server_draining(qs_server *s)
{
    pthread_mutex_lock(&s->mu);
    bool d = s->state == QS_STATE_DRAINING || s->state == QS_STATE_STOPPING;
    pthread_mutex_unlock(&s->mu);
    return d;
}

bool qs_server_serves_name(const qs_server *s, const char *name)
{
    for (int i = 0; i < s->n_model_names; i++)
        if (!strcmp(s->model_names[i], name))
            return true;
    return false;
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
                  st == QS_STATE_LOADING ? "The model is still loading; retry when /health answers 200."
                  : st == QS_STATE_DRAINING || st == QS_STATE_STOPPING
                      ? "The server is shutting down and accepts no new requests."
                      : "The model failed to load; see the server log.");
    qs_send_error(s, c, &e);
    return false;
}
