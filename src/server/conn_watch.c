/* conn_watch.c — the registry of open connections and of waiting generations, and the watchdog
 * thread that looks after both.
 *  - Every TCP connection is registered when libmicrohttpd accepts it and removed when it closes.
 *    While a connection owes the server a request (from accept, or from the end of its previous
 *    response) it has --client-timeout seconds to deliver complete headers and body; past that the
 *    watchdog shuts its socket down, which libmicrohttpd then sees as a closed peer and cleans up.
 *    This is what stops slowloris crowds and idle keep-alive connections from holding slots (an
 *    inactivity timeout alone is defeated by a byte every few seconds).
 *  - A generation waiting for tokens has its connection suspended, and libmicrohttpd watches no
 *    suspended socket; the watchdog polls those sockets and aborts the sequences of a client that
 *    went away, which wakes the generation (its sink gets the final events).
 * libmicrohttpd calls the close notification before it closes the socket, and the registry lock
 * is held both there and while the watchdog touches a socket, so the watchdog never shuts down a
 * descriptor that was reused for another connection. */
#include "server/conn_watch.h"
#include "server/respond.h"

#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

#include "engine/engine.h"
#include "util/log.h"

#define WATCH_PERIOD_MS 100

static long long now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static qs_conn_rec *rec_of(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info ? info->socket_context : NULL;
}

void qs_watch_notify_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                                enum MHD_ConnectionNotificationCode code)
{
    qs_server *s = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        qs_conn_rec *r = calloc(1, sizeof *r);
        *socket_context = r;
        if (!r)
            return; /* unwatched, still served */
        r->fd = qs_connection_fd(c);
        pthread_mutex_lock(&s->watch_mu);
        r->deadline_ms = now_ms() + (long long)s->client_timeout_s * 1000;
        r->next = s->conns;
        if (s->conns)
            s->conns->prev = r;
        s->conns = r;
        s->n_conns++;
        s->n_fresh++;
        pthread_mutex_unlock(&s->watch_mu);
        return;
    }
    qs_conn_rec *r = *socket_context;
    if (!r)
        return;
    pthread_mutex_lock(&s->watch_mu);
    if (r->prev)
        r->prev->next = r->next;
    else
        s->conns = r->next;
    if (r->next)
        r->next->prev = r->prev;
    s->n_conns--;
    if (!r->served)
        s->n_fresh--;
    pthread_cond_broadcast(&s->watch_cv);
    pthread_mutex_unlock(&s->watch_mu);
    free(r);
    *socket_context = NULL;
}

void qs_watch_request_begins(qs_server *s, struct MHD_Connection *c)
{
    (void)c; /* the deadline runs on until the body is complete: see qs_watch_request_read */
    pthread_mutex_lock(&s->watch_mu);
    s->n_busy++;
    pthread_mutex_unlock(&s->watch_mu);
}

void qs_watch_request_read(qs_server *s, struct MHD_Connection *c)
{
    qs_conn_rec *r = rec_of(c);
    if (!r)
        return;
    pthread_mutex_lock(&s->watch_mu);
    r->deadline_ms = 0;
    pthread_mutex_unlock(&s->watch_mu);
}

void qs_watch_request_ends(qs_server *s, struct MHD_Connection *c)
{
    qs_conn_rec *r = rec_of(c);
    pthread_mutex_lock(&s->watch_mu);
    s->n_busy--;
    if (r) {
        r->deadline_ms = now_ms() + (long long)s->client_timeout_s * 1000;
        if (!r->served)
            s->n_fresh--;
        r->served = true;
    }
    pthread_cond_broadcast(&s->watch_cv);
    pthread_mutex_unlock(&s->watch_mu);
}

void qs_watch_add_gen(qs_server *s, qs_watch_gen *w)
{
    pthread_mutex_lock(&s->watch_mu);
    w->prev = NULL;
    w->next = s->gens;
    if (s->gens)
        s->gens->prev = w;
    s->gens = w;
    s->n_gens++;
    pthread_mutex_unlock(&s->watch_mu);
}

void qs_watch_remove_gen(qs_server *s, qs_watch_gen *w)
{
    pthread_mutex_lock(&s->watch_mu);
    if (w->prev)
        w->prev->next = w->next;
    else
        s->gens = w->next;
    if (w->next)
        w->next->prev = w->prev;
    w->prev = w->next = NULL;
    s->n_gens--;
    pthread_cond_broadcast(&s->watch_cv);
    pthread_mutex_unlock(&s->watch_mu);
}

static void *watch_main(void *arg)
{
    qs_server *s = arg;
    pthread_mutex_lock(&s->watch_mu);
    while (!s->watch_stop) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_nsec += WATCH_PERIOD_MS * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&s->watch_cv, &s->watch_mu, &until);
        if (s->watch_stop)
            break;
        long long now = now_ms();
        int expired = 0;
        for (qs_conn_rec *r = s->conns; r; r = r->next)
            if (r->deadline_ms && now >= r->deadline_ms && r->fd >= 0) {
                shutdown(r->fd, SHUT_RDWR);
                r->deadline_ms = 0;
                expired++;
            }
        if (expired)
            qs_debug("http: closed %d connection(s) that sent no complete request within %d s", expired,
                     s->client_timeout_s);
        for (qs_watch_gen *w = s->gens; w; w = w->next)
            if (!atomic_load(&w->gone) && qs_client_gone(w->fd)) {
                atomic_store(&w->gone, true);
                qs_engine_abort_sink(w->engine, w->sink); /* the final events resume the connection */
            }
    }
    pthread_mutex_unlock(&s->watch_mu);
    return NULL;
}

int qs_watch_start(qs_server *s)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->watch_cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&s->watch_mu, NULL);
    if (pthread_create(&s->watch_thread, NULL, watch_main, s))
        return -1;
    s->watch_started = true;
    return 0;
}

void qs_watch_stop(qs_server *s)
{
    if (!s->watch_started)
        return;
    pthread_mutex_lock(&s->watch_mu);
    s->watch_stop = true;
    pthread_cond_broadcast(&s->watch_cv);
    pthread_mutex_unlock(&s->watch_mu);
    pthread_join(s->watch_thread, NULL);
    s->watch_started = false;
}
