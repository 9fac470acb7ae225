/* handlers_generate.c — POST /v1/completions and /v1/chat/completions: validate, build token
 * ids, submit one engine sequence per (prompt, choice), then either collect every sequence and
 * answer one JSON object, or stream SSE chunks from a content reader as tokens arrive. Neither
 * blocks a thread: when no event is ready the connection is suspended, and the sink's notify
 * (called by the engine on every event) resumes it; libmicrohttpd then calls the access handler
 * (qs_generate_resume) or the content reader again. The watchdog (conn_watch.c) polls the
 * sockets of waiting generations: a client that goes away has its sequences aborted at once,
 * which frees their KV blocks at the engine's next step. A sequence aborted by a drain ends a
 * stream with an error event and [DONE], and a non-streaming request with a 503. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/chat_output.h"
#include "server/conn_watch.h"
#include "server/handlers.h"
#include "server/openai_request.h"
#include "server/openai_response.h"
#include "server/prompt_build.h"
#include "server/prompt_logprobs_json.h"
#include "server/request_policy.h"
#include "server/request_prepare.h"
#include "server/respond.h"
#include "tokenizer/tokenizer.h"
#include "util/json_strings.h"
#include "util/log.h"


typedef struct {
    char *text;
    size_t len, cap;
    cJSON *logprobs;
    qs_finish_reason finish;
    int completion_tokens;
    int cached_tokens;
    bool role_sent;
    char error[256];
    char *stop_str;             /* vLLM's stop_reason: the stop string, else the stop token id (-1: null) */
    int32_t stop_token;
    double cum_logprob;         /* best_of ranks choices by it */
    int tokens_so_far;          /* continuous_usage_stats */
    size_t echo_offset;         /* echo with logprobs: where the generated tokens' text_offset starts */
    qs_prompt_logprob *prompt_lp;
    int n_prompt_lp;
    qs_chat_stream *parsed;     /* streaming chat with a reasoning or tool parser */
} gen_choice;

struct qs_gen {
    qs_server *s;
    qs_server_model m;
    qs_openai_request req;
    bool chat;
    char id[320];
    int per_prompt;             /* sequences a prompt: best_of when it exceeds n, else n */
    int32_t *bad_word_ids;      /* request_prepare.h */
    int *bad_word_lens;
    int n_bad_words;
    qs_chat_output_config out_cfg; /* chat: reasoning / tool-call parsing of the output */
    int64_t created;
    int n_choices;
    gen_choice *choices;
    int32_t **prompt_ids;       /* [n_prompt_slots] */
    int *prompt_len;
    int n_prompt_slots;
    int total_prompt_tokens;
    qs_event_sink *sink;
    int n_finished;
    /* streaming output not yet handed to MHD */
    char *out;
    size_t out_len, out_off, out_cap;
    bool stream_done;
    /* suspension: wake_mu orders the engine's notify against the handler going to sleep */
    struct MHD_Connection *conn;
    pthread_mutex_t wake_mu;
    bool suspended, pending;
    qs_watch_gen watch;
    bool watched;
};
typedef struct qs_gen gen_ctx;

static int append(char **buf, size_t *len, size_t *cap, const char *data, size_t n)
{
    if (*len + n + 1 > *cap) {
        size_t c = *cap ? *cap : 256;
        while (c < *len + n + 1)
            c *= 2;
        char *p = realloc(*buf, c);
        if (!p)
            return -1;
        *buf = p;
        *cap = c;
    }
    if (n)
        memcpy(*buf + *len, data, n);
    *len += n;
    (*buf)[*len] = '\0';
    return 0;
}

static void gen_free(gen_ctx *g)
{
    if (!g)
        return;
    if (g->watched) /* first: the watchdog must not reach the sink once it is released */
        qs_watch_remove_gen(g->s, &g->watch);
    if (g->sink) {
        qs_event_sink_set_notify(g->sink, NULL, NULL); /* no notify runs past this point */
        if (g->n_finished < g->n_choices && g->m.engine) {
            qs_engine_abort_sink(g->m.engine, g->sink);
            qs_server_count_disconnect(g->s);
        }
        qs_event_sink_release(g->sink);
    }
    pthread_mutex_destroy(&g->wake_mu);
    for (int i = 0; i < g->n_choices && g->choices; i++) {
        free(g->choices[i].text);
        free(g->choices[i].stop_str);
        free(g->choices[i].prompt_lp);
        cJSON_Delete(g->choices[i].logprobs);
        qs_chat_stream_free(g->choices[i].parsed);
    }
    free(g->bad_word_ids);
    free(g->bad_word_lens);
    free(g->choices);
    for (int i = 0; i < g->n_prompt_slots && g->prompt_ids; i++)
        free(g->prompt_ids[i]);
    free(g->prompt_ids);
    free(g->prompt_len);
    free(g->out);
    qs_openai_request_free(&g->req);
    free(g);
}

