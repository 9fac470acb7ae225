/* engine.c — the engine thread and its hand-offs with HTTP threads (see engine.h). The scheduler
 * and every sequence belong to the engine thread alone; other threads only touch the inbox of
 * submitted sequences, the list of sinks to abort and the load/stats snapshots, all under one
 * mutex, so a forward pass never holds the lock. */
#include "engine/engine.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/kv_cache.h"
#include "engine/seq.h"
#include "engine/scheduler.h"
#include "engine/token_masks.h"
#include "structured/structured.h"
#include "util/parallel.h"
#include "util/log.h"

/* ---------------- the engine ---------------- */

struct qs_engine {
    qs_engine_options opt;
    int32_t *eos;
    qs_engine_backend backend;
    qs_scheduler sched;
    qs_sched_batch batch;
    qs_seq_step *steps;
    int cap_steps;
    float *logits;
    size_t cap_logits;
    qs_sample_row *rows;        /* [cap_steps] device-sampling parameters of the rows wanting logits */
    int32_t *tokens;            /* [cap_steps] their tokens */
    uint64_t next_id;

    pthread_mutex_t mu;
    pthread_cond_t cv;
    qs_seq **inbox;
    int n_inbox, cap_inbox;
    qs_event_sink **aborts;
    int n_aborts, cap_aborts;
    bool abort_all;
    bool stopping;
    int n_waiting_snapshot;     /* waiting in the scheduler, for the queue bound */
    qs_engine_load load;
    qs_engine_stats stats;
    qs_vocab_trie *trie;        /* the vocabulary as bytes for structured outputs; built on first use */
    pthread_mutex_t trie_mu;    /* guards building it (not mu: the engine thread must not wait on it) */
    pthread_t thread;
    bool thread_started;
};

static int grow_ptrs(void ***arr, int *cap, int need)
{
    if (need <= *cap)
        return 0;
    int n = *cap ? *cap * 2 : 16;
    while (n < need)
        n *= 2;
    void **p = realloc(*arr, (size_t)n * sizeof *p);
    if (!p)
        return -1;
    *arr = p;
    *cap = n;
    return 0;
}

static void *engine_main(void *arg);

/* A seed for the prefix cache's hashes that clients cannot guess. */
static uint64_t random_seed(void)
{
    uint64_t x = 0;
    FILE *f = fopen("/dev/urandom", "rb");
    if (f) {
        if (fread(&x, sizeof x, 1, f) != 1)
            x = 0;
        fclose(f);
    }
    if (!x) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        x = (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ULL ^ (uint64_t)ts.tv_sec ^ (uint64_t)(uintptr_t)&x;
    }
    return x | 1;
}

