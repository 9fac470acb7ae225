/* bench_structured.c — the cost of structured outputs, on one core:
 *   1. compile time per specification (median of 30 compiles);
 *   (compile and mask times are this thread's CPU time, so other work on the machine does not
 *   inflate them)
 *   2. mask time per token with the real Qwen3 tokenizer (151,669 tokens): fresh generations
 *      that draw a random allowed token each step, each with a freshly compiled grammar (so the
 *      per-state mask cache starts cold, as for a new request), median / p99 / max of
 *      qs_matcher_fill_mask;
 *   3. with --model DIR (a checkpoint with Qwen3's vocabulary, e.g. `qserve init-model --shape
 *      small-qwen3` with the real tokenizer files copied in): end-to-end decode tokens/s of the
 *      engine for free and for JSON-schema-constrained requests, side by side in one run.
 *
 *   build/bench_structured [--tokenizer ../shared/data/tokenizers/qwen3] [--runs 20]
 *                          [--model DIR] [--batch 4] [--tokens 64]             (docs/structured.md) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/args.h"
#include "config/config.h"
#include "engine/engine.h"
#include "model/kv_cache.h"
#include "model/model.h"
#include "structured/structured.h"
#include "tokenizer/tokenizer.h"
#include "util/fileio.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* CPU time of this thread: the figures stay meaningful on a machine shared with other work. */
static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t rng = 88172645463325252ULL;
static uint32_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 11);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct spec {
    const char *name;
    qs_so_kind kind;
    const char *text;
} spec;

static const spec SPECS[] = {
    {"json schema", QS_SO_JSON_SCHEMA,
     "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\",\"maxLength\":40},\"age\":{\"type\":\"integer\","
     "\"minimum\":0,\"maximum\":150},\"email\":{\"type\":\"string\",\"format\":\"email\"},\"tags\":{\"type\":\"array\","
     "\"items\":{\"type\":\"string\",\"maxLength\":12},\"maxItems\":5},\"active\":{\"type\":\"boolean\"}},"
     "\"required\":[\"name\",\"age\",\"active\"],\"additionalProperties\":false}"},
    {"regex", QS_SO_REGEX, "(\\+1 )?\\(\\d{3}\\) \\d{3}-\\d{4}( ext\\. \\d{1,5})?|[A-Z][a-z]{2,12}, [A-Z]{2} \\d{5}"},
    {"nested schema", QS_SO_JSON_SCHEMA,
     "{\"$defs\":{\"item\":{\"type\":\"object\",\"properties\":{\"sku\":{\"type\":\"string\",\"pattern\":\"^[A-Z]{3}-[0-9]{4}$\"},"
     "\"qty\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":999},\"note\":{\"anyOf\":[{\"type\":\"string\",\"maxLength\":30},"
     "{\"type\":\"null\"}]}},\"required\":[\"sku\",\"qty\"]},\"addr\":{\"type\":\"object\",\"properties\":{\"street\":"
     "{\"type\":\"string\",\"maxLength\":30},\"zip\":{\"type\":\"string\",\"pattern\":\"^[0-9]{5}$\"},\"geo\":{\"type\":"
     "\"object\",\"properties\":{\"lat\":{\"type\":\"number\"},\"lon\":{\"type\":\"number\"}},\"required\":[\"lat\",\"lon\"]}},"
     "\"required\":[\"street\",\"zip\"]}},\"type\":\"object\",\"properties\":{\"id\":{\"type\":\"string\",\"format\":\"uuid\"},"
     "\"date\":{\"type\":\"string\",\"format\":\"date\"},\"customer\":{\"type\":\"object\",\"properties\":{\"name\":{\"type\":"
     "\"string\",\"maxLength\":30},\"ship\":{\"$ref\":\"#/$defs/addr\"},\"bill\":{\"$ref\":\"#/$defs/addr\"}},\"required\":"
     "[\"name\",\"ship\"]},\"items\":{\"type\":\"array\",\"items\":{\"$ref\":\"#/$defs/item\"},\"minItems\":1,\"maxItems\":4},"
     "\"status\":{\"enum\":[\"new\",\"paid\",\"shipped\"]}},\"required\":[\"id\",\"customer\",\"items\",\"status\"]}"},
};
#define N_SPECS (int)(sizeof SPECS / sizeof SPECS[0])

static qs_grammar *compile_spec(const spec *s, bool cached, qs_err *err)
{
    qs_so_options opt = {.uncached = !cached};
    return qs_grammar_compile(s->kind, s->text, strlen(s->text), &opt, err);
}

