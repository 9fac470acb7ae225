/* event_sink.h — what a sequence produces and how it travels: the engine event (token, released
 * text, logprobs, finish reason) and the event sink, a thread-safe, reference-counted queue that
 * the engine thread pushes to and one HTTP request waits on. Below the engine and its sequences
 * (seq.h), which both produce events, and the server, which reads them. */
#ifndef QS_ENGINE_EVENT_SINK_H
#define QS_ENGINE_EVENT_SINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/prompt_logprobs.h"
#include "engine/sampler.h"

typedef enum {
    QS_FINISH_NONE = 0,
    QS_FINISH_STOP,    /* EOS, a stop token id or a stop string */
    QS_FINISH_LENGTH,  /* max_tokens or max_model_len reached */
    QS_FINISH_ABORT,   /* the client went away or the server is shutting down */
    QS_FINISH_ERROR,   /* the forward pass failed */
    QS_FINISH_COUNT
} qs_finish_reason;

const char *qs_finish_reason_name(qs_finish_reason r);

/* --- What a sequence produces --- */
typedef struct qs_engine_event {
    int choice;                /* the sequence's index inside its group */
    int32_t token;             /* the sampled token, or -1 on a final event without one */
    char *text;                /* text released by this token (malloc'd, NUL-terminated, may be "") */
    size_t text_len;
    bool has_logprobs;
    qs_token_logprobs lp;
    qs_finish_reason finish;   /* != NONE on the sequence's last event */
    int prompt_tokens;         /* on the last event */
    int completion_tokens;     /* on the last event */
    int cached_tokens;         /* on the last event: prompt tokens found in the prefix cache */
    char error[256];           /* on QS_FINISH_ERROR */
    /* why a QS_FINISH_STOP ended (vLLM's stop_reason): the stop string matched (malloc'd), or
     * the stop token id matched (-1: neither, e.g. EOS) */
    char *stop_str;
    int32_t stop_token;
    /* prompt_logprobs (engine/prompt_logprobs.h): on the sequence's first event, one entry per
     * prompt token, the first empty (nothing predicts it); malloc'd, NULL when not asked */
    qs_prompt_logprob *prompt_lp;
    int n_prompt_lp;
    struct qs_engine_event *next;
} qs_engine_event;

void qs_engine_event_free(qs_engine_event *ev);
void qs_engine_event_free_list(qs_engine_event *ev);

/* A queue of events shared by the engine thread and one HTTP request; reference counted (the
 * engine holds one reference per live sequence). */
typedef struct qs_event_sink qs_event_sink;
qs_event_sink *qs_event_sink_new(void);
void qs_event_sink_retain(qs_event_sink *s);
void qs_event_sink_release(qs_event_sink *s);
/* Appends one event (engine side). */
void qs_event_sink_push(qs_event_sink *s, qs_engine_event *ev);
/* Takes every queued event in order, waiting up to timeout_ms for the first one (0 = don't wait).
 * Returns NULL when none arrived in time. */
qs_engine_event *qs_event_sink_take(qs_event_sink *s, int timeout_ms);
/* Calls notify(arg) after every push, with the sink's lock held (so notify must not call back
 * into the sink); NULL detaches it, and once set_notify returns no earlier notify is running.
 * The HTTP server uses it to resume a suspended connection instead of blocking a thread. */
void qs_event_sink_set_notify(qs_event_sink *s, void (*notify)(void *arg), void *arg);

#endif