int qs_engine_create(const qs_engine_options *opt, const qs_engine_backend *backend, qs_engine **out, qs_err *err)
{
    if (opt->max_model_len <= 0)
        return qs_errf(err, "engine: max_model_len must be positive");
    int blocks_per_seq = (opt->max_model_len + QS_KV_BLOCK_SIZE - 1) / QS_KV_BLOCK_SIZE;
    if (backend->num_blocks < blocks_per_seq)
        return qs_errf(err,
                       "the KV cache holds %d blocks (%d tokens) but one sequence of max_model_len %d needs %d; "
                       "raise --kv-cache-memory or lower --max-model-len",
                       backend->num_blocks, backend->num_blocks * QS_KV_BLOCK_SIZE, opt->max_model_len,
                       blocks_per_seq);
    qs_engine *e = calloc(1, sizeof *e);
    if (!e)
        return qs_errf(err, "out of memory");
    e->opt = *opt;
    if (e->opt.max_num_seqs <= 0)
        e->opt.max_num_seqs = 16;
    if (e->opt.max_num_batched_tokens <= 0)
        e->opt.max_num_batched_tokens = 2048;
    if (e->opt.max_num_batched_tokens < e->opt.max_num_seqs)
        e->opt.max_num_batched_tokens = e->opt.max_num_seqs;
    if (e->opt.max_num_queued_reqs <= 0)
        e->opt.max_num_queued_reqs = 1024;
    if (opt->n_eos > 0) {
        e->eos = malloc((size_t)opt->n_eos * sizeof *e->eos);
        if (!e->eos) {
            free(e);
            return qs_errf(err, "out of memory");
        }
        memcpy(e->eos, opt->eos_ids, (size_t)opt->n_eos * sizeof *e->eos);
    }
    e->opt.eos_ids = e->eos;
    e->backend = *backend;
    uint64_t seed = opt->prefix_hash_seed ? opt->prefix_hash_seed : random_seed();
    if (qs_scheduler_init(&e->sched, e->opt.max_num_seqs, e->opt.max_num_batched_tokens, &e->backend,
                          opt->enable_prefix_caching, seed)) {
        free(e->eos);
        free(e);
        return qs_errf(err, "out of memory for the KV block pool");
    }
    pthread_mutex_init(&e->mu, NULL);
    pthread_mutex_init(&e->trie_mu, NULL);
    pthread_cond_init(&e->cv, NULL);
    qs_engine_stats_init(&e->stats, e->opt.max_model_len);
    e->load.num_blocks = backend->num_blocks;
    e->load.num_free_blocks = backend->num_blocks;
    e->load.prefix_caching = opt->enable_prefix_caching;
    e->load.kv_cache_dtype = opt->kv_cache_dtype ? opt->kv_cache_dtype : "auto";
    if (opt->start_thread) {
        if (pthread_create(&e->thread, NULL, engine_main, e)) {
            qs_scheduler_destroy(&e->sched);
            free(e->eos);
            free(e);
            return qs_errf(err, "engine: cannot start its thread");
        }
        e->thread_started = true;
    }
    *out = e;
    return 0;
}

int qs_engine_max_model_len(const qs_engine *e) { return e->opt.max_model_len; }

/* The vocabulary trie, built once (the first structured request pays for it). */
static const qs_vocab_trie *engine_trie(qs_engine *e, qs_err *err)
{
    if (e->opt.vocab_trie)
        return e->opt.vocab_trie;
    pthread_mutex_lock(&e->trie_mu);
    if (!e->trie && e->opt.tokenizer)
        e->trie = qs_vocab_trie_from_tokenizer(e->opt.tokenizer, e->backend.vocab_size, e->eos, e->opt.n_eos, err);
    else if (!e->trie)
        qs_errf(err, "structured outputs need the model's tokenizer");
    const qs_vocab_trie *t = e->trie;
    pthread_mutex_unlock(&e->trie_mu);
    return t;
}

/* vLLM's is_reasoning_end over the prompt: the last think tag in it is a closing one. */
static bool prompt_ends_reasoning(const qs_seq_request *r)
{
    for (int i = r->n_prompt - 1; i >= 0; i--) {
        if (r->prompt[i] == r->reasoning_start_id)
            return false;
        if (r->prompt[i] == r->reasoning_end_id)
            return true;
    }
    return false;
}

static int attach_grammar(qs_engine *e, qs_seq *seq, const qs_seq_request *r, qs_err *err)
{
    const qs_vocab_trie *t = engine_trie(e, err);
    if (!t)
        return -1;
    seq->grammar = qs_matcher_new(r->grammar, t);
    if (!seq->grammar)
        return qs_errf(err, "out of memory for the structured-output matcher");
    if (r->grammar_after_reasoning && r->reasoning_end_id >= 0) {
        seq->reasoning_end_id = r->reasoning_end_id;
        seq->grammar_dormant = !prompt_ends_reasoning(r);
    }
    return 0;
}

/* The constraint of a sequence this step: NULL while it is free text or still reasoning. */
static qs_matcher *active_grammar(const qs_seq *seq)
{
    return seq->grammar_dormant ? NULL : seq->grammar;
}

/* A dormant grammar wakes once the reasoning end token is sampled; it constrains the next token
 * on (the end token itself is not part of the answer, as in vLLM's should_advance). */
static void note_reasoning_end(qs_seq *seq, int32_t token)
{
    if (seq->grammar_dormant && token == seq->reasoning_end_id)
        seq->grammar_dormant = false;
}

