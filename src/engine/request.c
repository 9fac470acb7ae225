/* request.c — a sequence's life inside the engine: built from a qs_seq_request, it grows by one
 * token per sample, turns tokens into text with the tokenizer's streaming decoder, and decides
 * when it ends (EOS, stop token ids, stop strings, max_tokens, max_model_len). Text that could be
 * the start of a stop string is held back until it is known not to be one, so a stop string never
 * reaches the client, not even split across streamed chunks. */
#include "engine/request.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tokenizer/tokenizer.h"

double qs_now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void qs_seq_free(qs_seq *s)
{
    if (!s)
        return;
    free(s->tokens);
    free(s->blocks);
    free(s->logit_bias);
    free(s->stop_token_ids);
    for (int i = 0; i < s->n_stop; i++)
        free(s->stop[i]);
    free(s->stop);
    free(s->held);
    if (s->sampler)
        qs_sampler_state_free(s->sampler);
    if (s->decoder)
        qs_decode_stream_free(s->decoder);
    if (s->sink)
        qs_event_sink_release(s->sink);
    free(s);
}

qs_seq *qs_seq_new(const qs_seq_request *r, uint64_t id, qs_event_sink *sink, const qs_tokenizer *tok,
                   int vocab_size, uint64_t engine_seed, qs_err *err)
{
    if (r->n_prompt <= 0 || r->max_tokens <= 0) {
        qs_errf(err, "a sequence needs at least one prompt token and max_tokens > 0");
        return NULL;
    }
    for (int i = 0; i < r->n_prompt; i++)
        if (r->prompt[i] < 0 || r->prompt[i] >= vocab_size) {
            qs_errf(err, "prompt token id %d is outside the vocabulary [0, %d)", r->prompt[i], vocab_size);
            return NULL;
        }
    qs_seq *s = calloc(1, sizeof *s);
    if (!s) {
        qs_errf(err, "out of memory");
        return NULL;
    }
    s->id = id;
    s->cap_tokens = r->n_prompt + r->max_tokens + 1;
    s->tokens = malloc((size_t)s->cap_tokens * sizeof *s->tokens);
    if (!s->tokens)
        goto oom;
    memcpy(s->tokens, r->prompt, (size_t)r->n_prompt * sizeof *s->tokens);
    s->n_tokens = s->n_prompt = r->n_prompt;
    s->sampling = r->sampling;
    if (r->sampling.n_logit_bias > 0) {
        s->logit_bias = malloc((size_t)r->sampling.n_logit_bias * sizeof *s->logit_bias);
        if (!s->logit_bias)
            goto oom;
        memcpy(s->logit_bias, r->sampling.logit_bias, (size_t)r->sampling.n_logit_bias * sizeof *s->logit_bias);
    }
    s->sampling.logit_bias = s->logit_bias;
    s->max_tokens = r->max_tokens;
    s->min_tokens = r->min_tokens;
    s->ignore_eos = r->ignore_eos;
    if (r->n_stop_token_ids > 0) {
        s->stop_token_ids = malloc((size_t)r->n_stop_token_ids * sizeof *s->stop_token_ids);
        if (!s->stop_token_ids)
            goto oom;
        memcpy(s->stop_token_ids, r->stop_token_ids, (size_t)r->n_stop_token_ids * sizeof *s->stop_token_ids);
        s->n_stop_token_ids = r->n_stop_token_ids;
    }
    if (r->n_stop > 0) {
        s->stop = calloc((size_t)r->n_stop, sizeof *s->stop);
        if (!s->stop)
            goto oom;
        for (int i = 0; i < r->n_stop; i++) {
            if (!r->stop[i][0])
                continue; /* an empty stop string never matches */
            s->stop[s->n_stop] = strdup(r->stop[i]);
            if (!s->stop[s->n_stop])
                goto oom;
            size_t len = strlen(r->stop[i]);
            if (len > s->max_stop_len)
                s->max_stop_len = len;
            s->n_stop++;
        }
    }
    s->include_stop_str = r->include_stop_str_in_output;
    s->choice = r->choice;
    s->sampler = qs_sampler_state_new(&s->sampling, vocab_size, engine_seed, id);
    if (!s->sampler)
        goto oom;
    qs_sampler_observe_prompt(s->sampler, s->tokens, s->n_prompt);
    if (tok) {
        s->decoder = qs_decode_stream_new(tok, r->skip_special_tokens);
        if (!s->decoder)
            goto oom;
    }
    s->sink = sink;
    qs_event_sink_retain(sink);
    s->t_arrival = qs_now_seconds();
    return s;
oom:
    qs_seq_free(s);
    qs_errf(err, "out of memory building a sequence");
    return NULL;
}

int qs_seq_append_token(qs_seq *s, int32_t tok)
{
    if (s->n_tokens == s->cap_tokens) {
        int cap = s->cap_tokens * 2;
        int32_t *p = realloc(s->tokens, (size_t)cap * sizeof *p);
        if (!p)
            return -1;
        s->tokens = p;
        s->cap_tokens = cap;
    }
    s->tokens[s->n_tokens++] = tok;
    return 0;
}

int qs_seq_reserve_blocks(qs_seq *s, int n)
{
    if (n <= s->cap_blocks)
        return 0;
    int cap = s->cap_blocks ? s->cap_blocks : 8;
    while (cap < n)
        cap *= 2;
    int32_t *p = realloc(s->blocks, (size_t)cap * sizeof *p);
    if (!p)
        return -1;
    s->blocks = p;
    s->cap_blocks = cap;
    return 0;
}