static int bench_masks(const char *tok_dir, int runs)
{
    qs_tokenizer *tok;
    qs_err err;
    if (qs_tokenizer_load(tok_dir, &tok, &err)) {
        printf("skip: the Qwen3 tokenizer is not at %s (%s)\n", tok_dir, err.msg);
        return 0;
    }
    int vocab = (int)qs_tokenizer_vocab_size(tok);
    int32_t eos[2] = {qs_tokenizer_token_to_id(tok, "<|im_end|>"), qs_tokenizer_token_to_id(tok, "<|endoftext|>")};
    double t0 = now();
    qs_vocab_trie *trie = qs_vocab_trie_from_tokenizer(tok, vocab, eos, 2, &err);
    double t_trie = now() - t0;
    if (!trie) {
        fprintf(stderr, "error: %s\n", err.msg);
        return -1;
    }
    printf("tokenizer %s: %d tokens, trie built once in %.1f ms\n\n", tok_dir, vocab, t_trie * 1e3);
    printf("grammar: fresh = compiled anew for each generation (masks computed cold, as for a new schema);\n"
           "         shared = the compile cache hands every generation the same grammar (a repeated schema)\n\n");
    printf("%-14s %-7s %12s %8s %12s %12s %12s %12s\n", "spec", "grammar", "compile ms", "tokens", "median us", "p99 us", "max us",
           "mean us");
    uint32_t *mask = malloc(qs_mask_words(trie) * 4);
    int32_t *allowed = malloc(sizeof *allowed * (size_t)vocab);
    for (int s = 0; s < N_SPECS; s++) {
        double ct[30];
        for (int k = 0; k < 30; k++) {
            double a = cpu_now();
            qs_grammar *g = compile_spec(&SPECS[s], false, &err);
            ct[k] = cpu_now() - a;
            if (!g) {
                fprintf(stderr, "error: %s: %s\n", SPECS[s].name, err.msg);
                return -1;
            }
            qs_grammar_release(g);
        }
        /* warm the cache entry used by the shared runs: the first shared run still starts cold */
        qsort(ct, 30, sizeof ct[0], cmp_double);
      for (int cached = 0; cached < 2; cached++) {
        size_t cap = 4096, n = 0;
        double *t = malloc(sizeof *t * cap);
        rng = 88172645463325252ULL; /* the same generations both ways */
        for (int r = 0; r < runs; r++) {
            qs_grammar *g = compile_spec(&SPECS[s], cached, &err);
            qs_matcher *m = qs_matcher_new(g, trie);
            qs_grammar_release(g);
            for (int step = 0; step < 400; step++) {
                double a = cpu_now();
                int n_allowed = qs_matcher_fill_mask(m, mask);
                double b = cpu_now();
                if (n == cap) {
                    cap *= 2;
                    t = realloc(t, sizeof *t * cap);
                }
                t[n++] = b - a;
                if (n_allowed == 0)
                    break;
                bool can_end = qs_matcher_is_complete(m);
                if (can_end && rnd() % 3 == 0)
                    break;
                int k = 0;
                for (int i = 0; i < vocab; i++)
                    if ((mask[i >> 5] >> (i & 31) & 1) && i != eos[0] && i != eos[1])
                        allowed[k++] = i;
                if (k == 0)
                    break;
                /* short tokens half of the time, so strings and numbers take several steps */
                int32_t pick = allowed[rnd() % (uint32_t)k];
                for (int tries = 0; tries < 8 && rnd() % 2; tries++) {
                    int32_t alt = allowed[rnd() % (uint32_t)k];
                    const char *a1 = qs_tokenizer_id_to_token(tok, alt), *a0 = qs_tokenizer_id_to_token(tok, pick);
                    if (a1 && a0 && strlen(a1) < strlen(a0))
                        pick = alt;
                }
                if (!qs_matcher_accept_token(m, pick)) {
                    fprintf(stderr, "error: token %d was allowed but refused\n", pick);
                    return -1;
                }
                if (qs_matcher_is_terminated(m))
                    break;
            }
            qs_matcher_free(m);
        }
        double sum = 0;
        for (size_t i = 0; i < n; i++)
            sum += t[i];
        qsort(t, n, sizeof t[0], cmp_double);
        printf("%-14s %-7s %12.3f %8zu %12.1f %12.1f %12.1f %12.1f\n", SPECS[s].name, cached ? "shared" : "fresh",
               ct[15] * 1e3, n, t[n / 2] * 1e6, t[(size_t)((double)n * 0.99)] * 1e6, t[n - 1] * 1e6,
               sum / (double)n * 1e6);
        free(t);
      }
    }
    free(mask);
    free(allowed);
    qs_vocab_trie_free(trie);
    qs_tokenizer_free(tok);
    return 0;
}