qs_submit_status qs_engine_submit(qs_engine *e, const qs_seq_request *reqs, int n, qs_event_sink *sink, qs_err *err)
{
    qs_seq **seqs = calloc((size_t)(n > 0 ? n : 1), sizeof *seqs);
    if (!seqs) {
        qs_errf(err, "out of memory");
        return QS_SUBMIT_INVALID;
    }
    if (n > e->opt.max_num_queued_reqs) { /* could never be queued: not a retry-later 429 */
        qs_errf(err,
                "This request needs %d sequences (prompts x n) but the server queues at most %d "
                "(--max-num-queued-reqs); send fewer prompts or a smaller n.",
                n, e->opt.max_num_queued_reqs);
        free(seqs);
        return QS_SUBMIT_TOO_MANY;
    }
    for (int i = 0; i < n; i++) {
        if (reqs[i].n_prompt + reqs[i].max_tokens > e->opt.max_model_len) {
            qs_errf(err,
                    "This model's maximum context length is %d tokens. However, you requested %d tokens "
                    "(%d in the prompt, %d in the completion). Please reduce the length of the prompt or completion.",
                    e->opt.max_model_len, reqs[i].n_prompt + reqs[i].max_tokens, reqs[i].n_prompt,
                    reqs[i].max_tokens);
            goto invalid;
        }
        pthread_mutex_lock(&e->mu);
        uint64_t id = e->next_id++;
        pthread_mutex_unlock(&e->mu);
        seqs[i] = qs_seq_new(&reqs[i], id, sink, e->opt.tokenizer, e->backend.vocab_size, (uint64_t)e->opt.seed, err);
        if (!seqs[i])
            goto invalid;
        if (reqs[i].grammar && attach_grammar(e, seqs[i], &reqs[i], err))
            goto invalid;
    }
    pthread_mutex_lock(&e->mu);
    if (e->stopping) {
        pthread_mutex_unlock(&e->mu);
        qs_errf(err, "the server is shutting down");
        for (int i = 0; i < n; i++)
            qs_seq_free(seqs[i]);
        free(seqs);
        return QS_SUBMIT_STOPPED;
    }
    if (e->n_waiting_snapshot + e->n_inbox + n > e->opt.max_num_queued_reqs) {
        int queued = e->n_waiting_snapshot + e->n_inbox;
        pthread_mutex_unlock(&e->mu);
        qs_errf(err, "the server is overloaded: %d requests are waiting (--max-num-queued-reqs %d); retry later",
                queued, e->opt.max_num_queued_reqs);
        for (int i = 0; i < n; i++)
            qs_seq_free(seqs[i]);
        free(seqs);
        return QS_SUBMIT_QUEUE_FULL;
    }
    if (grow_ptrs((void ***)&e->inbox, &e->cap_inbox, e->n_inbox + n)) {
        pthread_mutex_unlock(&e->mu);
        qs_errf(err, "out of memory");
        goto invalid;
    }
    for (int i = 0; i < n; i++)
        e->inbox[e->n_inbox++] = seqs[i];
    pthread_cond_signal(&e->cv);
    pthread_mutex_unlock(&e->mu);
    free(seqs);
    return QS_SUBMIT_OK;
invalid:
    for (int i = 0; i < n; i++)
        qs_seq_free(seqs[i]);
    free(seqs);
    return QS_SUBMIT_INVALID;
}

void qs_engine_abort_sink(qs_engine *e, qs_event_sink *sink)
{
    pthread_mutex_lock(&e->mu);
    if (grow_ptrs((void ***)&e->aborts, &e->cap_aborts, e->n_aborts + 1) == 0) {
        qs_event_sink_retain(sink);
        e->aborts[e->n_aborts++] = sink;
    } else {
        e->abort_all = true; /* out of memory: better to drop everything than to leak a sequence */
    }
    pthread_cond_signal(&e->cv);
    pthread_mutex_unlock(&e->mu);
}

void qs_engine_abort_all(qs_engine *e)
{
    pthread_mutex_lock(&e->mu);
    e->abort_all = true;
    pthread_cond_signal(&e->cv);
    pthread_mutex_unlock(&e->mu);
}

