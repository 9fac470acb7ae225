/* bench_decode.c — decode-step throughput of the model alone, without the server: for each batch
 * size, one prefill of that many random prompts, a few warm-up decode steps (which record the
 * step's CUDA graph), then --steps timed decode steps, each sampling on the device and bringing
 * the token ids back, as the engine does. Prints one line per batch: the mean step time and the
 * decode tokens per second it gives. What it leaves out of a served step (HTTP, scheduling,
 * detokenizing) is the same for every kernel, so an A/B of kernels or orders (e.g.
 * QSERVE_ACT_ORDER=0 in one run) shows their end-to-end difference without the server's spread.
 *
 *   build/bench_decode MODEL_DIR --linear-backend marlin [--batches 16,32,64] [--prompt 32]
 *       [--steps 64] [any qserve flag]                                        (docs/marlin.md) */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/args.h"
#include "config/config.h"
#include "core/sample.h"
#include "model/kv_cache.h"
#include "model/model.h"

#define WARMUP_STEPS 3

typedef struct {
    int *batches, n_batches;
    long prompt, steps;
} options;

static void usage(void)
{
    fprintf(stderr, "usage: bench_decode MODEL_DIR [--batches 16,32,64] [--prompt 32] [--steps 64] [qserve flags]\n");
}

/* Takes the tool's own flags out of argv; the rest (the model and qserve's flags) go to rest. */
static int parse_flags(int argc, char **argv, options *o, char **rest, int *n_rest)
{
    *n_rest = 0;
    rest[(*n_rest)++] = argv[0];
    for (int i = 1; i < argc; i++) {
        const char *v = NULL;
        int r;
        if ((r = qs_arg_value(argc, argv, &i, "--batches", &v)) != 0) {
            free(o->batches);
            o->batches = NULL;
            if (r < 0 || qs_arg_int_list("--batches", v, &o->batches, &o->n_batches))
                return -1;
        } else if ((r = qs_arg_value(argc, argv, &i, "--prompt", &v)) != 0) {
            if (r < 0 || qs_arg_int("--prompt", v, &o->prompt))
                return -1;
        } else if ((r = qs_arg_value(argc, argv, &i, "--steps", &v)) != 0) {
            if (r < 0 || qs_arg_int("--steps", v, &o->steps))
                return -1;
        } else {
            rest[(*n_rest)++] = argv[i];
        }
    }
    for (int b = 0; b < o->n_batches; b++)
        if (o->batches[b] < 1) {
            fprintf(stderr, "--batches: sizes must be positive, not %d\n", o->batches[b]);
            return -1;
        }
    if (o->prompt < 1 || o->steps < 1) {
        fprintf(stderr, "--prompt and --steps must be positive\n");
        return -1;
    }
    return 0;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Runs one batch: B sequences of o->prompt random tokens, then the decode steps. Prints its line. */
static int run_batch(qs_model *m, const options *o, int B, qs_err *err)
{
    const qs_model_config *mc = qs_model_get_config(m);
    const int len = (int)(o->prompt + WARMUP_STEPS + o->steps);
    const int per_seq = (len + QS_KV_BLOCK_SIZE - 1) / QS_KV_BLOCK_SIZE;
    qs_kv_cache *kv = NULL;
    int rc = -1;
    int32_t *tables = malloc(sizeof(int32_t) * (size_t)B * per_seq);
    int32_t *tokens = malloc(sizeof(int32_t) * (size_t)B * (size_t)(o->prompt + 1));
    int32_t *next = malloc(sizeof(int32_t) * (size_t)B);
    qs_seq_step *seqs = calloc((size_t)B, sizeof *seqs);
    qs_sample_row *rows = calloc((size_t)B, sizeof *rows);
    float *logits = malloc(sizeof(float) * (size_t)B * (size_t)mc->vocab_size);
    if (!tables || !tokens || !next || !seqs || !rows || !logits) {
        qs_errf(err, "out of memory for a batch of %d", B);
        goto done;
    }
    if (qs_kv_cache_create(mc, qs_model_device(m)->platform, B * per_seq, &kv, err))
        goto done;
    for (int i = 0; i < B * per_seq; i++)
        tables[i] = qs_kv_cache_alloc(kv);
    srand(1234u + (unsigned)B);
    for (int s = 0; s < B; s++) {
        int32_t *t = tokens + (int64_t)s * (o->prompt + 1);
        for (long j = 0; j < o->prompt; j++)
            t[j] = rand() % mc->vocab_size;
        seqs[s] = (qs_seq_step){.tokens = t, .n_tokens = (int)o->prompt, .block_table = tables + (int64_t)s * per_seq,
                                .n_blocks = per_seq, .want_logits = true};
        rows[s] = (qs_sample_row){.inv_temperature = 0, .log_min_p = -INFINITY};
    }
    if (qs_model_forward_sample(m, kv, seqs, B, rows, next, logits, err))
        goto done;
    double t0 = 0;
    for (long step = 0; step < WARMUP_STEPS + o->steps; step++) {
        if (step == WARMUP_STEPS)
            t0 = now_s();
        for (int s = 0; s < B; s++) {
            int32_t *t = tokens + (int64_t)s * (o->prompt + 1) + o->prompt; /* the decode token's slot */
            *t = next[s] >= 0 ? next[s] : 0; /* (a skipped row: host sampling, any token will do) */
            seqs[s].tokens = t;
            seqs[s].n_tokens = 1;
            seqs[s].start_pos = (int)(o->prompt + step);
        }
        if (qs_model_forward_sample(m, kv, seqs, B, rows, next, logits, err))
            goto done;
    }
    double ms = (now_s() - t0) * 1e3 / (double)o->steps;
    printf("batch %4d: %8.3f ms/step  %9.1f tok/s  (%ld steps at context %ld..%ld)\n", B, ms, B * 1e3 / ms, o->steps,
           o->prompt + WARMUP_STEPS, o->prompt + WARMUP_STEPS + o->steps);
    fflush(stdout);
    rc = 0;
done:
    if (kv)
        qs_kv_cache_free(kv);
    free(tables), free(tokens), free(next), free(seqs), free(rows), free(logits);
    return rc;
}

int main(int argc, char **argv)
{
    static const int default_batches[] = {1, 16, 32, 64};
    options o = {.prompt = 32, .steps = 64};
    char **rest = calloc((size_t)argc + 1, sizeof(char *));
    int n_rest = 0;
    if (!rest || parse_flags(argc, argv, &o, rest, &n_rest)) {
        usage();
        free(o.batches);
        free(rest);
        return 2;
    }
    if (!o.batches) {
        o.n_batches = (int)(sizeof default_batches / sizeof default_batches[0]);
        o.batches = malloc(sizeof default_batches);
        if (!o.batches)
            return 1;
        memcpy(o.batches, default_batches, sizeof default_batches);
    }
    qs_config cfg;
    qs_err err = {{0}};
    if (qs_config_parse_args(n_rest, rest, &cfg, &err)) {
        fprintf(stderr, "error: %s\n", err.msg);
        usage();
        free(o.batches);
        free(rest);
        return 2;
    }
    qs_model *m = NULL;
    int status = 0;
    if (qs_model_load(&cfg, &m, &err)) {
        fprintf(stderr, "error: %s\n", err.msg);
        status = 1;
    }
    for (int b = 0; !status && b < o.n_batches; b++)
        if (run_batch(m, &o, o.batches[b], &err)) {
            fprintf(stderr, "error: batch %d: %s\n", o.batches[b], err.msg);
            status = 1;
        }
    if (m)
        qs_model_free(m);
    free(o.batches);
    free(rest);
    return status;
}