/* ---- end to end ---- */

static const char *E2E_SCHEMA = "{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{\"word\":{\"type\":"
                                "\"string\",\"maxLength\":16},\"n\":{\"type\":\"integer\"}},\"required\":[\"word\",\"n\"]}}";

static double process_cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Decode wall time (the prefill step excluded); *cpu_s gets the process CPU time of the same span.
 * lens NULL: each request writes up to `tokens`; else request i writes exactly lens[i] tokens (EOS
 * ignored), so that free requests can keep the batch as full, step by step, as constrained ones
 * did. out_lens (may be NULL) receives each request's output length. */
static double run_e2e(qs_engine *e, qs_grammar *g, int batch, int tokens, const int *lens, int *out_lens,
                      int *produced, double *cpu_s)
{
    qs_event_sink **sinks = calloc((size_t)batch, sizeof *sinks);
    int32_t prompt[8] = {9707, 11, 1879, 374, 264, 3364, 315, 4244}; /* arbitrary ids */
    *produced = 0;
    for (int i = 0; i < batch; i++) {
        qs_seq_request r = {0};
        r.prompt = prompt;
        r.n_prompt = 8;
        qs_sampling_params_defaults(&r.sampling);
        r.sampling.temperature = 1;
        r.sampling.has_seed = true;
        r.sampling.seed = (uint64_t)i + 1;
        r.max_tokens = lens ? lens[i] : tokens;
        r.ignore_eos = lens != NULL;
        r.grammar = g;
        if (out_lens)
            out_lens[i] = 0;
        sinks[i] = qs_event_sink_new();
        qs_err err;
        if (qs_engine_submit(e, &r, 1, sinks[i], &err) != QS_SUBMIT_OK) {
            fprintf(stderr, "error: submit: %s\n", err.msg);
            return -1;
        }
    }
    /* the first step is the prefill: not timed */
    if (qs_engine_step(e) < 0)
        return -1;
    int left = batch;
    for (int i = 0; i < batch; i++) {
        qs_engine_event *list = qs_event_sink_take(sinks[i], 0);
        for (qs_engine_event *ev = list; ev; ev = ev->next) {
            if (ev->token >= 0 && out_lens)
                out_lens[i]++;
            if (ev->finish != QS_FINISH_NONE)
                left--;
        }
        qs_engine_event_free_list(list);
    }
    double t0 = now(), c0 = process_cpu_now();
    while (left > 0) {
        if (qs_engine_step(e) < 0)
            return -1;
        for (int i = 0; i < batch; i++) {
            qs_engine_event *list = qs_event_sink_take(sinks[i], 0);
            for (qs_engine_event *ev = list; ev; ev = ev->next) {
                if (ev->token >= 0) {
                    (*produced)++;
                    if (out_lens)
                        out_lens[i]++;
                }
                if (ev->finish != QS_FINISH_NONE)
                    left--;
            }
            qs_engine_event_free_list(list);
        }
    }
    double dt = now() - t0;
    *cpu_s = process_cpu_now() - c0;
    for (int i = 0; i < batch; i++)
        qs_event_sink_release(sinks[i]);
    free(sinks);
    return dt;
}