/* Ends seq: final event (when given), stats, blocks back to the pool, freed. */
static void finish_seq(qs_engine *e, qs_seq *seq, qs_engine_event *final_ev)
{
    qs_scheduler_remove(&e->sched, seq);
    if (final_ev) {
        pthread_mutex_lock(&e->mu);
        if (final_ev->finish > 0 && final_ev->finish < QS_STATS_FINISH_KINDS)
            e->stats.finished[final_ev->finish]++;
        if (final_ev->finish != QS_FINISH_ABORT)
            qs_histogram_observe(&e->stats.e2e, qs_now_seconds() - seq->t_arrival);
        qs_histogram_observe(&e->stats.request_prompt_tokens, seq->n_prompt);
        qs_histogram_observe(&e->stats.request_generation_tokens, seq->n_output);
        if (seq->n_output > 1)
            qs_histogram_observe(&e->stats.request_tpot,
                                 (seq->t_last_token - seq->t_first_token) / (double)(seq->n_output - 1));
        if (seq->n_output > 0 && seq->scheduled_before) {
            qs_histogram_observe(&e->stats.prefill_time, seq->t_first_token - seq->t_scheduled);
            qs_histogram_observe(&e->stats.decode_time, seq->t_last_token - seq->t_first_token);
            qs_histogram_observe(&e->stats.inference_time, seq->t_last_token - seq->t_scheduled);
        }
        pthread_mutex_unlock(&e->mu);
        qs_event_sink_push(seq->sink, final_ev);
    }
    qs_seq_free(seq);
}

static void abort_seq(qs_engine *e, qs_seq *seq, qs_finish_reason why, const char *error)
{
    finish_seq(e, seq, qs_seq_final_event(seq, why, error));
}

/* Takes the inbox and the abort requests (engine thread). */
static void take_submissions(qs_engine *e)
{
    pthread_mutex_lock(&e->mu);
    qs_seq **inbox = e->inbox;
    int n_inbox = e->n_inbox;
    e->inbox = NULL;
    e->n_inbox = e->cap_inbox = 0;
    qs_event_sink **aborts = e->aborts;
    int n_aborts = e->n_aborts;
    e->aborts = NULL;
    e->n_aborts = e->cap_aborts = 0;
    bool all = e->abort_all;
    e->abort_all = false;
    pthread_mutex_unlock(&e->mu);

    for (int i = 0; i < n_inbox; i++)
        if (qs_scheduler_add(&e->sched, inbox[i]))
            abort_seq(e, inbox[i], QS_FINISH_ERROR, "out of memory queueing the request");
    free(inbox);
    if (n_aborts || all) {
        /* Walk both queues; a sequence is aborted if its sink was named (or everything goes). */
        qs_scheduler *s = &e->sched;
        for (int pass = 0; pass < 2; pass++) {
            qs_seq **arr = pass ? s->waiting : s->running;
            int *n = pass ? &s->n_waiting : &s->n_running;
            for (int i = *n - 1; i >= 0; i--) {
                qs_seq *seq = arr[i];
                bool hit = all;
                for (int k = 0; k < n_aborts && !hit; k++)
                    hit = aborts[k] == seq->sink;
                if (hit)
                    abort_seq(e, seq, QS_FINISH_ABORT, NULL);
            }
        }
    }
    for (int k = 0; k < n_aborts; k++)
        qs_event_sink_release(aborts[k]);
    free(aborts);
}

static void publish_load(qs_engine *e)
{
    pthread_mutex_lock(&e->mu);
    e->load.num_running = e->sched.n_running;
    e->load.num_waiting = e->sched.n_waiting + e->n_inbox;
    e->load.num_free_blocks = qs_scheduler_free_blocks(&e->sched);
    e->load.num_cached_blocks = qs_prefix_cache_num_cached(e->sched.pc);
    e->stats.prefix_cache_queries_total = e->sched.prefix_queries;
    e->stats.prefix_cache_hits_total = e->sched.prefix_hits;
    e->load.num_preemptions = e->sched.preemptions;
    e->stats.preemptions_total = (unsigned long long)e->sched.preemptions;
    e->n_waiting_snapshot = e->sched.n_waiting;
    pthread_mutex_unlock(&e->mu);
}