static int held_append(qs_seq *s, const char *text, size_t len)
{
    if (len == 0)
        return 0;
    if (s->held_len + len + 1 > s->held_cap) {
        size_t cap = s->held_cap ? s->held_cap : 64;
        while (cap < s->held_len + len + 1)
            cap *= 2;
        char *p = realloc(s->held, cap);
        if (!p)
            return -1;
        s->held = p;
        s->held_cap = cap;
    }
    memcpy(s->held + s->held_len, text, len);
    s->held_len += len;
    s->held[s->held_len] = '\0';
    return 0;
}

/* Moves the first n held bytes into ev->text. */
static void release_text(qs_seq *s, qs_engine_event *ev, size_t n)
{
    char *t = malloc(n + 1);
    if (!t)
        return;
    if (n)
        memcpy(t, s->held, n);
    t[n] = '\0';
    free(ev->text);
    ev->text = t;
    ev->text_len = n;
    if (s->held_len > n)
        memmove(s->held, s->held + n, s->held_len - n);
    s->held_len -= n;
    if (s->held)
        s->held[s->held_len] = '\0';
}

/* Looks for a stop string in the held text; on a match releases the text before it (and the
 * stop string itself when asked) and returns true. */
static bool match_stop(qs_seq *s, qs_engine_event *ev)
{
    size_t best = (size_t)-1, best_len = 0;
    for (int i = 0; i < s->n_stop; i++) {
        const char *hit = s->held_len ? memmem(s->held, s->held_len, s->stop[i], strlen(s->stop[i])) : NULL;
        if (hit && (size_t)(hit - s->held) < best) {
            best = (size_t)(hit - s->held);
            best_len = strlen(s->stop[i]);
        }
    }
    if (best == (size_t)-1)
        return false;
    release_text(s, ev, best + (s->include_stop_str ? best_len : 0));
    s->held_len = 0;
    return true;
}

/* Length of the longest suffix of the held text that is a proper prefix of a stop string. */
static size_t stop_prefix_suffix(const qs_seq *s)
{
    size_t longest = 0;
    for (int i = 0; i < s->n_stop; i++) {
        size_t sl = strlen(s->stop[i]);
        size_t max = sl - 1 < s->held_len ? sl - 1 : s->held_len;
        for (size_t k = max; k > longest; k--)
            if (!memcmp(s->held + s->held_len - k, s->stop[i], k)) {
                longest = k;
                break;
            }
    }
    return longest;
}

static qs_engine_event *event_new(const qs_seq *s, int32_t token)
{
    qs_engine_event *ev = calloc(1, sizeof *ev);
    if (!ev)
        return NULL;
    ev->choice = s->choice;
    ev->token = token;
    ev->text = strdup("");
    if (!ev->text) {
        free(ev);
        return NULL;
    }
    return ev;
}

static void finish_event(qs_seq *s, qs_engine_event *ev, qs_finish_reason why)
{
    s->finish = why;
    ev->finish = why;
    ev->prompt_tokens = s->n_prompt;
    ev->completion_tokens = s->n_output;
}

qs_engine_event *qs_seq_on_token(qs_seq *s, int32_t token, const qs_token_logprobs *lp, const int32_t *eos,
                                 int n_eos, int max_model_len, const qs_tokenizer *tok)
{
    (void)tok;
    qs_engine_event *ev = event_new(s, token);
    if (!ev || qs_seq_append_token(s, token)) {
        qs_engine_event_free(ev);
        return NULL;
    }
    s->n_output++;
    qs_sampler_observe_output(s->sampler, token);
    if (lp) {
        ev->has_logprobs = true;
        ev->lp = *lp;
    }
    bool is_end_token = false;
    if (s->n_output > s->min_tokens) {
        for (int i = 0; i < n_eos && !s->ignore_eos; i++)
            if (eos[i] == token)
                is_end_token = true;
        for (int i = 0; i < s->n_stop_token_ids; i++)
            if (s->stop_token_ids[i] == token)
                is_end_token = true;
    }
    if (is_end_token) {
        const char *rest;
        size_t rest_len;
        if (s->decoder && qs_decode_stream_flush(s->decoder, &rest, &rest_len) == 0)
            held_append(s, rest, rest_len);
        if (!match_stop(s, ev))
            release_text(s, ev, s->held_len);
        finish_event(s, ev, QS_FINISH_STOP);
        return ev;
    }
    if (s->decoder) {
        const char *piece;
        size_t piece_len;
        qs_err derr;
        if (qs_decode_stream_push(s->decoder, token, &piece, &piece_len, &derr) == 0)
            held_append(s, piece, piece_len);
    }
    if (match_stop(s, ev)) {
        finish_event(s, ev, QS_FINISH_STOP);
        return ev;
    }
    bool at_length = s->n_output >= s->max_tokens || s->n_tokens >= max_model_len;
    if (at_length) {
        const char *rest;
        size_t rest_len;
        if (s->decoder && qs_decode_stream_flush(s->decoder, &rest, &rest_len) == 0)
            held_append(s, rest, rest_len);
        if (match_stop(s, ev)) {
            finish_event(s, ev, QS_FINISH_STOP);
            return ev;
        }
        release_text(s, ev, s->held_len);
        finish_event(s, ev, QS_FINISH_LENGTH);
        return ev;
    }
    release_text(s, ev, s->held_len - stop_prefix_suffix(s));
    return ev;
}

qs_engine_event *qs_seq_final_event(qs_seq *s, qs_finish_reason why, const char *error)
{
    qs_engine_event *ev = event_new(s, -1);
    if (!ev)
        return NULL;
    if (why != QS_FINISH_ABORT && s->held_len)
        release_text(s, ev, s->held_len);
    if (error)
        snprintf(ev->error, sizeof ev->error, "%s", error);
    finish_event(s, ev, why);
    return ev;
}
