/* engine.h — the engine: one thread that owns the model and the KV cache and steps every running
 * sequence together (continuous batching). HTTP threads submit groups of sequences (one HTTP
 * request = one group: n choices per prompt), and read what each sequence produces — token,
 * released text, logprobs, finish reason — from a thread-safe event sink they wait on. A request
 * whose client went away is aborted through its sink and its KV blocks are freed at the next step.
 *
 * The forward pass and the KV block pool are reached through qs_engine_backend (backend.h), a
 * table of function pointers: qs_engine_backend_model() (model_backend.h) wraps qs_model_forward
 * + qs_kv_cache, and the scheduler unit test plugs in a deterministic fake model. Events and
 * their sink live in event_sink.h. Rows whose requests need nothing but
 * temperature, top-k, top-p, min-p and the end-token mask are sampled by the device
 * (forward_sample), so only their token ids come back; the others get their logits and go
 * through qs_sample as before. KV blocks go through the scheduler's prefix cache (prefix_cache.h,
 * enable_prefix_caching): a prompt whose leading blocks another sequence computed reuses them,
 * and the final event says how many prompt tokens that saved (cached_tokens). */
#ifndef QS_ENGINE_ENGINE_H
#define QS_ENGINE_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/backend.h"
#include "engine/engine_stats.h"
#include "engine/event_sink.h"
#include "engine/model_backend.h"
#include "engine/prompt_logprobs.h"
#include "engine/sampler.h"
#include "model/model.h"
#include "util/error.h"

typedef struct qs_tokenizer qs_tokenizer;

/* --- What a sequence asks for --- */
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

typedef struct qs_engine_options {
    int max_num_seqs;           /* sequences decoded together */
    int max_num_batched_tokens; /* tokens per forward step (prefill chunks + decodes) */
    int max_num_queued_reqs;    /* waiting sequences beyond which submit answers QS_SUBMIT_QUEUE_FULL */
    int max_model_len;          /* prompt + output positions per sequence */
    uint64_t seed;              /* server seed, used by requests without their own */
    const int32_t *eos_ids;     /* copied */
    int n_eos;
    const qs_tokenizer *tokenizer; /* for text and stop strings; NULL = tokens only (tests) */
    bool start_thread;          /* false: the caller drives qs_engine_step (tests) */
    bool enable_prefix_caching; /* reuse cached KV blocks of shared prefixes (prefix_cache.h) */
    uint64_t prefix_hash_seed;  /* keys the block hashes; 0 = a random one */
    const char *kv_cache_dtype; /* what the cache holds, for /metrics (static string; NULL = "auto") */
    bool disable_log_stats;     /* no periodic throughput line (--disable-log-stats) */
    double log_stats_interval_s; /* seconds between those lines while busy; 0 = 5, as vLLM */
    /* Structured outputs: the vocabulary as bytes (structured.h), not owned; NULL = built from
     * the tokenizer when the first constrained request arrives (tests pass their own). */
    const struct qs_vocab_trie *vocab_trie;
} qs_engine_options;

typedef struct qs_engine qs_engine;

/* Creates the engine; takes ownership of backend (destroyed by qs_engine_free). */
int qs_engine_create(const qs_engine_options *opt, const qs_engine_backend *backend, qs_engine **out,
                     qs_err *err);
/* Refuses new submissions, stops the thread and aborts everything still queued or running
 * (each sequence gets its final QS_FINISH_ABORT event). Idempotent; the engine stays valid. */
void qs_engine_close(qs_engine *e);
/* Closes (if not yet) and frees everything, the backend included. */
void qs_engine_free(qs_engine *e);

/* QUEUE_FULL: retry later (429); TOO_MANY: the group alone exceeds the queue, it can never be
 * accepted (400). */
typedef enum {
    QS_SUBMIT_OK = 0,
    QS_SUBMIT_INVALID = -1,
    QS_SUBMIT_QUEUE_FULL = -2,
    QS_SUBMIT_STOPPED = -3,
    QS_SUBMIT_TOO_MANY = -4
} qs_submit_status;
/* Queues n sequences whose events go to sink. All or none are queued. */
qs_submit_status qs_engine_submit(qs_engine *e, const qs_seq_request *reqs, int n, qs_event_sink *sink,
                                  qs_err *err);
/* Aborts every sequence feeding sink; their blocks are released at the next step and each gets a
 * final QS_FINISH_ABORT event. */
void qs_engine_abort_sink(qs_engine *e, qs_event_sink *sink);
/* Aborts everything (shutdown). */
void qs_engine_abort_all(qs_engine *e);

/* One scheduling step (for start_thread == false): admits submissions, runs one forward pass
 * and emits events. Returns 1 if work was done, 0 if idle, -1 on a forward error (the batch's
 * sequences are finished with QS_FINISH_ERROR). */
int qs_engine_step(qs_engine *e);

typedef struct qs_engine_load {
    int num_running;
    int num_waiting;
    int num_blocks;
    int num_free_blocks;
    long long num_preemptions;
    int num_cached_blocks;      /* blocks holding prefix-cached content (held or free) */
    bool prefix_caching;
    const char *kv_cache_dtype;
} qs_engine_load;
void qs_engine_get_load(qs_engine *e, qs_engine_load *out);
/* Latency histograms and token counters (engine_stats.h); copied under the engine's lock. */
void qs_engine_get_stats(qs_engine *e, qs_engine_stats *out);
int qs_engine_max_model_len(const qs_engine *e);

#endif