static int ensure_buffers(qs_engine *e, int n_items)
{
    if (n_items > e->cap_steps) {
        qs_seq_step *p = realloc(e->steps, (size_t)n_items * sizeof *p);
        if (!p)
            return -1;
        e->steps = p;
        qs_sample_row *r = realloc(e->rows, (size_t)n_items * sizeof *r);
        if (r)
            e->rows = r;
        int32_t *t = realloc(e->tokens, (size_t)n_items * sizeof *t);
        if (t)
            e->tokens = t;
        if (!r || !t)
            return -1;
        e->cap_steps = n_items;
    }
    size_t need = (size_t)n_items * (size_t)e->backend.vocab_size;
    if (need > e->cap_logits) {
        float *p = realloc(e->logits, need * sizeof *p);
        if (!p)
            return -1;
        e->logits = p;
        e->cap_logits = need;
    }
    return 0;
}

/* Masks end tokens while a sequence is below min_tokens. */
/* The end tokens a sequence may not produce yet (below min_tokens): EOS unless ignored, then its
 * stop token ids; the i-th of n_masked_end_tokens, possibly outside the vocabulary. */
static int n_masked_end_tokens(const qs_engine *e, const qs_seq *seq)
{
    if (seq->n_output >= seq->min_tokens)
        return 0;
    return (seq->ignore_eos ? 0 : e->opt.n_eos) + seq->n_stop_token_ids;
}
static int32_t masked_end_token(const qs_engine *e, const qs_seq *seq, int i)
{
    int n_eos = seq->ignore_eos ? 0 : e->opt.n_eos;
    return i < n_eos ? e->eos[i] : seq->stop_token_ids[i - n_eos];
}

static void mask_end_tokens(const qs_engine *e, const qs_seq *seq, float *row)
{
    for (int i = 0; i < n_masked_end_tokens(e, seq); i++) {
        int32_t id = masked_end_token(e, seq, i);
        if (id >= 0 && id < e->backend.vocab_size)
            row[id] = -INFINITY;
    }
}

/* The device-sampling row of seq (ops/sample.h): false when the request needs the host sampler
 * (logit_bias, penalties, logprobs, or more end tokens to mask than a row carries). The banned
 * ids are the ones mask_end_tokens would set to -inf. Draws the row's u, so call it once a token. */
static bool device_row(const qs_engine *e, qs_seq *seq, qs_sample_row *row)
{
    if (active_grammar(seq)) /* the token mask is applied on the host */
        return false;
    if (!qs_sampling_device_ok(&seq->sampling) || qs_seq_has_token_masks(seq) || seq->prompt_lp || seq->prompt_only)
        return false;
    memset(row, 0, sizeof *row);
    for (int i = 0; i < n_masked_end_tokens(e, seq); i++) {
        int32_t id = masked_end_token(e, seq, i);
        bool dup = id < 0 || id >= e->backend.vocab_size;
        for (int j = 0; j < row->n_banned && !dup; j++)
            dup = row->banned[j] == id;
        if (dup)
            continue;
        if (row->n_banned == QS_SAMPLE_MAX_BANNED)
            return false;
        row->banned[row->n_banned++] = id;
    }
    qs_sampler_device_row(&seq->sampling, seq->sampler, row);
    return true;
}

/* Hands the collected prompt logprobs to the sequence's first event. */
static void attach_prompt_logprobs(qs_seq *seq, qs_engine_event *ev)
{
    if (!ev || !seq->prompt_lp || seq->prompt_lp_sent)
        return;
    ev->prompt_lp = seq->prompt_lp;
    ev->n_prompt_lp = seq->n_prompt;
    seq->prompt_lp = NULL;
    seq->prompt_lp_sent = true;
}

