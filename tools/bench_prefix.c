/* bench_prefix.c — what automatic prefix caching buys, measured on the engine itself (no HTTP):
 *  1. TTFT of a request whose --shared-token prefix another request already computed, against the
 *     same request on an engine without the cache (cold), side by side, --reps times with fresh
 *     prefixes (medians printed), and the lookup's own cost (hashing the prompt's full blocks and
 *     walking the table) against a decode step of the same engine;
 *  2. a multi-turn chat replay: --convs conversations of --turns turns, each turn resending the
 *     whole history plus --turn-tokens new tokens and generating --reply tokens, with the cache
 *     and without: wall time, token throughput and mean TTFT.
 * Token ids are random (the model is random too: `qserve init-model --shape small-llama`), greedy,
 * EOS ignored, so both runs do the same work but for what the cache skips.
 *
 *   build/bench_prefix MODEL_DIR [--shared 1000] [--suffix 24] [--reps 3] [--turns 6]
 *       [--turn-tokens 64] [--reply 32] [--convs 2] [qserve flags: --threads, --device, ...] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/args.h"
#include "config/config.h"
#include "engine/engine.h"
#include "model/kv_cache.h"
#include "engine/prefix_cache.h"
#include "model/model.h"

typedef struct {
    long shared, suffix, reps, turns, turn_tokens, reply, convs;
} options;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint32_t rng = 2024;
static int32_t rand_token(int vocab)
{
    rng = rng * 1664525u + 1013904223u;
    return 3 + (int32_t)((rng >> 8) % (uint32_t)(vocab - 3));
}

typedef struct {
    qs_engine *e;
    int vocab;
    int max_model_len;
} bench_engine;

static int engine_open(const qs_config *cfg, bool caching, int max_model_len, int max_seqs, bench_engine *be)
{
    qs_err err;
    qs_model *m;
    if (qs_model_load(cfg, &m, &err)) {
        fprintf(stderr, "error: %s\n", err.msg);
        return -1;
    }
    const qs_model_config *mc = qs_model_get_config(m);
    int blocks = 4 * ((max_model_len + QS_KV_BLOCK_SIZE - 1) / QS_KV_BLOCK_SIZE) * max_seqs;
    qs_kv_cache *kv;
    qs_engine_backend backend;
    if (qs_kv_cache_create(mc, qs_model_device(m)->platform, blocks, &kv, &err) ||
        qs_engine_backend_model(m, kv, &backend, &err)) {
        fprintf(stderr, "error: %s\n", err.msg);
        return -1;
    }
    be->vocab = mc->vocab_size;
    be->max_model_len = max_model_len;
    qs_engine_options opt = {.max_num_seqs = max_seqs, .max_num_batched_tokens = 2048, .max_model_len = max_model_len,
                             .seed = 1, .start_thread = false, .enable_prefix_caching = caching};
    if (qs_engine_create(&opt, &backend, &be->e, &err)) {
        fprintf(stderr, "error: %s\n", err.msg);
        return -1;
    }
    return 0;
}

/* A block pool for the lookup timing: ids 0..n-1 handed out in order. */
typedef struct {
    int n, next;
} pool_backend;
static int32_t pool_alloc(void *c)
{
    pool_backend *p = c;
    return p->next < p->n ? p->next++ : -1;
}
static void pool_release(void *c, int32_t b) { (void)c, (void)b; }

typedef struct {
    double t_submit, ttft;
    int cached, n_out;
    int32_t out[4096];
    bool done;
} req_state;

/* Submits n requests at once and steps the engine until all finish; fills ttft, cached, out.
 * Returns the wall time, or -1. */