/* The sink's notify (engine thread, sink lock held): resume the connection if it sleeps, else
 * remember that there is news so the handler does not go to sleep. */
static void gen_wake(void *arg)
{
    gen_ctx *g = arg;
    pthread_mutex_lock(&g->wake_mu);
    g->pending = true;
    if (g->suspended) {
        g->suspended = false;
        MHD_resume_connection(g->conn);
    }
    pthread_mutex_unlock(&g->wake_mu);
}

/* Takes the queued events; clears the news flag first so that anything pushed later is seen. */
static qs_engine_event *gen_take(gen_ctx *g)
{
    pthread_mutex_lock(&g->wake_mu);
    g->pending = false;
    pthread_mutex_unlock(&g->wake_mu);
    return qs_event_sink_take(g->sink, 0);
}

/* Suspends the connection unless news arrived since gen_take; true when suspended. */
static bool gen_sleep(gen_ctx *g)
{
    pthread_mutex_lock(&g->wake_mu);
    bool sleep = !g->pending;
    if (sleep) {
        g->suspended = true;
        MHD_suspend_connection(g->conn);
    }
    pthread_mutex_unlock(&g->wake_mu);
    return sleep;
}

static int prompt_of_choice(const gen_ctx *g, int choice) { return choice / g->per_prompt; }

/* Prompt tokens served from the prefix cache, each prompt counted once (by its first choice, as
 * prompt_tokens counts it once). */
static int cached_prompt_tokens(const gen_ctx *g)
{
    int n = 0;
    for (int k = 0; k < g->n_choices; k += g->per_prompt)
        n += g->choices[k].cached_tokens;
    return n;
}

/* Prompt text for echo: the text as sent, or the decoded ids; *len bytes (NULs included). */
static char *echo_text(const gen_ctx *g, int p, size_t *len)
{
    *len = 0;
    if (g->req.prompts[p].text) {
        char *t = malloc(g->req.prompts[p].text_len + 1);
        if (t) {
            memcpy(t, g->req.prompts[p].text, g->req.prompts[p].text_len + 1);
            *len = g->req.prompts[p].text_len;
        }
        return t;
    }
    char *text = NULL;
    qs_err err;
    if (qs_tokenizer_decode_n(g->m.tokenizer, g->req.prompts[p].ids, (size_t)g->req.prompts[p].n_ids, false, &text, len,
                              &err)) {
        *len = 0;
        return strdup("");
    }
    return text;
}

/* Token ids for every prompt, lengths checked against max_model_len. */
static int build_prompts(gen_ctx *g, qs_api_error *e)
{
    qs_openai_request *r = &g->req;
    /* with truncate_prompt_tokens a prompt longer than the context is tokenized, then cut */
    qs_server_model enc = g->m;
    if (r->x.truncate_prompt_tokens > 0)
        enc.max_prompt_bytes = 0;
    int n_prompts = g->chat ? 1 : r->n_prompts;
    g->prompt_ids = calloc((size_t)n_prompts, sizeof *g->prompt_ids);
    g->prompt_len = calloc((size_t)n_prompts, sizeof *g->prompt_len);
    if (!g->prompt_ids || !g->prompt_len)
        return qs_api_errorf(e, 500, NULL, "out of memory");
    g->n_prompt_slots = n_prompts;
    if (g->chat) {
        char *text = NULL;
        size_t text_len = 0;
        if (qs_render_chat_request(&g->m, r, &text, &text_len, e))
            return -1;
        int rc = qs_encode_text(&enc, text, text_len, r->x.add_special_tokens, &g->prompt_ids[0], &g->prompt_len[0], e);
        free(text);
        if (rc) {
            snprintf(e->param, sizeof e->param, "messages");
            return -1;
        }
    } else {
        for (int p = 0; p < n_prompts; p++) {
            if (r->prompts[p].text) {
                if (qs_encode_text(&enc, r->prompts[p].text, r->prompts[p].text_len, r->x.add_special_tokens, &g->prompt_ids[p],
                                   &g->prompt_len[p], e))
                    return -1;
            } else {
                if (qs_check_token_ids(&g->m, r->prompts[p].ids, r->prompts[p].n_ids, "prompt", e))
                    return -1;
                g->prompt_ids[p] = malloc((size_t)r->prompts[p].n_ids * sizeof(int32_t));
                if (!g->prompt_ids[p])
                    return qs_api_errorf(e, 500, NULL, "out of memory");
                memcpy(g->prompt_ids[p], r->prompts[p].ids, (size_t)r->prompts[p].n_ids * sizeof(int32_t));
                g->prompt_len[p] = r->prompts[p].n_ids;
            }
        }
    }
    const char *what = g->chat ? "messages" : "prompt";
    for (int p = 0; p < n_prompts; p++) {
        qs_truncate_prompt(r, g->prompt_ids[p], &g->prompt_len[p]);
        int len = g->prompt_len[p];
        if (len == 0)
            return qs_api_errorf(e, 400, what, "The %s is empty after tokenization.", what);
        if (len >= g->m.max_model_len)
            return qs_api_errorf(e, 400, what,
                                 "This model's maximum context length is %d tokens. However, your %s has %d tokens; "
                                 "at least one token must be left for the completion.",
                                 g->m.max_model_len, what, len);
        if (r->max_tokens > 0 && len + r->max_tokens > g->m.max_model_len)
            return qs_api_errorf(e, 400, g->chat && cJSON_GetObjectItem(r->root, "max_completion_tokens")
                                             ? "max_completion_tokens"
                                             : "max_tokens",
                                 "This model's maximum context length is %d tokens. However, you requested %d tokens "
                                 "(%d in the %s, %d in the completion). Please reduce the length of the %s or "
                                 "completion.",
                                 g->m.max_model_len, len + r->max_tokens, len, what, r->max_tokens, what);
        g->total_prompt_tokens += len;
    }
    g->per_prompt = r->x.best_of > r->n ? r->x.best_of : r->n;
    g->n_choices = n_prompts * g->per_prompt;
    g->choices = calloc((size_t)g->n_choices, sizeof *g->choices);
    if (!g->choices)
        return qs_api_errorf(e, 500, NULL, "out of memory");
    for (int k = 0; k < g->n_choices; k++)
        g->choices[k].stop_token = -1;
    return 0;
}