static void on_sampled(qs_engine *e, qs_seq *seq, int32_t token, const qs_token_logprobs *lp)
{
    double now = qs_now_seconds();
    qs_engine_event *ev = qs_seq_on_token(seq, token, lp, e->eos, e->opt.n_eos, e->opt.max_model_len);
    attach_prompt_logprobs(seq, ev);
    pthread_mutex_lock(&e->mu);
    e->stats.generation_tokens_total++;
    if (seq->n_output == 1) {
        e->stats.prompt_tokens_total += (unsigned long long)seq->n_prompt;
        qs_histogram_observe(&e->stats.ttft, now - seq->t_arrival);
        seq->t_first_token = now;
    } else {
        qs_histogram_observe(&e->stats.itl, now - seq->t_last_token);
    }
    pthread_mutex_unlock(&e->mu);
    seq->t_last_token = now;
    if (!ev) {
        abort_seq(e, seq, QS_FINISH_ERROR, "out of memory producing output");
        return;
    }
    if (ev->finish != QS_FINISH_NONE)
        finish_seq(e, seq, ev);
    else
        qs_event_sink_push(seq->sink, ev);
}

/* The structured-output masks of this step's constrained rows, computed on the CPU pool's threads
 * (one matcher per thread at a time) before the rows are sampled one by one. */
typedef struct mask_job {
    qs_matcher **m;
} mask_job;

static void mask_range(void *ctx, int64_t begin, int64_t end)
{
    mask_job *j = ctx;
    for (int64_t i = begin; i < end; i++)
        qs_matcher_prepare_mask(j->m[i]);
}

static void prepare_masks(qs_engine *e, const qs_sched_batch *b, int n_device)
{
    qs_matcher *local[64];
    qs_matcher **list = b->n_items <= 64 ? local : malloc(sizeof *list * (size_t)b->n_items);
    int n = 0, row = 0;
    if (!list)
        return; /* the masks are then computed one by one as rows are sampled */
    for (int i = 0; i < b->n_items; i++) {
        if (!b->items[i].want_logits)
            continue;
        int r = row++;
        qs_seq *seq = b->items[i].seq;
        if (active_grammar(seq) && !(n_device && e->tokens[r] >= 0))
            list[n++] = seq->grammar;
    }
    if (n > 1) {
        mask_job j = {list};
        qs_parallel_for(n, 1, mask_range, &j);
    }
    if (list != local)
        free(list);
}

