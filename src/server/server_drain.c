/* server_drain.c — shutting down without cutting anyone off. qs_server_drain (SIGTERM/SIGINT):
 *  1. new requests get 503 (with Connection: close); /health answers 503;
 *  2. running generations get up to --shutdown-timeout seconds to finish on their own;
 *  3. the rest are aborted: the engine gives every sequence its final event, so a stream ends
 *     with an error event, `data: [DONE]` and the chunked terminator, and a non-streaming request
 *     gets a 503 body (handlers_generate.c);
 *  4. it waits (briefly) until every response has been written out and every connection that
 *     has not completed a request yet has had the chance to send it (and get its 503).
 * qs_server_stop then closes the listener and the idle connections and frees everything. */
#include "server/conn_watch.h"
#include "server/server_internal.h"

#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "engine/engine.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"
#include "util/log.h"

#define FLUSH_GRACE_S 5.0 /* after the abort: time for the last bytes to reach the clients */

/* Waits until *count and *also (NULL: none; read under watch_mu) are 0 or timeout_s passed;
 * true if they reached 0. */
static bool wait_zero2(qs_server *s, const int *count, const int *also, double timeout_s)
{
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    long long ns = (long long)(timeout_s * 1e9);
    until.tv_sec += ns / 1000000000LL;
    until.tv_nsec += ns % 1000000000LL;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&s->watch_mu);
    while (*count > 0 || (also && *also > 0))
        if (pthread_cond_timedwait(&s->watch_cv, &s->watch_mu, &until))
            break;
    bool zero = *count == 0 && (!also || *also == 0);
    pthread_mutex_unlock(&s->watch_mu);
    return zero;
}

static bool wait_zero(qs_server *s, const int *count, double timeout_s)
{
    return wait_zero2(s, count, NULL, timeout_s);
}

void qs_server_drain(qs_server *s, double timeout_s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->mu);
    qs_engine *engine = s->state == QS_STATE_READY ? s->model.engine : NULL;
    if (s->state != QS_STATE_FAILED)
        s->state = QS_STATE_DRAINING;
    pthread_mutex_unlock(&s->mu);
    pthread_mutex_lock(&s->watch_mu);
    int running = s->n_gens;
    pthread_mutex_unlock(&s->watch_mu);
    qs_info("draining: new requests get 503; %d generation(s) running get up to %g s to finish", running,
            timeout_s);
    if (timeout_s > 0 && !wait_zero(s, &s->n_gens, timeout_s)) {
        pthread_mutex_lock(&s->watch_mu);
        running = s->n_gens;
        pthread_mutex_unlock(&s->watch_mu);
        qs_info("draining: %d generation(s) still running after %g s: ending them with an error", running,
                timeout_s);
    }
    if (engine)
        qs_engine_close(engine); /* every sequence left gets its final abort event */
    /* Every response written, and every connection opened before or during the drain that has
     * not completed a request given the chance to send it and read its 503 (an idle one holds
     * this up at most FLUSH_GRACE_S). */
    if (!wait_zero2(s, &s->n_busy, &s->n_fresh, FLUSH_GRACE_S))
        qs_warn("draining: responses still being written after %g s; closing their connections", FLUSH_GRACE_S);
    else
        qs_info("draining: every response was delivered");
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
        qs_engine_close(m.engine); /* waiting generations get their final events and resume */
    wait_zero(s, &s->n_gens, FLUSH_GRACE_S);
    MHD_stop_daemon(s->daemon);
    qs_watch_stop(s);
    qs_engine_free(m.engine);
    if (m.chat_template)
        qs_chat_template_free(m.chat_template);
    if (m.tokenizer)
        qs_tokenizer_free(m.tokenizer);
    pthread_mutex_destroy(&s->watch_mu);
    pthread_cond_destroy(&s->watch_cv);
    pthread_mutex_destroy(&s->mu);
    qs_cors_free(&s->cors);
    free(s->api_key);
    free(s);
}