/* The think tags of the reasoning parsers (both write <think>...</think>). Without a </think>
 * token the end of the reasoning cannot be seen token by token: the grammar then applies from
 * the first token. */
static void reasoning_tokens(const qs_tokenizer *tok, qs_seq_request *q)
{
    q->reasoning_end_id = tok ? qs_tokenizer_token_to_id(tok, "</think>") : -1;
    q->reasoning_start_id = tok ? qs_tokenizer_token_to_id(tok, "<think>") : -1;
    q->grammar_after_reasoning = q->reasoning_end_id >= 0;
}

static int submit(gen_ctx *g, qs_api_error *e)
{
    qs_openai_request *r = &g->req;
    qs_seq_request *seqs = calloc((size_t)g->n_choices, sizeof *seqs);
    if (!seqs)
        return qs_api_errorf(e, 500, NULL, "out of memory");
    for (int k = 0; k < g->n_choices; k++) {
        int p = prompt_of_choice(g, k);
        qs_seq_request *q = &seqs[k];
        q->prompt = g->prompt_ids[p];
        q->n_prompt = g->prompt_len[p];
        q->sampling = r->sampling;
        if (q->sampling.has_seed)
            q->sampling.seed += (uint64_t)(k % g->per_prompt); /* n samples of one seeded request differ */
        if (g->per_prompt > r->n && q->sampling.logprobs < 0)
            q->sampling.logprobs = 0; /* best_of ranks by the cumulative logprob */
        q->max_tokens = r->max_tokens == 0 ? 1 : qs_request_max_tokens(g->s, r->max_tokens, g->m.max_model_len - q->n_prompt);
        q->prompt_only = r->max_tokens == 0;
        int prompt_top = r->x.prompt_logprobs;
        if (prompt_top < 0 && r->echo && r->sampling.logprobs >= 0)
            prompt_top = r->sampling.logprobs; /* echo with logprobs covers the prompt (vLLM) */
        if (prompt_top < 0 && r->x.chat_echo && !r->stream) /* vLLM's chat echo reports them too */
            prompt_top = r->sampling.logprobs > 0 ? r->sampling.logprobs : 0;
        q->prompt_logprobs = prompt_top >= 0;
        q->prompt_logprobs_top = prompt_top;
        q->allowed_token_ids = r->x.allowed_token_ids;
        q->n_allowed_token_ids = r->x.n_allowed_token_ids;
        q->bad_word_ids = g->bad_word_ids;
        q->bad_word_lens = g->bad_word_lens;
        q->n_bad_words = g->n_bad_words;
        q->min_tokens = r->min_tokens;
        q->ignore_eos = r->ignore_eos;
        q->stop_token_ids = r->stop_token_ids;
        q->n_stop_token_ids = r->n_stop_token_ids;
        q->stop = (const char *const *)r->stop;
        q->stop_lens = r->stop_lens;
        q->n_stop = r->n_stop;
        q->include_stop_str_in_output = r->include_stop_str_in_output;
        q->skip_special_tokens = r->skip_special_tokens;
        q->choice = k;
        q->cache_salt = r->cache_salt;
        q->grammar = r->grammar;
        if (r->grammar && g->s->reasoning != QS_REASONING_NONE) /* the grammar is for the answer (vLLM) */
            reasoning_tokens(g->m.tokenizer, q);
    }
    g->sink = qs_event_sink_new();
    if (!g->sink) {
        free(seqs);
        return qs_api_errorf(e, 500, NULL, "out of memory");
    }
    qs_err err = {{0}};
    qs_submit_status st = qs_engine_submit(g->m.engine, seqs, g->n_choices, g->sink, &err);
    free(seqs);
    if (st == QS_SUBMIT_OK)
        return 0;
    g->n_finished = g->n_choices; /* nothing to abort */
    if (st == QS_SUBMIT_QUEUE_FULL)
        return qs_api_errorf(e, 429, NULL, "%s", err.msg);
    if (st == QS_SUBMIT_TOO_MANY)
        return qs_api_errorf(e, 400, g->per_prompt > 1 ? (g->req.x.best_of > g->req.n ? "best_of" : "n") : "prompt",
                             "%s", err.msg);
    if (st == QS_SUBMIT_STOPPED)
        return qs_api_errorf(e, 503, NULL, "%s", err.msg);
    return qs_api_errorf(e, 400, g->chat ? "messages" : "prompt", "%s", err.msg);
}

