/* engine.h — the engine: one thread that owns the model and the KV cache and steps every running
 * sequence together (continuous batching). HTTP threads submit groups of sequences (one HTTP
 * request = one group: n choices per prompt), and read what each sequence produces — token,
 * released text, logprobs, finish reason — from a thread-safe event sink they wait on. A request
 * whose client went away is aborted through its sink and its KV blocks are freed at the next step.
 *
 * The forward pass and the KV block pool are reached through qs_engine_backend (backend.h), a
 * table of function pointers: qs_engine_backend_model() (model_backend.h) wraps qs_model_forward
 * + qs_kv_cache, and the scheduler unit test plugs in a deterministic fake model. Events and
 * their sink live in event_sink.h, what a sequence asks for in seq_request.h. Rows whose
 * requests need nothing but temperature, top-k, top-p, min-p and the end-token mask are sampled
 * by the device (forward_sample), so only their token ids come back; the others get their
 * logits and go through qs_sample as before. KV blocks go through the scheduler's prefix cache
 * (prefix_cache.h, enable_prefix_caching): a prompt whose leading blocks another sequence
 * computed reuses them, and the final event says how many prompt tokens that saved
 * (cached_tokens). */
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
#include "engine/seq_request.h"
#include "model/model.h"
#include "util/error.h"

typedef struct qs_tokenizer qs_tokenizer;

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