int qs_engine_step(qs_engine *e)
{
    take_submissions(e);
    qs_sched_batch *b = &e->batch;
    if (qs_scheduler_schedule(&e->sched, b)) {
        qs_error("engine: out of memory while scheduling");
        publish_load(e);
        return -1;
    }
    if (b->n_items == 0) {
        publish_load(e);
        return 0;
    }
    if (ensure_buffers(e, b->n_items)) {
        qs_scheduler_step_done(&e->sched, false);
        for (int i = 0; i < b->n_items; i++)
            abort_seq(e, b->items[i].seq, QS_FINISH_ERROR, "out of memory for the forward step");
        publish_load(e);
        return -1;
    }
    double now = qs_now_seconds();
    int step_tokens = 0;
    for (int i = 0; i < b->n_items; i++)
        step_tokens += b->items[i].n_new;
    pthread_mutex_lock(&e->mu);
    qs_histogram_observe(&e->stats.step_tokens, step_tokens);
    pthread_mutex_unlock(&e->mu);
    for (int i = 0; i < b->n_items; i++) {
        qs_seq *seq = b->items[i].seq;
        if (!seq->scheduled_before) {
            seq->scheduled_before = true;
            seq->t_scheduled = now;
            pthread_mutex_lock(&e->mu);
            qs_histogram_observe(&e->stats.queue, now - seq->t_arrival);
            pthread_mutex_unlock(&e->mu);
        }
        e->steps[i] = (qs_seq_step){
            .tokens = seq->tokens + seq->n_computed,
            .n_tokens = b->items[i].n_new,
            .start_pos = seq->n_computed,
            .block_table = seq->blocks,
            .n_blocks = seq->n_blocks,
            .want_logits = b->items[i].want_logits,
        };
    }
    /* Rows the device samples, when the backend can: their tokens come back instead of logits. */
    int n_device = 0;
    if (e->backend.forward_sample) {
        int row = 0;
        for (int i = 0; i < b->n_items; i++) {
            if (!b->items[i].want_logits)
                continue;
            qs_sample_row *r = &e->rows[row++];
            if (device_row(e, b->items[i].seq, r)) {
                n_device++;
            } else {
                memset(r, 0, sizeof *r);
                r->skip = 1;
            }
        }
    }
    qs_err err = {{0}};
    int rc = n_device ? e->backend.forward_sample(e->backend.ctx, e->steps, b->n_items, e->rows, e->tokens, e->logits,
                                                  &err)
                      : e->backend.forward(e->backend.ctx, e->steps, b->n_items, e->logits, &err);
    qs_scheduler_step_done(&e->sched, rc == 0);
    if (rc) {
        qs_error("engine: forward pass failed: %s", err.msg);
        for (int i = 0; i < b->n_items; i++)
            abort_seq(e, b->items[i].seq, QS_FINISH_ERROR, err.msg);
        publish_load(e);
        return -1;
    }
    prepare_masks(e, b, n_device);
    int row = 0;
    for (int i = 0; i < b->n_items; i++) {
        qs_seq *seq = b->items[i].seq;
        seq->n_computed += b->items[i].n_new;
        if (!b->items[i].want_logits)
            continue;
        int r = row++;
        if (n_device && e->tokens[r] >= 0) { /* sampled on the device (-1: logits came back) */
            note_reasoning_end(seq, e->tokens[r]);
            on_sampled(e, seq, e->tokens[r], NULL);
            continue;
        }
        float *logits = e->logits + (size_t)r * (size_t)e->backend.vocab_size;
        if (seq->n_computed < seq->n_tokens) { /* a prompt position: the logprob of the next prompt token */
            qs_prompt_logprob_fill(logits, e->backend.vocab_size, seq->tokens[seq->n_computed], seq->prompt_logprobs,
                                   &seq->prompt_lp[seq->n_computed]);
            seq->n_prompt_lp = seq->n_computed + 1;
            continue;
        }
        if (seq->prompt_only) { /* echo with max_tokens 0: the prompt is scored, nothing generated */
            qs_engine_event *ev = qs_seq_final_event(seq, QS_FINISH_LENGTH, NULL);
            attach_prompt_logprobs(seq, ev);
            finish_seq(e, seq, ev);
            continue;
        }
        mask_end_tokens(e, seq, logits);
        qs_matcher *grammar = active_grammar(seq);
        if (grammar && qs_matcher_mask_logits(grammar, logits, e->backend.vocab_size) == 0) {
            abort_seq(e, seq, QS_FINISH_ERROR, "structured output: no token of the vocabulary can continue the output");
            continue;
        }
        qs_seq_apply_token_masks(seq, logits, e->backend.vocab_size);
        qs_token_logprobs lp;
        bool want_lp = seq->sampling.logprobs >= 0;
        int32_t token = qs_sample(&seq->sampling, seq->sampler, logits, e->backend.vocab_size, want_lp ? &lp : NULL);
        if (grammar) {
            if (!qs_matcher_accept_token(grammar, token)) {
                abort_seq(e, seq, QS_FINISH_ERROR, "structured output: the sampled token breaks the grammar");
                continue;
            }
            seq->grammar_done = !qs_matcher_ended(grammar) && qs_matcher_is_terminated(grammar);
        }
        note_reasoning_end(seq, token);
        on_sampled(e, seq, token, want_lp ? &lp : NULL);
    }
    publish_load(e);
    return 1;
}

/* One line every few seconds while there is work, like vLLM's periodic stats line. */
typedef struct throughput_mark {
    double t;
    unsigned long long prompt, gen, pc_queries, pc_hits;
} throughput_mark;

static void mark_now(qs_engine *e, throughput_mark *m)
{
    m->t = qs_now_seconds();
    m->prompt = e->stats.prompt_tokens_total;
    m->gen = e->stats.generation_tokens_total;
    m->pc_queries = e->stats.prefix_cache_queries_total;
    m->pc_hits = e->stats.prefix_cache_hits_total;
}