/* ---------------- non-streaming ---------------- */

/* What every event tells a choice whether streamed or not: prompt logprobs (the first event),
 * the cumulative logprob, the token count and, on the last event, why it stopped. With echo
 * and logprobs the prompt tokens open the completions logprobs object. */
static void note_event(gen_ctx *g, gen_choice *c, qs_engine_event *ev)
{
    bool as_ids = g->req.x.return_tokens_as_token_ids;
    if (ev->prompt_lp) {
        c->prompt_lp = ev->prompt_lp;
        c->n_prompt_lp = ev->n_prompt_lp;
        ev->prompt_lp = NULL;
        if (!g->chat && g->req.echo && g->req.sampling.logprobs >= 0) {
            if (!c->logprobs)
                c->logprobs = qs_resp_logprobs_new(false);
            c->echo_offset = qs_resp_echo_logprobs(c->logprobs, g->m.tokenizer, c->prompt_lp, c->n_prompt_lp,
                                                   g->req.sampling.logprobs, as_ids);
        }
    }
    if (ev->token >= 0)
        c->tokens_so_far++;
    if (ev->has_logprobs && ev->token >= 0)
        c->cum_logprob += ev->lp.logprob;
    if (ev->finish != QS_FINISH_NONE) {
        c->stop_str = ev->stop_str;
        ev->stop_str = NULL;
        c->stop_token = ev->stop_token;
    }
}

static void absorb(gen_ctx *g, qs_engine_event *ev)
{
    gen_choice *c = &g->choices[ev->choice];
    note_event(g, c, ev);
    if (ev->has_logprobs && ev->token >= 0 && g->req.sampling.logprobs >= 0) {
        if (!c->logprobs)
            c->logprobs = qs_resp_logprobs_new(g->chat);
        qs_resp_logprobs_add_as(c->logprobs, g->chat, g->m.tokenizer, &ev->lp, g->req.sampling.logprobs,
                                c->echo_offset + c->len, g->req.x.return_tokens_as_token_ids);
    }
    append(&c->text, &c->len, &c->cap, ev->text, ev->text_len);
    if (ev->finish != QS_FINISH_NONE) {
        c->finish = ev->finish;
        c->completion_tokens = ev->completion_tokens;
        c->cached_tokens = ev->cached_tokens;
        snprintf(c->error, sizeof c->error, "%s", ev->error);
        g->n_finished++;
    }
}

/* vLLM's stop_reason: the matched stop string, the stop token id, or null. */
static void add_stop_reason(cJSON *ch, const gen_choice *c)
{
    if (c->stop_str)
        cJSON_AddStringToObject(ch, "stop_reason", c->stop_str);
    else if (c->stop_token >= 0)
        cJSON_AddNumberToObject(ch, "stop_reason", c->stop_token);
    else
        cJSON_AddNullToObject(ch, "stop_reason");
}

/* best_of: the n choices of each prompt with the highest cumulative logprob, in that order
 * (ties keep the earlier); picked[p * n + j] indexes g->choices. */
static void pick_best(const gen_ctx *g, int *picked)
{
    int n = g->req.n, per = g->per_prompt;
    for (int p = 0; p < g->n_choices / per; p++) {
        for (int j = 0; j < n; j++) {
            int best = -1;
            for (int k = p * per; k < (p + 1) * per; k++) {
                bool taken = false;
                for (int t = 0; t < j && !taken; t++)
                    taken = picked[p * n + t] == k;
                if (!taken && (best < 0 || g->choices[k].cum_logprob > g->choices[best].cum_logprob))
                    best = k;
            }
            picked[p * n + j] = best;
        }
    }
}

