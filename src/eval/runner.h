/* runner.h — sends every prompt to the server concurrently (libcurl multi, at most
 * max_concurrency transfers in flight) the way vLLM's gsm8k_eval.py does: POST /v1/completions
 * {"prompt", "max_tokens", "stop": ["Question", "Assistant:", "<|separator|>"], "temperature",
 * "seed"} with no "model" field, or POST /v1/chat/completions with one user message holding the
 * prompt. A failed request (transport error, HTTP error, unreadable body) is reported on stderr
 * and scores as an empty answer, as in vLLM. Progress goes to stderr. */
#ifndef QS_EVAL_RUNNER_H
#define QS_EVAL_RUNNER_H

#include <stdbool.h>
#include <stddef.h>

#include "util/error.h"

#define QS_EVAL_DEFAULT_CONCURRENCY 100 /* aiohttp's default connector limit, used by vLLM */

typedef struct qs_eval_request_params {
    const char *base_url;       /* "http://127.0.0.1:8000" */
    bool chat;                  /* /v1/chat/completions instead of /v1/completions */
    const char *model;          /* sent in chat mode when not NULL */
    int max_tokens;
    bool send_temperature;
    double temperature;
    bool send_seed;
    long long seed;
    double timeout_s;           /* per request, like aiohttp's ClientTimeout(total=) */
    int max_concurrency;        /* 0 = QS_EVAL_DEFAULT_CONCURRENCY */
    bool progress;              /* progress lines on stderr */
} qs_eval_request_params;

typedef struct qs_eval_response {
    char *text;                 /* the completion ("" when the request failed) */
    long completion_tokens;     /* usage.completion_tokens, 0 if absent */
    double latency_s;           /* from sending to the last byte */
    bool failed;
} qs_eval_response;

/* The JSON body for one prompt (malloc'd), in vLLM's key order. */
char *qs_eval_request_body(const qs_eval_request_params *p, const char *prompt);
/* Fills out[i] for every prompt and *wall_s with the whole run's time. Returns -1 only when the
 * run could not start or was interrupted (Ctrl-C); failed requests are marked, not fatal. */
int qs_eval_run_requests(const qs_eval_request_params *p, char *const *prompts, size_t n, qs_eval_response *out,
                         double *wall_s, qs_err *err);
void qs_eval_responses_free(qs_eval_response *r, size_t n);

#endif