static void log_throughput(qs_engine *e, throughput_mark *last)
{
    double t = qs_now_seconds();
    double interval = e->opt.log_stats_interval_s > 0 ? e->opt.log_stats_interval_s : 5.0;
    if (e->opt.disable_log_stats || t - last->t < interval)
        return;
    throughput_mark now;
    pthread_mutex_lock(&e->mu);
    mark_now(e, &now);
    qs_engine_load l = e->load;
    pthread_mutex_unlock(&e->mu);
    if (now.prompt != last->prompt || now.gen != last->gen) {
        char pc[64] = "";
        unsigned long long q = now.pc_queries - last->pc_queries, h = now.pc_hits - last->pc_hits;
        if (l.prefix_caching)
            snprintf(pc, sizeof pc, ", prefix cache hit rate %.1f%%", q ? 100.0 * (double)h / (double)q : 0.0);
        qs_info("engine: prompt %.1f tok/s, generation %.1f tok/s, running %d, waiting %d, KV cache %.1f%%%s, "
                "preemptions %lld",
                (double)(now.prompt - last->prompt) / (t - last->t), (double)(now.gen - last->gen) / (t - last->t),
                l.num_running, l.num_waiting,
                l.num_blocks ? 100.0 * (1.0 - (double)l.num_free_blocks / l.num_blocks) : 0.0, pc, l.num_preemptions);
    }
    *last = now;
    last->t = t;
}

static void *engine_main(void *arg)
{
    qs_engine *e = arg;
    throughput_mark last;
    pthread_mutex_lock(&e->mu);
    mark_now(e, &last);
    pthread_mutex_unlock(&e->mu);
    for (;;) {
        pthread_mutex_lock(&e->mu);
        bool idled = false;
        while (!e->stopping && e->n_inbox == 0 && e->n_aborts == 0 && !e->abort_all && e->sched.n_running == 0 &&
               e->sched.n_waiting == 0) {
            pthread_cond_wait(&e->cv, &e->mu);
            idled = true;
        }
        if (idled) /* rates are measured over busy time only */
            mark_now(e, &last);
        bool stop = e->stopping;
        pthread_mutex_unlock(&e->mu);
        if (stop)
            break;
        qs_engine_step(e);
        log_throughput(e, &last);
    }
    return NULL;
}

void qs_engine_get_load(qs_engine *e, qs_engine_load *out)
{
    pthread_mutex_lock(&e->mu);
    *out = e->load;
    out->num_waiting = e->n_waiting_snapshot + e->n_inbox;
    pthread_mutex_unlock(&e->mu);
}

void qs_engine_get_stats(qs_engine *e, qs_engine_stats *out)
{
    pthread_mutex_lock(&e->mu);
    *out = e->stats;
    pthread_mutex_unlock(&e->mu);
}

void qs_engine_close(qs_engine *e)
{
    pthread_mutex_lock(&e->mu);
    bool was_stopping = e->stopping;
    e->stopping = true;
    e->abort_all = true;
    pthread_cond_signal(&e->cv);
    pthread_mutex_unlock(&e->mu);
    if (was_stopping)
        return;
    if (e->thread_started)
        pthread_join(e->thread, NULL);
    e->thread_started = false;
    /* Whatever is left gets an abort event so waiting HTTP threads return. */
    take_submissions(e);
    publish_load(e);
}

void qs_engine_free(qs_engine *e)
{
    if (!e)
        return;
    qs_engine_close(e);
    take_submissions(e);
    qs_scheduler_destroy(&e->sched);
    qs_sched_batch_free(&e->batch);
    if (e->backend.destroy)
        e->backend.destroy(e->backend.ctx);
    pthread_mutex_destroy(&e->mu);
    pthread_cond_destroy(&e->cv);
    free(e->inbox);
    free(e->aborts);
    free(e->steps);
    free(e->rows);
    free(e->tokens);
    free(e->logits);
    qs_vocab_trie_free(e->trie);
    pthread_mutex_destroy(&e->trie_mu);
    free(e->eos);
    free(e);
}