static enum MHD_Result answer_whole(gen_ctx *g, struct MHD_Connection *conn)
{
    qs_server *s = g->s;
    for (int k = 0; k < g->n_choices; k++) {
        gen_choice *c = &g->choices[k];
        qs_api_error e;
        if (c->finish == QS_FINISH_ERROR) {
            qs_api_errorf(&e, 500, NULL, "Generation failed: %s", c->error);
            return qs_send_error(s, conn, &e);
        }
        if (c->finish == QS_FINISH_ABORT) {
            qs_api_errorf(&e, 503, NULL, "The request was aborted because the server is shutting down.");
            return qs_send_error(s, conn, &e);
        }
    }
    int n_out = g->n_choices / g->per_prompt * g->req.n;
    int *picked = malloc((size_t)n_out * sizeof *picked);
    if (!picked)
        return MHD_NO;
    pick_best(g, picked);
    bool as_ids = g->req.x.return_tokens_as_token_ids;
    int completion_tokens = 0;
    cJSON *root = qs_resp_base(g->chat, false, g->id, g->created, s->model_name);
    cJSON *choices = cJSON_GetObjectItem(root, "choices");
    for (int out = 0; out < n_out; out++) {
        int k = picked[out];
        gen_choice *c = &g->choices[k];
        completion_tokens += c->completion_tokens;
        cJSON *ch = cJSON_CreateObject();
        bool tools_called = false;
        cJSON_AddNumberToObject(ch, "index", out);
        if (g->chat) {
            cJSON *msg = cJSON_AddObjectToObject(ch, "message");
            cJSON_AddStringToObject(msg, "role", qs_request_response_role(s, &g->req));
            char *content = NULL;
            size_t len = 0, cap = 0;
            if (g->req.x.chat_echo) {
                const char *echo = qs_chat_echo_content(&g->req);
                append(&content, &len, &cap, echo, strlen(echo));
            }
            append(&content, &len, &cap, c->text ? c->text : "", c->len);
            if (qs_chat_output_active(&g->out_cfg)) {
                if (qs_chat_output_message(&g->out_cfg, content ? content : "", len, msg) == 1)
                    tools_called = true;
            } else {
                qs_json_add_text(msg, "content", content ? content : "", len);
                cJSON_AddItemToObject(msg, "tool_calls", cJSON_CreateArray());
            }
            free(content);
        } else {
            char *full = NULL;
            size_t len = 0, cap = 0;
            if (g->req.echo) {
                size_t plen;
                char *p = echo_text(g, prompt_of_choice(g, k), &plen);
                if (p)
                    append(&full, &len, &cap, p, plen);
                free(p);
            }
            append(&full, &len, &cap, c->text ? c->text : "", c->len);
            qs_json_add_text(ch, "text", full ? full : "", full ? len : 0);
            free(full);
        }
        if (c->logprobs) {
            cJSON_AddItemToObject(ch, "logprobs", c->logprobs);
            c->logprobs = NULL;
        } else {
            cJSON_AddNullToObject(ch, "logprobs");
        }
        if (tools_called)
            cJSON_AddStringToObject(ch, "finish_reason", "tool_calls");
        else
            qs_resp_add_finish_reason(ch, c->finish);
        add_stop_reason(ch, c);
        if (!g->chat) {
            if (c->prompt_lp)
                cJSON_AddItemToObject(ch, "prompt_logprobs",
                                      qs_resp_prompt_logprobs(g->m.tokenizer, c->prompt_lp, c->n_prompt_lp, as_ids));
            else
                cJSON_AddNullToObject(ch, "prompt_logprobs");
        }
        cJSON_AddItemToArray(choices, ch);
    }
    if (g->chat) { /* chat reports the (single) prompt's logprobs beside the choices, as vLLM does */
        const gen_choice *c0 = &g->choices[0];
        if (c0->prompt_lp)
            cJSON_AddItemToObject(root, "prompt_logprobs",
                                  qs_resp_prompt_logprobs(g->m.tokenizer, c0->prompt_lp, c0->n_prompt_lp, as_ids));
        else
            cJSON_AddNullToObject(root, "prompt_logprobs");
    }
    free(picked);
    cJSON_AddItemToObject(root, "usage", qs_resp_usage(g->total_prompt_tokens, completion_tokens, cached_prompt_tokens(g)));
    return qs_send_json(s, conn, 200, root);
}

/* ---------------- streaming ---------------- */

static void emit(gen_ctx *g, cJSON *chunk)
{
    if (g->req.include_usage && !cJSON_GetObjectItem(chunk, "usage"))
        cJSON_AddNullToObject(chunk, "usage");
    size_t n = 0;
    char *sse = qs_resp_sse(chunk, &n);
    cJSON_Delete(chunk);
    if (sse)
        append(&g->out, &g->out_len, &g->out_cap, sse, n);
    free(sse);
}

