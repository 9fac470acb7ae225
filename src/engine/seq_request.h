/* seq_request.h — what a sequence asks the engine for: its prompt, sampling parameters and
 * output rules (lengths, EOS, stop tokens and strings, token masks, prompt logprobs, a grammar).
 * The server fills it, qs_engine_submit takes it, and the sequence (seq.h) copies what it keeps. */
#ifndef QS_ENGINE_SEQ_REQUEST_H
#define QS_ENGINE_SEQ_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/sampler.h"

struct qs_grammar;

typedef struct qs_seq_request {
    const int32_t *prompt;     /* copied by submit */
    int n_prompt;
    qs_sampling_params sampling; /* logit_bias is copied by submit */
    int max_tokens;            /* > 0 */
    int min_tokens;            /* EOS / stop tokens are ignored before this many outputs */
    bool ignore_eos;
    const int32_t *stop_token_ids;
    int n_stop_token_ids;
    const char *const *stop;   /* stop strings (copied) */
    const size_t *stop_lens;   /* their lengths (they may hold NUL bytes); NULL: strlen */
    int n_stop;
    bool include_stop_str_in_output;
    bool skip_special_tokens;
    int choice;
    const char *cache_salt;    /* NULL or "": no salt; sequences with different salts share no KV blocks */
    /* vLLM's allowed_token_ids (NULL: all) and bad_words, the latter as token sequences laid
     * end to end in bad_word_ids, bad_word_lens[i] tokens each (engine/token_masks.h) */
    const int32_t *allowed_token_ids;
    int n_allowed_token_ids;
    const int32_t *bad_word_ids;
    const int *bad_word_lens;
    int n_bad_words;
    bool prompt_logprobs;      /* log-probabilities of each prompt token, with ... */
    int prompt_logprobs_top;   /* ... this many (0..20) top alternatives */
    bool prompt_only;          /* no generation: the prompt's logprobs only (echo with max_tokens 0) */
    /* Structured output (src/structured): NULL = free text. Each sequence gets its own matcher
     * over the engine's vocabulary trie; its mask is applied to the logits before sampling
     * (such rows are sampled on the host), and the sequence ends with "stop" once the grammar
     * is complete and nothing can follow. The engine retains it. */
    struct qs_grammar *grammar;
    /* With a reasoning parser (vLLM's rule): the grammar applies to the answer after the
     * reasoning. Its matcher stays dormant (no mask, no token accepted) until a sampled token is
     * reasoning_end_id, unless the prompt already ended the reasoning: scanning it backwards
     * finds reasoning_end_id before reasoning_start_id (-1: no start token). */
    bool grammar_after_reasoning;
    int32_t reasoning_start_id;
    int32_t reasoning_end_id;
} qs_seq_request;

#endif
