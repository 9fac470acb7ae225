/* seq.h — one sequence inside the engine: its tokens (prompt, then outputs), how many of
 * them the KV cache already holds, its block table, sampler and detokeniser state, and the
 * output rules (max_tokens, EOS, stop token ids, and stop strings through the shared matcher of
 * stop.h, which holds back text that could start one). Private to src/engine; the scheduler
 * moves these between its queues. */
#ifndef QS_ENGINE_SEQ_H
#define QS_ENGINE_SEQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/event_sink.h"
#include "engine/sampler.h"
#include "engine/seq_request.h"
#include "util/error.h"

typedef struct qs_tokenizer qs_tokenizer;
typedef struct qs_decode_stream qs_decode_stream;
typedef struct qs_stop_matcher qs_stop_matcher;
typedef struct qs_matcher qs_matcher;

typedef struct qs_seq {
    uint64_t id;               /* arrival order */
    int32_t *tokens;           /* prompt then outputs */
    int n_tokens, cap_tokens;
    int n_prompt;
    int n_output;
    int n_computed;            /* positions whose K/V are in the cache */
    int32_t *blocks;
    int n_blocks, cap_blocks;
    bool scheduled_before;     /* has run at least once (for queue-time stats) */

    /* prefix caching (prefix_cache.h): the hash of each full block of tokens, chained from
     * hash_root (seed + cache_salt); the leading n_cached_blocks blocks of the table are in the
     * cache (hit or registered); cached_tokens is what the first admission found cached */
    char *cache_salt;
    uint64_t hash_root;
    uint64_t *block_hashes;
    int n_hashes, cap_hashes;
    int n_cached_blocks;
    int cached_tokens;
    bool admitted_before;

    /* parameters (owned copies) */
    qs_sampling_params sampling;
    qs_logit_bias *logit_bias;
    int max_tokens, min_tokens;
    bool ignore_eos;
    int32_t *stop_token_ids;
    int n_stop_token_ids;
    char **stop;               /* non-empty stop strings, indexed as the matcher reports them */
    size_t *stop_lens;
    int n_stop;
    bool include_stop_str;
    int choice;
    int32_t *allowed_token_ids;   /* token_masks.h; NULL: all */
    int n_allowed_token_ids;
    int32_t *bad_word_ids;
    int *bad_word_lens;
    int n_bad_words;
    int prompt_logprobs;          /* -1: off */
    bool prompt_only;
    qs_prompt_logprob *prompt_lp; /* [n_prompt] while collected, until handed to the first event */
    int n_prompt_lp;              /* entries filled: prompt_lp[0 .. n_prompt_lp) */
    bool prompt_lp_sent;

    /* output state */
    qs_sampler_state *sampler;
    qs_decode_stream *decoder;
    qs_stop_matcher *matcher;  /* NULL without stop strings */
    qs_matcher *grammar;       /* structured output (structured.h); NULL = free text */
    bool grammar_done;         /* the grammar is complete and nothing can follow: end with "stop" */
    bool grammar_dormant;      /* still reasoning: no mask, no accept until reasoning_end_id is sampled */
    int32_t reasoning_end_id;
    qs_event_sink *sink;
    bool aborted;
    qs_finish_reason finish;

    double t_arrival, t_first_token, t_last_token;
    double t_scheduled;        /* first step it ran in (for the prefill / inference time stats) */
} qs_seq;

/* Builds a sequence from a request (copies everything). */
qs_seq *qs_seq_new(const qs_seq_request *r, uint64_t id, qs_event_sink *sink, const qs_tokenizer *tok,
                   int vocab_size, uint64_t engine_seed, qs_err *err);
void qs_seq_free(qs_seq *s);
int qs_seq_append_token(qs_seq *s, int32_t tok);
int qs_seq_reserve_blocks(qs_seq *s, int n);

/* After sampling `token`: appends it, updates text / stop state and returns the event to send
 * (finish set when the sequence ends). eos lists the model's end tokens; max_model_len bounds
 * the positions. A sequence built without a tokenizer produces tokens but no text. */
qs_engine_event *qs_seq_on_token(qs_seq *s, int32_t token, const qs_token_logprobs *lp, const int32_t *eos,
                                 int n_eos, int max_model_len);
/* A final event for a sequence ending without a new token (abort, error): flushes held text
 * unless aborting. */
qs_engine_event *qs_seq_final_event(qs_seq *s, qs_finish_reason why, const char *error);
/* Whether the scheduler must feed s one prompt token a step with logits for each: its prompt
 * logprobs are asked for and not all collected yet. */
bool qs_seq_collects_prompt_logprobs(const qs_seq *s);

double qs_now_seconds(void);

#endif