static cJSON *chunk_with_choice(gen_ctx *g, int k, cJSON **choice)
{
    cJSON *chunk = qs_resp_base(g->chat, true, g->id, g->created, g->s->model_name);
    *choice = cJSON_CreateObject();
    cJSON_AddNumberToObject(*choice, "index", k);
    cJSON_AddItemToArray(cJSON_GetObjectItem(chunk, "choices"), *choice);
    return chunk;
}

static void stream_start(gen_ctx *g)
{
    for (int k = 0; k < g->n_choices; k++) {
        cJSON *ch;
        if (g->chat) {
            cJSON *chunk = chunk_with_choice(g, k, &ch);
            cJSON *delta = cJSON_AddObjectToObject(ch, "delta");
            cJSON_AddStringToObject(delta, "role", qs_request_response_role(g->s, &g->req));
            cJSON_AddStringToObject(delta, "content", "");
            cJSON_AddNullToObject(ch, "logprobs");
            cJSON_AddNullToObject(ch, "finish_reason");
            emit(g, chunk);
            const char *echo = g->req.x.chat_echo ? qs_chat_echo_content(&g->req) : "";
            if (echo[0]) {
                chunk = chunk_with_choice(g, k, &ch);
                cJSON_AddStringToObject(cJSON_AddObjectToObject(ch, "delta"), "content", echo);
                cJSON_AddNullToObject(ch, "logprobs");
                cJSON_AddNullToObject(ch, "finish_reason");
                emit(g, chunk);
            }
        } else if (g->req.echo && g->req.sampling.logprobs < 0) { /* with logprobs: on the first event */
            cJSON *chunk = chunk_with_choice(g, k, &ch);
            size_t plen;
            char *p = echo_text(g, prompt_of_choice(g, k), &plen);
            qs_json_add_text(ch, "text", p ? p : "", p ? plen : 0);
            free(p);
            cJSON_AddNullToObject(ch, "logprobs");
            cJSON_AddNullToObject(ch, "finish_reason");
            emit(g, chunk);
        }
    }
}

/* continuous_usage_stats: every chunk of a choice says its prompt and its tokens so far. */
static void add_running_usage(gen_ctx *g, cJSON *chunk, int k)
{
    if (!g->req.include_usage || !g->req.x.continuous_usage_stats)
        return;
    int prompt = g->prompt_len[prompt_of_choice(g, k)];
    cJSON_AddItemToObject(chunk, "usage", qs_resp_usage(prompt, g->choices[k].tokens_so_far, 0));
}

/* Echo with logprobs while streaming: the prompt text and its logprobs, once they arrive. */
static void stream_echo_with_logprobs(gen_ctx *g, int k)
{
    gen_choice *c = &g->choices[k];
    cJSON *ch;
    cJSON *chunk = chunk_with_choice(g, k, &ch);
    size_t plen = 0;
    char *p = echo_text(g, prompt_of_choice(g, k), &plen);
    qs_json_add_text(ch, "text", p ? p : "", plen);
    free(p);
    if (c->logprobs) {
        cJSON_AddItemToObject(ch, "logprobs", c->logprobs);
        c->logprobs = NULL;
    } else {
        cJSON_AddNullToObject(ch, "logprobs");
    }
    cJSON_AddNullToObject(ch, "finish_reason");
    add_running_usage(g, chunk, k);
    emit(g, chunk);
}

