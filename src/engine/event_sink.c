/* event_sink.c — engine events and the event sink (see event_sink.h): a mutex-guarded list with a
 * condition variable on the monotonic clock, so a waiting HTTP thread's timeout ignores changes
 * of the wall clock. */
#include "engine/event_sink.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>

void qs_engine_event_free(qs_engine_event *ev)
{
    if (!ev)
        return;
    free(ev->text);
    free(ev->stop_str);
    free(ev->prompt_lp);
    free(ev);
}

void qs_engine_event_free_list(qs_engine_event *ev)
{
    while (ev) {
        qs_engine_event *next = ev->next;
        qs_engine_event_free(ev);
        ev = next;
    }
}

struct qs_event_sink {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int refs;
    qs_engine_event *head, *tail;
    void (*notify)(void *arg); /* called on every push, under mu (qs_event_sink_set_notify) */
    void *notify_arg;
};

qs_event_sink *qs_event_sink_new(void)
{
    qs_event_sink *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    pthread_mutex_init(&s->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->cv, &ca);
    pthread_condattr_destroy(&ca);
    s->refs = 1;
    return s;
}

void qs_event_sink_retain(qs_event_sink *s)
{
    pthread_mutex_lock(&s->mu);
    s->refs++;
    pthread_mutex_unlock(&s->mu);
}

void qs_event_sink_release(qs_event_sink *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->mu);
    int left = --s->refs;
    pthread_mutex_unlock(&s->mu);
    if (left)
        return;
    qs_engine_event_free_list(s->head);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    free(s);
}

void qs_event_sink_push(qs_event_sink *s, qs_engine_event *ev)
{
    ev->next = NULL;
    pthread_mutex_lock(&s->mu);
    if (s->tail)
        s->tail->next = ev;
    else
        s->head = ev;
    s->tail = ev;
    pthread_cond_signal(&s->cv);
    if (s->notify)
        s->notify(s->notify_arg);
    pthread_mutex_unlock(&s->mu);
}

void qs_event_sink_set_notify(qs_event_sink *s, void (*notify)(void *arg), void *arg)
{
    pthread_mutex_lock(&s->mu);
    s->notify = notify;
    s->notify_arg = arg;
    pthread_mutex_unlock(&s->mu);
}

qs_engine_event *qs_event_sink_take(qs_event_sink *s, int timeout_ms)
{
    pthread_mutex_lock(&s->mu);
    if (!s->head && timeout_ms > 0) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += timeout_ms / 1000;
        until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        while (!s->head)
            if (pthread_cond_timedwait(&s->cv, &s->mu, &until))
                break;
    }
    qs_engine_event *list = s->head;
    s->head = s->tail = NULL;
    pthread_mutex_unlock(&s->mu);
    return list;
}

const char *qs_finish_reason_name(qs_finish_reason r)
{
    switch (r) {
    case QS_FINISH_STOP: return "stop";
    case QS_FINISH_LENGTH: return "length";
    case QS_FINISH_ABORT: return "abort";
    case QS_FINISH_ERROR: return "error";
    default: return "none";
    }
}
