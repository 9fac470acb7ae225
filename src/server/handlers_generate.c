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

#include "server/openai_request.h"
#include "server/openai_response.h"
#include "server/prompt_build.h"
#include "server/server_internal.h"
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
} gen_choice;

struct qs_gen {
    qs_server *s;
    qs_server_model m;
    qs_openai_request req;
    bool chat;
    char id[64];
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
        cJSON_Delete(g->choices[i].logprobs);
    }
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

static int prompt_of_choice(const gen_ctx *g, int choice) { return choice / g->req.n; }

/* Prompt tokens served from the prefix cache, each prompt counted once (by its first choice, as
 * prompt_tokens counts it once). */
static int cached_prompt_tokens(const gen_ctx *g)
{
    int n = 0;
    for (int k = 0; k < g->n_choices; k += g->req.n)
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
    int n_prompts = g->chat ? 1 : r->n_prompts;
    g->prompt_ids = calloc((size_t)n_prompts, sizeof *g->prompt_ids);
    g->prompt_len = calloc((size_t)n_prompts, sizeof *g->prompt_len);
    if (!g->prompt_ids || !g->prompt_len)
        return qs_api_errorf(e, 500, NULL, "out of memory");
    g->n_prompt_slots = n_prompts;
    if (g->chat) {
        char *text = NULL;
        size_t text_len = 0;
        if (qs_render_chat(&g->m, r->messages, r->tools, r->add_generation_prompt, r->chat_template_kwargs, &text,
                           &text_len, e))
            return -1;
        int rc = qs_encode_text(&g->m, text, text_len, false, &g->prompt_ids[0], &g->prompt_len[0], e);
        free(text);
        if (rc) {
            snprintf(e->param, sizeof e->param, "messages");
            return -1;
        }
    } else {
        for (int p = 0; p < n_prompts; p++) {
            if (r->prompts[p].text) {
                if (qs_encode_text(&g->m, r->prompts[p].text, r->prompts[p].text_len, true, &g->prompt_ids[p],
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
    g->n_choices = n_prompts * r->n;
    g->choices = calloc((size_t)g->n_choices, sizeof *g->choices);
    if (!g->choices)
        return qs_api_errorf(e, 500, NULL, "out of memory");
    return 0;
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
            q->sampling.seed += (uint64_t)(k % r->n); /* n samples of one seeded request differ */
        q->max_tokens = r->max_tokens > 0 ? r->max_tokens : g->m.max_model_len - q->n_prompt;
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
        return qs_api_errorf(e, 400, g->req.n > 1 ? "n" : "prompt", "%s", err.msg);
    if (st == QS_SUBMIT_STOPPED)
        return qs_api_errorf(e, 503, NULL, "%s", err.msg);
    return qs_api_errorf(e, 400, g->chat ? "messages" : "prompt", "%s", err.msg);
}

/* ---------------- non-streaming ---------------- */

static void absorb(gen_ctx *g, qs_engine_event *ev)
{
    gen_choice *c = &g->choices[ev->choice];
    if (ev->has_logprobs && ev->token >= 0) {
        if (!c->logprobs)
            c->logprobs = qs_resp_logprobs_new(g->chat);
        qs_resp_logprobs_add(c->logprobs, g->chat, g->m.tokenizer, &ev->lp, g->req.sampling.logprobs, c->len);
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

static enum MHD_Result answer_whole(gen_ctx *g, struct MHD_Connection *conn)
{
    qs_server *s = g->s;
    int completion_tokens = 0;
    for (int k = 0; k < g->n_choices; k++) {
        gen_choice *c = &g->choices[k];
        completion_tokens += c->completion_tokens;
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
    cJSON *root = qs_resp_base(g->chat, false, g->id, g->created, s->model_name);
    cJSON *choices = cJSON_GetObjectItem(root, "choices");
    for (int k = 0; k < g->n_choices; k++) {
        gen_choice *c = &g->choices[k];
        cJSON *ch = cJSON_CreateObject();
        cJSON_AddNumberToObject(ch, "index", k);
        if (g->chat) {
            cJSON *msg = cJSON_AddObjectToObject(ch, "message");
            cJSON_AddStringToObject(msg, "role", "assistant");
            qs_json_add_text(msg, "content", c->text ? c->text : "", c->text ? c->len : 0);
            cJSON_AddItemToObject(msg, "tool_calls", cJSON_CreateArray());
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
        qs_resp_add_finish_reason(ch, c->finish);
        if (!g->chat)
            cJSON_AddNullToObject(ch, "stop_reason");
        cJSON_AddItemToArray(choices, ch);
    }
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
            cJSON_AddStringToObject(delta, "role", "assistant");
            cJSON_AddStringToObject(delta, "content", "");
            cJSON_AddNullToObject(ch, "logprobs");
            cJSON_AddNullToObject(ch, "finish_reason");
            emit(g, chunk);
        } else if (g->req.echo) {
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

static void stream_event(gen_ctx *g, qs_engine_event *ev)
{
    gen_choice *c = &g->choices[ev->choice];
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
    bool want_lp = ev->has_logprobs && ev->token >= 0;
    if (ev->text_len == 0 && !want_lp && ev->finish == QS_FINISH_NONE)
        return; /* a token whose text is still held back (stop-string prefix, split character) */
    cJSON *ch;
    cJSON *chunk = chunk_with_choice(g, ev->choice, &ch);
    if (g->chat) {
        cJSON *delta = cJSON_AddObjectToObject(ch, "delta");
        if (ev->text_len || ev->finish == QS_FINISH_NONE)
            qs_json_add_text(delta, "content", ev->text, ev->text_len);
    } else {
        qs_json_add_text(ch, "text", ev->text, ev->text_len);
    }
    if (want_lp) {
        cJSON *lp = qs_resp_logprobs_new(g->chat);
        qs_resp_logprobs_add(lp, g->chat, g->m.tokenizer, &ev->lp, g->req.sampling.logprobs, c->len);
        cJSON_AddItemToObject(ch, "logprobs", lp);
    } else {
        cJSON_AddNullToObject(ch, "logprobs");
    }
    c->len += ev->text_len;
    qs_resp_add_finish_reason(ch, ev->finish);
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
    if (g->req.model && strcmp(g->req.model, s->model_name) != 0) {
        qs_api_errorf(&e, 404, "model", "The model '%.200s' does not exist; this server serves '%s'.", g->req.model,
                      s->model_name);
        qs_api_error_code(&e, "model_not_found");
        goto fail;
    }
    if (!qs_server_get_model(s, conn, &g->m)) {
        gen_free(g);
        return MHD_YES;
    }
    if (qs_check_logit_bias(&g->m, &g->req, &e) || build_prompts(g, &e) || submit(g, &e))
        goto fail;
    qs_server_new_id(s, chat ? "chatcmpl-" : "cmpl-", g->id, sizeof g->id);
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