static void stream_event(gen_ctx *g, qs_engine_event *ev)
{
    gen_choice *c = &g->choices[ev->choice];
    bool first_prompt_lp = ev->prompt_lp != NULL;
    note_event(g, c, ev);
    if (first_prompt_lp && !g->chat && g->req.echo && g->req.sampling.logprobs >= 0)
        stream_echo_with_logprobs(g, ev->choice);
    if (ev->finish != QS_FINISH_NONE) {
        c->finish = ev->finish;
        c->completion_tokens = ev->completion_tokens;
        c->cached_tokens = ev->cached_tokens;
        g->n_finished++;
    }
    if (ev->finish == QS_FINISH_ERROR || ev->finish == QS_FINISH_ABORT) {
        /* An error event the OpenAI clients raise; [DONE] and the terminator follow. */
        qs_api_error e;
        if (ev->finish == QS_FINISH_ERROR)
            qs_api_errorf(&e, 500, NULL, "Generation failed: %s", ev->error);
        else
            qs_api_errorf(&e, 503, NULL, "The request was aborted because the server is shutting down.");
        char *body = qs_api_error_json(&e);
        if (body) {
            append(&g->out, &g->out_len, &g->out_cap, "data: ", 6);
            append(&g->out, &g->out_len, &g->out_cap, body, strlen(body));
            append(&g->out, &g->out_len, &g->out_cap, "\n\n", 2);
        }
        free(body);
        return;
    }
    bool want_lp = ev->has_logprobs && ev->token >= 0 && g->req.sampling.logprobs >= 0;
    cJSON *parsed_delta = NULL;
    bool tools_called = false;
    if (g->chat && qs_chat_output_active(&g->out_cfg)) {
        if (!c->parsed)
            c->parsed = qs_chat_stream_new(&g->out_cfg);
        parsed_delta = cJSON_CreateObject();
        bool grew = c->parsed && qs_chat_stream_feed(c->parsed, ev->text, ev->text_len,
                                                     ev->finish != QS_FINISH_NONE, parsed_delta);
        tools_called = qs_chat_stream_tools_called(c->parsed);
        if (!grew && !want_lp && ev->finish == QS_FINISH_NONE) {
            cJSON_Delete(parsed_delta);
            return; /* markup or a tag still being written */
        }
    } else if (ev->text_len == 0 && !want_lp && ev->finish == QS_FINISH_NONE) {
        return; /* a token whose text is still held back (stop-string prefix, split character) */
    }
    cJSON *ch;
    cJSON *chunk = chunk_with_choice(g, ev->choice, &ch);
    if (parsed_delta) {
        cJSON_AddItemToObject(ch, "delta", parsed_delta);
    } else if (g->chat) {
        cJSON *delta = cJSON_AddObjectToObject(ch, "delta");
        if (ev->text_len || ev->finish == QS_FINISH_NONE)
            qs_json_add_text(delta, "content", ev->text, ev->text_len);
    } else {
        qs_json_add_text(ch, "text", ev->text, ev->text_len);
    }
    if (want_lp) {
        cJSON *lp = qs_resp_logprobs_new(g->chat);
        qs_resp_logprobs_add_as(lp, g->chat, g->m.tokenizer, &ev->lp, g->req.sampling.logprobs,
                                c->echo_offset + c->len, g->req.x.return_tokens_as_token_ids);
        cJSON_AddItemToObject(ch, "logprobs", lp);
    } else {
        cJSON_AddNullToObject(ch, "logprobs");
    }
    c->len += ev->text_len;
    if (tools_called && ev->finish != QS_FINISH_NONE)
        cJSON_AddStringToObject(ch, "finish_reason", "tool_calls");
    else
        qs_resp_add_finish_reason(ch, ev->finish);
    if (ev->finish != QS_FINISH_NONE)
        add_stop_reason(ch, c);
    add_running_usage(g, chunk, ev->choice);
    emit(g, chunk);
}

static void stream_end(gen_ctx *g)
{
    if (g->req.include_usage) {
        int completion = 0;
        for (int k = 0; k < g->n_choices; k++)
            completion += g->choices[k].completion_tokens;
        cJSON *chunk = qs_resp_base(g->chat, true, g->id, g->created, g->s->model_name);
        cJSON_AddItemToObject(chunk, "usage", qs_resp_usage(g->total_prompt_tokens, completion, cached_prompt_tokens(g)));
        emit(g, chunk);
    }
    append(&g->out, &g->out_len, &g->out_cap, "data: [DONE]\n\n", 14);
    g->stream_done = true;
}

static ssize_t stream_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    gen_ctx *g = cls;
    while (g->out_off == g->out_len) {
        if (g->stream_done)
            return MHD_CONTENT_READER_END_OF_STREAM;
        if (atomic_load(&g->watch.gone))
            return MHD_CONTENT_READER_END_WITH_ERROR; /* gen_free aborts what is left */
        g->out_off = g->out_len = 0;
        qs_engine_event *list = gen_take(g);
        for (qs_engine_event *ev = list; ev; ev = ev->next)
            stream_event(g, ev);
        qs_engine_event_free_list(list);
        if (g->n_finished == g->n_choices && !g->stream_done)
            stream_end(g);
        if (g->out_off == g->out_len && !g->stream_done && gen_sleep(g))
            return 0; /* suspended until the engine has news */
    }
    size_t n = g->out_len - g->out_off;
    if (n > max)
        n = max;
    memcpy(buf, g->out + g->out_off, n);
    g->out_off += n;
    return (ssize_t)n;
}

static void stream_free(void *cls) { gen_free(cls); }

static enum MHD_Result answer_stream(gen_ctx *g, struct MHD_Connection *conn)
{
    stream_start(g);
    struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, stream_reader, g, stream_free);
    if (!r) {
        gen_free(g);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", "text/event-stream");
    MHD_add_response_header(r, "Cache-Control", "no-cache");
    qs_cors_add_headers(&g->s->cors, conn, r);
    enum MHD_Result ret = MHD_queue_response(conn, 200, r);
    MHD_destroy_response(r); /* the response owns g now */
    qs_server_count(g->s, 200);
    return ret;
}