static int bench_e2e(const char *model_dir, int batch, int tokens)
{
    char *argv[] = {"bench_structured", (char *)model_dir, "--device", "cpu", NULL};
    qs_config cfg;
    qs_err err;
    if (qs_config_parse_args(4, argv, &cfg, &err)) {
        fprintf(stderr, "error: %s\n", err.msg);
        return -1;
    }
    qs_model *m;
    qs_tokenizer *tok;
    if (qs_model_load(&cfg, &m, &err) || qs_tokenizer_load(model_dir, &tok, &err)) {
        fprintf(stderr, "error: %s\n", err.msg);
        return -1;
    }
    const qs_model_config *mc = qs_model_get_config(m);
    int max_len = 1024;
    int blocks = 2 * ((max_len + QS_KV_BLOCK_SIZE - 1) / QS_KV_BLOCK_SIZE) * batch;
    qs_kv_cache *kv;
    qs_engine_backend backend;
    if (qs_kv_cache_create(mc, qs_model_device(m)->platform, blocks, &kv, &err) ||
        qs_engine_backend_model(m, kv, &backend, &err)) {
        fprintf(stderr, "error: %s\n", err.msg);
        return -1;
    }
    int32_t eos[2] = {qs_tokenizer_token_to_id(tok, "<|im_end|>"), qs_tokenizer_token_to_id(tok, "<|endoftext|>")};
    qs_engine_options opt = {.max_num_seqs = batch, .max_num_batched_tokens = 2048, .max_model_len = max_len,
                             .seed = 1, .eos_ids = eos, .n_eos = 2, .tokenizer = tok, .start_thread = false};
    qs_engine *e;
    if (qs_engine_create(&opt, &backend, &e, &err)) {
        fprintf(stderr, "error: %s\n", err.msg);
        return -1;
    }
    qs_grammar *g = qs_grammar_compile(QS_SO_JSON_SCHEMA, E2E_SCHEMA, strlen(E2E_SCHEMA), NULL, &err);
    if (!g) {
        fprintf(stderr, "error: %s\n", err.msg);
        return -1;
    }
    printf("\nend to end: %s (vocab %d), batch %d, up to %d tokens each, temperature 1, one engine thread\n",
           model_dir, mc->vocab_size, batch, tokens);
    printf("%-6s %-14s %10s %10s %16s\n", "round", "requests", "tokens", "tok/s", "tok/CPU-second");
    /* 0: free up to `tokens`; 1: constrained (they end when the JSON closes, so the batch thins
     * out); 2: free again, each request as long as its constrained twin: the same batch, step by
     * step, so the ratio of 1 to 2 is the constraint's own cost */
    static const char *const NAMES[3] = {"free", "json schema", "free, same len"};
    double best[3] = {0, 0, 0}, best_cpu[3] = {0, 0, 0};
    int n_tok;
    double cpu;
    int *lens = calloc((size_t)batch, sizeof *lens);
    run_e2e(e, g, batch, tokens, NULL, NULL, &n_tok, &cpu); /* warm-up: builds the trie, fills first caches */
    for (int round = 1; round <= 3; round++)
        for (int c = 0; c < 3; c++) {
            double dt = run_e2e(e, c == 1 ? g : NULL, batch, tokens, c == 2 ? lens : NULL, c == 1 ? lens : NULL,
                                &n_tok, &cpu);
            if (dt <= 0)
                return -1;
            double tps = n_tok / dt, tpc = n_tok / cpu;
            if (tps > best[c])
                best[c] = tps;
            if (tpc > best_cpu[c])
                best_cpu[c] = tpc;
            printf("%-6d %-14s %10d %10.1f %16.1f\n", round, NAMES[c], n_tok, tps, tpc);
        }
    free(lens);
    printf("best: free %.1f tok/s, constrained %.1f tok/s: constrained / free = %.2f (per CPU-second: %.2f)\n",
           best[0], best[1], best[1] / best[0], best_cpu[1] / best_cpu[0]);
    printf("same batch, step by step: free %.1f tok/s, constrained %.1f tok/s: constrained / free = %.2f "
           "(per CPU-second: %.2f)\n",
           best[2], best[1], best[1] / best[2], best_cpu[1] / best_cpu[2]);
    qs_grammar_release(g);
    qs_engine_free(e);
    qs_tokenizer_free(tok);
    return 0;
}

int main(int argc, char **argv)
{
    const char *tok_dir = NULL, *model = NULL, *v;
    long runs = 20, batch = 4, tokens = 64;
    for (int i = 1; i < argc; i++) {
        int r;
        if ((r = qs_arg_value(argc, argv, &i, "--tokenizer", &tok_dir)) != 0 ||
            (r = qs_arg_value(argc, argv, &i, "--model", &model)) != 0) {
            if (r < 0)
                return 2;
        } else if ((r = qs_arg_value(argc, argv, &i, "--runs", &v)) != 0) {
            if (r < 0 || qs_arg_int("--runs", v, &runs) || runs < 1)
                return 2;
        } else if ((r = qs_arg_value(argc, argv, &i, "--batch", &v)) != 0) {
            if (r < 0 || qs_arg_int("--batch", v, &batch) || batch < 1)
                return 2;
        } else if ((r = qs_arg_value(argc, argv, &i, "--tokens", &v)) != 0) {
            if (r < 0 || qs_arg_int("--tokens", v, &tokens) || tokens < 1)
                return 2;
        } else {
            fprintf(stderr, "usage: bench_structured [--tokenizer DIR] [--runs N] [--model DIR] [--batch N] [--tokens N]\n");
            return 2;
        }
    }
    char def[1024];
    if (!tok_dir) {
        snprintf(def, sizeof def, "%s/tokenizers/qwen3", qs_shared_data_dir());
        tok_dir = def;
    }
    if (bench_masks(tok_dir, (int)runs))
        return 1;
    if (model && bench_e2e(model, (int)batch, (int)tokens))
        return 1;
    return 0;
}
