/* seq.c — a sequence's life inside the engine: built from a qs_seq_request, it grows by one
 * token per sample, turns tokens into text with the tokenizer's streaming decoder, and decides
 * when it ends (EOS, stop token ids, stop strings, max_tokens, max_model_len). Stop strings go
 * through the matcher of stop.h, which holds back text that could be the start of one, so a stop
 * string never reaches the client, not even split across streamed chunks. */
#include "engine/seq.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/stop.h"
#include "structured/structured.h"
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
    free(s->block_hashes);
    free(s->cache_salt);
    free(s->logit_bias);
    free(s->stop_token_ids);
    for (int i = 0; i < s->n_stop; i++)
        free(s->stop[i]);
    free(s->stop);
    free(s->allowed_token_ids);
    free(s->bad_word_ids);
    free(s->bad_word_lens);
    free(s->prompt_lp);
    free(s->stop_lens);
    if (s->matcher)
        qs_stop_free(s->matcher);
    qs_matcher_free(s->grammar);
    if (s->sampler)
        qs_sampler_state_free(s->sampler);
    if (s->decoder)
        qs_decode_stream_free(s->decoder);
    if (s->sink)
        qs_event_sink_release(s->sink);
    free(s);
}

static int cmp_id(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* allowed_token_ids (sorted, for token_masks.c's one walk) and bad_words. */
static int copy_masks(qs_seq *s, const qs_seq_request *r)
{
    if (r->n_allowed_token_ids > 0) {
        s->allowed_token_ids = malloc((size_t)r->n_allowed_token_ids * sizeof *s->allowed_token_ids);
        if (!s->allowed_token_ids)
            return -1;
        memcpy(s->allowed_token_ids, r->allowed_token_ids, (size_t)r->n_allowed_token_ids * sizeof(int32_t));
        qsort(s->allowed_token_ids, (size_t)r->n_allowed_token_ids, sizeof(int32_t), cmp_id);
        s->n_allowed_token_ids = r->n_allowed_token_ids;
    }
    if (r->n_bad_words > 0) {
        size_t total = 0;
        for (int i = 0; i < r->n_bad_words; i++)
            total += (size_t)r->bad_word_lens[i];
        s->bad_word_lens = malloc((size_t)r->n_bad_words * sizeof *s->bad_word_lens);
        s->bad_word_ids = malloc((total ? total : 1) * sizeof *s->bad_word_ids);
        if (!s->bad_word_lens || !s->bad_word_ids)
            return -1;
        memcpy(s->bad_word_lens, r->bad_word_lens, (size_t)r->n_bad_words * sizeof(int));
        memcpy(s->bad_word_ids, r->bad_word_ids, total * sizeof(int32_t));
        s->n_bad_words = r->n_bad_words;
    }
    return 0;
}

bool qs_seq_collects_prompt_logprobs(const qs_seq *s)
{
    return s->prompt_lp && s->n_prompt_lp < s->n_prompt && s->n_computed < s->n_prompt - 1;
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
        s->stop_lens = calloc((size_t)r->n_stop, sizeof *s->stop_lens);
        if (!s->stop || !s->stop_lens)
            goto oom;
        for (int i = 0; i < r->n_stop; i++) {
            size_t len = r->stop_lens ? r->stop_lens[i] : strlen(r->stop[i]);
            if (!len)
                continue; /* an empty stop string never matches */
            s->stop[s->n_stop] = malloc(len + 1);
            if (!s->stop[s->n_stop])
                goto oom;
            memcpy(s->stop[s->n_stop], r->stop[i], len);
            s->stop[s->n_stop][len] = '\0';
            s->stop_lens[s->n_stop++] = len;
        }
        if (s->n_stop > 0) {
            s->matcher = qs_stop_new_n((const char *const *)s->stop, s->stop_lens, s->n_stop, NULL, 0);
            if (!s->matcher)
                goto oom;
        }
    }
    if (r->cache_salt && r->cache_salt[0]) {
        s->cache_salt = strdup(r->cache_salt);
        if (!s->cache_salt)
            goto oom;
    }
    if (copy_masks(s, r))
        goto oom;
    s->prompt_logprobs = r->prompt_logprobs ? r->prompt_logprobs_top : -1;
    s->prompt_only = r->prompt_only;
    if (s->prompt_logprobs >= 0) {
        s->prompt_lp = calloc((size_t)s->n_prompt, sizeof *s->prompt_lp);
        if (!s->prompt_lp)
            goto oom;
        s->prompt_lp[0].token_id = s->tokens[0];
        s->n_prompt_lp = 1; /* the first prompt token has none */
    }
    s->include_stop_str = r->include_stop_str_in_output;
    s->choice = r->choice;
    s->sampler = qs_sampler_state_new(&s->sampling, vocab_size, engine_seed, id);
    if (!s->sampler)
        goto oom;
    qs_sampler_observe_prompt(s->sampler, s->tokens, s->n_prompt);
    if (tok) {
        s->decoder = qs_decode_stream_new(tok, r->skip_special_tokens);
        if (!s->decoder || qs_decode_stream_prime(s->decoder, s->tokens, (size_t)s->n_prompt))
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

/* Appends text to the event's text. */
static void add_text(qs_engine_event *ev, const char *text, size_t len)
{
    if (len == 0)
        return;
    char *t = realloc(ev->text, ev->text_len + len + 1);
    if (!t)
        return;
    memcpy(t + ev->text_len, text, len);
    ev->text_len += len;
    t[ev->text_len] = '\0';
    ev->text = t;
}

/* Feeds decoded text through the stop matcher (if any) into the event; true when a stop
 * string completed (its text is added when include_stop_str). */
static bool feed_text(qs_seq *s, qs_engine_event *ev, const char *text, size_t len)
{
    /* below min_tokens no stop string may end the output (vLLM checks them only past it) */
    if (!s->matcher || s->n_output <= s->min_tokens) {
        add_text(ev, text, len);
        return false;
    }
    const char *out;
    size_t out_len;
    bool matched = qs_stop_feed(s->matcher, text, len, &out, &out_len);
    add_text(ev, out, out_len);
    int i = matched ? qs_stop_matched_index(s->matcher) : -1;
    if (i >= 0 && i < s->n_stop) {
        if (s->include_stop_str)
            add_text(ev, s->stop[i], s->stop_lens[i]);
        free(ev->stop_str);
        ev->stop_str = strdup(s->stop[i]);
    }
    return matched;
}

/* The end of the text: the decoder's incomplete tail, then whatever the matcher held back.
 * True when that completed a stop string. */
static bool finish_text(qs_seq *s, qs_engine_event *ev)
{
    const char *rest;
    size_t rest_len;
    if (s->decoder && qs_decode_stream_flush(s->decoder, &rest, &rest_len) == 0 && feed_text(s, ev, rest, rest_len))
        return true;
    if (s->matcher) {
        qs_stop_flush(s->matcher, &rest, &rest_len);
        add_text(ev, rest, rest_len);
    }
    return false;
}

static qs_engine_event *event_new(const qs_seq *s, int32_t token)
{
    qs_engine_event *ev = calloc(1, sizeof *ev);
    if (!ev)
        return NULL;
    ev->choice = s->choice;
    ev->token = token;
    ev->stop_token = -1;
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
    ev->cached_tokens = s->cached_tokens;
}

qs_engine_event *qs_seq_on_token(qs_seq *s, int32_t token, const qs_token_logprobs *lp, const int32_t *eos,
                                 int n_eos, int max_model_len)
{
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
        for (int i = 0; i < s->n_stop_token_ids && !is_end_token; i++)
            if (s->stop_token_ids[i] == token) {
                is_end_token = true;
                ev->stop_token = token; /* vLLM's stop_reason; EOS leaves it null */
            }
    }
    if (is_end_token) {
        finish_text(s, ev);
        finish_event(s, ev, QS_FINISH_STOP);
        return ev;
    }
    if (s->decoder) {
        const char *piece;
        size_t piece_len;
        qs_err derr;
        if (qs_decode_stream_push(s->decoder, token, &piece, &piece_len, &derr) == 0 &&
            feed_text(s, ev, piece, piece_len)) {
            finish_event(s, ev, QS_FINISH_STOP);
            return ev;
        }
    }
    if (s->grammar_done) {
        finish_text(s, ev);
        finish_event(s, ev, QS_FINISH_STOP);
        return ev;
    }
    if (s->n_output >= s->max_tokens || s->n_tokens >= max_model_len) {
        bool stopped = finish_text(s, ev);
        finish_event(s, ev, stopped ? QS_FINISH_STOP : QS_FINISH_LENGTH);
    }
    return ev;
}

qs_engine_event *qs_seq_final_event(qs_seq *s, qs_finish_reason why, const char *error)
{
    qs_engine_event *ev = event_new(s, -1);
    if (!ev)
        return NULL;
    if (why != QS_FINISH_ABORT)
        finish_text(s, ev);
    if (error)
        snprintf(ev->error, sizeof ev->error, "%s", error);
    finish_event(s, ev, why);
    return ev;
}