/* ---------------- entry ---------------- */

/* Non-streaming: absorbs what the engine produced; answers once every sequence finished, else
 * suspends the connection and parks g in *pending until the engine resumes it. */
static enum MHD_Result collect(gen_ctx *g, struct MHD_Connection *conn, qs_gen **pending)
{
    for (;;) {
        if (atomic_load(&g->watch.gone)) {
            *pending = NULL;
            gen_free(g); /* aborts the sequences */
            return MHD_NO;
        }
        qs_engine_event *list = gen_take(g);
        for (qs_engine_event *ev = list; ev; ev = ev->next)
            absorb(g, ev);
        qs_engine_event_free_list(list);
        if (g->n_finished == g->n_choices) {
            *pending = NULL;
            enum MHD_Result r = answer_whole(g, conn);
            gen_free(g);
            return r;
        }
        if (gen_sleep(g)) {
            *pending = g;
            return MHD_YES;
        }
    }
}

enum MHD_Result qs_generate_resume(qs_gen *g, struct MHD_Connection *conn, qs_gen **pending)
{
    return collect(g, conn, pending);
}

void qs_generate_cancel(qs_gen *g) { gen_free(g); }

enum MHD_Result qs_handle_generate(qs_server *s, struct MHD_Connection *conn, bool chat, const char *body, size_t len,
                                   qs_gen **pending)
{
    *pending = NULL;
    gen_ctx *g = calloc(1, sizeof *g);
    if (!g)
        return MHD_NO;
    pthread_mutex_init(&g->wake_mu, NULL);
    g->s = s;
    g->chat = chat;
    g->conn = conn;
    qs_api_error e;
    if (qs_openai_request_parse(chat ? QS_API_CHAT : QS_API_COMPLETIONS, body, len, &g->req, &e))
        goto fail;
    if (g->req.model && !qs_server_serves_name(s, g->req.model)) {
        qs_api_errorf(&e, 404, "model", "The model '%.200s' does not exist; this server serves '%s'.", g->req.model,
                      s->model_name);
        qs_api_error_code(&e, "model_not_found");
        goto fail;
    }
    if (chat && qs_tool_request_check_server(&g->req.tool, &s->tools, &e))
        goto fail;
    if (chat) {
        g->out_cfg.reasoning = s->reasoning;
        g->out_cfg.tools = g->req.tool.choice == QS_TOOL_CHOICE_AUTO ? s->tools.parser : NULL;
        g->out_cfg.parallel_tool_calls = g->req.tool.parallel_tool_calls;
        g->out_cfg.forced_required = g->req.tool.choice == QS_TOOL_CHOICE_REQUIRED;
        g->out_cfg.forced_name = g->req.tool.choice == QS_TOOL_CHOICE_NAMED ? g->req.tool.named : NULL;
        if (g->out_cfg.tools && g->out_cfg.tools->keep_special_tokens)
            g->req.skip_special_tokens = false; /* the parser's markers may be special tokens */
    }
    if (!qs_server_get_model(s, conn, &g->m)) {
        gen_free(g);
        return MHD_YES;
    }
    if (qs_request_apply_policy(s, &g->req, &e)) /* the defaults are set before the server is ready */
        goto fail;
    if (qs_check_logit_bias(&g->m, &g->req, &e) || qs_check_allowed_token_ids(&g->m, &g->req, &e) ||
        qs_encode_bad_words(&g->m, &g->req, &g->bad_word_ids, &g->bad_word_lens, &g->n_bad_words, &e) ||
        build_prompts(g, &e) || submit(g, &e))
        goto fail;
    if (g->req.x.request_id) /* vLLM: the response id carries the client's request_id */
        snprintf(g->id, sizeof g->id, "%s%s", chat ? "chatcmpl-" : "cmpl-", g->req.x.request_id);
    else
        qs_server_new_id(s, chat ? "chatcmpl-" : "cmpl-", g->id, sizeof g->id);
    qs_request_log(s, g->id, &g->req, g->m.tokenizer, g->prompt_ids[0], g->prompt_len[0], g->n_prompt_slots);
    g->created = (int64_t)time(NULL);
    g->watch.fd = qs_connection_fd(conn);
    g->watch.engine = g->m.engine;
    g->watch.sink = g->sink;
    qs_watch_add_gen(s, &g->watch);
    g->watched = true;
    qs_event_sink_set_notify(g->sink, gen_wake, g);
    if (g->req.stream)
        return answer_stream(g, conn);
    return collect(g, conn, pending);
fail:;
    enum MHD_Result ret = qs_send_error(s, conn, &e);
    gen_free(g);
    return ret;
}