static double run_batch(bench_engine *be, int32_t **prompts, const int *lens, int max_tokens, int n, req_state *st,
                        double *decode_step_s)
{
    qs_event_sink **sinks = calloc((size_t)n, sizeof *sinks);
    double t0 = now();
    for (int i = 0; i < n; i++) {
        qs_seq_request r = {0};
        r.prompt = prompts[i];
        r.n_prompt = lens[i];
        qs_sampling_params_defaults(&r.sampling);
        r.sampling.temperature = 0;
        r.max_tokens = max_tokens;
        r.ignore_eos = true;
        sinks[i] = qs_event_sink_new();
        memset(&st[i], 0, sizeof st[i]);
        st[i].t_submit = now();
        qs_err err;
        if (qs_engine_submit(be->e, &r, 1, sinks[i], &err) != QS_SUBMIT_OK) {
            fprintf(stderr, "error: submit: %s\n", err.msg);
            return -1;
        }
    }
    int left = n, decode_steps = 0;
    double decode_time = 0;
    while (left > 0) {
        bool all_started = true;
        for (int i = 0; i < n; i++)
            all_started &= st[i].n_out > 0;
        double ts = now();
        if (qs_engine_step(be->e) < 0)
            return -1;
        double te = now();
        if (all_started) { /* every sequence decoding: a pure decode step */
            decode_time += te - ts;
            decode_steps++;
        }
        for (int i = 0; i < n; i++) {
            qs_engine_event *list = qs_event_sink_take(sinks[i], 0);
            for (qs_engine_event *ev = list; ev; ev = ev->next) {
                if (ev->token >= 0) {
                    if (st[i].n_out == 0)
                        st[i].ttft = te - st[i].t_submit;
                    st[i].out[st[i].n_out++] = ev->token;
                }
                if (ev->finish != QS_FINISH_NONE) {
                    st[i].cached = ev->cached_tokens;
                    st[i].done = true;
                    left--;
                }
            }
            qs_engine_event_free_list(list);
        }
    }
    for (int i = 0; i < n; i++)
        qs_event_sink_release(sinks[i]);
    free(sinks);
    if (decode_step_s)
        *decode_step_s = decode_steps ? decode_time / decode_steps : 0;
    return now() - t0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Part 1: cached vs cold TTFT at opt->shared shared tokens. */
static int bench_ttft(const qs_config *cfg, const options *o)
{
    int len = (int)(o->shared + o->suffix);
    bench_engine warm, cold;
    if (engine_open(cfg, true, len + 64, 1, &warm) || engine_open(cfg, false, len + 64, 1, &cold))
        return -1;
    double *t_cold = calloc((size_t)o->reps, sizeof(double)), *t_warm = calloc((size_t)o->reps, sizeof(double));
    double *t_first = calloc((size_t)o->reps, sizeof(double)), step_s = 0;
    int cached = 0;
    int32_t *a = malloc(sizeof(int32_t) * (size_t)len), *b = malloc(sizeof(int32_t) * (size_t)len);
    req_state *st = malloc(sizeof *st);
    for (int r = 0; r < o->reps; r++) {
        for (int i = 0; i < len; i++)
            a[i] = b[i] = rand_token(warm.vocab);
        for (int i = (int)o->shared; i < len; i++)
            b[i] = rand_token(warm.vocab); /* the same prefix, another question */
        int32_t *pa[1] = {a}, *pb[1] = {b};
        if (run_batch(&warm, pa, &len, 8, 1, st, NULL) < 0) /* computes and caches the prefix */
            return -1;
        t_first[r] = st->ttft;
        if (run_batch(&warm, pb, &len, 8, 1, st, &step_s) < 0)
            return -1;
        t_warm[r] = st->ttft;
        cached = st->cached;
        if (run_batch(&cold, pb, &len, 8, 1, st, NULL) < 0)
            return -1;
        t_cold[r] = st->ttft;
    }
    /* the lookup alone, as admission runs it: hash the prompt's full blocks and walk the table of
     * a pool that holds them all (every block a hit: the longest walk) */
    int n_full = len / QS_KV_BLOCK_SIZE, iters = 2000;
    uint64_t *hashes = malloc(sizeof(uint64_t) * (size_t)n_full);
    int32_t *hit = malloc(sizeof(int32_t) * (size_t)n_full);
    pool_backend pool = {.n = n_full};
    qs_engine_backend pb = {.ctx = &pool, .num_blocks = n_full, .alloc_block = pool_alloc, .release_block = pool_release};
    qs_prefix_cache *pc = qs_prefix_cache_new(&pb, true, 42);
    uint64_t root = qs_prefix_cache_root(pc, NULL), parent = root;
    for (int i = 0; i < n_full; i++) {
        hashes[i] = qs_prefix_cache_block_hash(parent, b + (size_t)i * QS_KV_BLOCK_SIZE);
        qs_prefix_cache_insert(pc, qs_prefix_cache_alloc(pc), hashes[i], parent, b + (size_t)i * QS_KV_BLOCK_SIZE);
        parent = hashes[i];
    }
    qs_prefix_cache_commit(pc);
    double tl = now();
    long found = 0;
    for (int it = 0; it < iters; it++) {
        parent = root;
        for (int i = 0; i < n_full; i++)
            parent = hashes[i] = qs_prefix_cache_block_hash(parent, b + (size_t)i * QS_KV_BLOCK_SIZE);
        found += qs_prefix_cache_lookup(pc, root, hashes, b, n_full, hit);
    }
    double hash_s = (now() - tl) / iters;
    if (found != (long)iters * n_full)
        fprintf(stderr, "warning: the lookup found %ld blocks, not %ld\n", found, (long)iters * n_full);
    free(hit);
    double mc = median(t_cold, (int)o->reps), mw = median(t_warm, (int)o->reps), mf = median(t_first, (int)o->reps);
    printf("#### TTFT with a %ld-token shared prefix (prompt %d tokens, %ld runs, medians)\n\n", o->shared, len, o->reps);
    printf("| request | TTFT (ms) | prompt tokens computed |\n|---|---:|---:|\n");
    printf("| first request, cache empty | %.1f | %d |\n", mf * 1e3, len);
    printf("| same prefix again, cache off (cold) | %.1f | %d |\n", mc * 1e3, len);
    printf("| same prefix again, cache on | %.1f | %d (%d cached) |\n\n", mw * 1e3, len - cached, cached);
    printf("cached / cold TTFT: %.3f (%.1fx faster)\n", mw / mc, mc / mw);
    printf("prefix lookup (hash %d full blocks, find them all): %.2f us per request, %.4f%% of a decode step "
           "(%.2f ms)\n\n",
           n_full, hash_s * 1e6, step_s > 0 ? 100.0 * hash_s / step_s : 0, step_s * 1e3);
    free(hashes);
    qs_prefix_cache_free(pc);
    free(a);
    free(b);
    free(st);
    free(t_cold);
    free(t_warm);
    free(t_first);
    qs_engine_free(warm.e);
    qs_engine_free(cold.e);
    return 0;
}

/* Part 2: multi-turn replay, with and without the cache. */
static int bench_replay(const qs_config *cfg, const options *o)
{
    int max_len = (int)(o->turns * (o->turn_tokens + o->reply)) + 64;
    printf("#### Multi-turn replay: %ld conversations x %ld turns, +%ld user tokens and %ld generated a turn\n\n",
           o->convs, o->turns, o->turn_tokens, o->reply);
    printf("| prefix caching | wall (s) | prompt tokens | cached | tokens/s (prompt + generated) | mean TTFT (ms) |\n");
    printf("|---|---:|---:|---:|---:|---:|\n");
    uint32_t seed = rng;
    for (int pass = 0; pass < 2; pass++) {
        bool caching = pass == 0;
        rng = seed; /* both passes replay the same conversations */
        bench_engine be;
        if (engine_open(cfg, caching, max_len, (int)o->convs, &be))
            return -1;
        int n = (int)o->convs;
        int32_t **hist = calloc((size_t)n, sizeof *hist);
        int *lens = calloc((size_t)n, sizeof *lens);
        req_state *st = malloc(sizeof *st * (size_t)n);
        for (int c = 0; c < n; c++)
            hist[c] = malloc(sizeof(int32_t) * (size_t)max_len);
        double wall = 0, ttft_sum = 0;
        long prompt_tokens = 0, gen_tokens = 0, cached = 0;
        for (int t = 0; t < o->turns; t++) {
            for (int c = 0; c < n; c++)
                for (int i = 0; i < o->turn_tokens; i++)
                    hist[c][lens[c]++] = rand_token(be.vocab);
            double w = run_batch(&be, hist, lens, (int)o->reply, n, st, NULL);
            if (w < 0)
                return -1;
            wall += w;
            for (int c = 0; c < n; c++) {
                prompt_tokens += lens[c];
                cached += st[c].cached;
                ttft_sum += st[c].ttft;
                gen_tokens += st[c].n_out;
                memcpy(hist[c] + lens[c], st[c].out, sizeof(int32_t) * (size_t)st[c].n_out);
                lens[c] += st[c].n_out;
            }
        }
        printf("| %s | %.2f | %ld | %ld | %.1f | %.1f |\n", caching ? "on" : "off", wall, prompt_tokens, cached,
               (double)(prompt_tokens + gen_tokens) / wall, 1e3 * ttft_sum / (double)(n * o->turns));
        for (int c = 0; c < n; c++)
            free(hist[c]);
        free(hist);
        free(lens);
        free(st);
        qs_engine_free(be.e);
    }
    printf("\n");
    return 0;
}

int main(int argc, char **argv)
{
    options o = {.shared = 1000, .suffix = 24, .reps = 3, .turns = 6, .turn_tokens = 64, .reply = 32, .convs = 2};
    char **rest = calloc((size_t)argc + 1, sizeof *rest);
    if (!rest)
        return 1;
    int n_rest = 0;
    rest[n_rest++] = argv[0];
    for (int i = 1; i < argc; i++) {
        const char *v;
        int r;
        long *field = NULL;
        const char *names[] = {"--shared", "--suffix", "--reps", "--turns", "--turn-tokens", "--reply", "--convs"};
        long *fields[] = {&o.shared, &o.suffix, &o.reps, &o.turns, &o.turn_tokens, &o.reply, &o.convs};
        for (int k = 0; k < 7 && !field; k++)
            if ((r = qs_arg_value(argc, argv, &i, names[k], &v)) != 0) {
                if (r < 0 || qs_arg_int(names[k], v, fields[k]) || *fields[k] < 1) {
                    fprintf(stderr, "error: %s needs a positive integer\n", names[k]);
                    free(rest);
                    return 2;
                }
                field = fields[k];
            }
        if (!field)
            rest[n_rest++] = argv[i];
    }
    qs_config cfg;
    qs_err err;
    if (n_rest < 2 || qs_config_parse_args(n_rest, rest, &cfg, &err)) {
        fprintf(stderr, "%s\nusage: bench_prefix MODEL_DIR [--shared 1000] [--suffix 24] [--reps 3] [--turns 6] "
                        "[--turn-tokens 64] [--reply 32] [--convs 2] [qserve flags]\n",
                n_rest < 2 ? "error: give MODEL_DIR" : err.msg);
        free(rest);
        return 2;
    }
    int rc = bench_ttft(&cfg, &o) || bench_replay(&cfg, &o);
    free(rest);
    return rc ? 1 : 0;
}
