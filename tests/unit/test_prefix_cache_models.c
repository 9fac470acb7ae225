/* test_prefix_cache_models.c — prefix caching on real models on the CPU: a randomized trace of
 * greedy requests with logprobs whose prompts share prefixes of many lengths (some salted, some
 * with n = 2 choices) runs once without the cache over a roomy KV pool and once with it over a
 * pool so small that cached blocks are evicted and running sequences preempted. Every request
 * must produce the same tokens and the same logprobs (to float rounding) both ways, and the
 * cached run must have hit. Models: stories260K (when ../shared/data has it) and the tiny
 * transformers-golden checkpoints of tests/data/hf-goldens, among them mistral_sw, whose
 * sliding window (12) is shorter than the cached prefixes. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config/config.h"
#include "engine/engine.h"
#include "model/kv_cache.h"
#include "model/model.h"
#include "model/model_config_load.h"
#include "util/fileio.h"

#include "test_helpers.h"

enum { N_REQ = 20, MAX_OUT = 24, PREFIX_LEN = 90, N_PREFIX = 3, MAX_CHOICES = 2 };

typedef struct {
    int32_t prompt[PREFIX_LEN + 40];
    int n_prompt, max_tokens, n;
    const char *salt;
} trace_req;

typedef struct {
    int32_t tokens[MAX_OUT];
    float logprobs[MAX_OUT];
    int n, cached;
    bool done;
} trace_out;

static void make_trace(trace_req *t, int vocab, uint32_t seed)
{
    uint32_t rng = seed;
#define RAND() (rng = rng * 1664525u + 1013904223u, (int)(rng >> 8))
    int32_t prefix[N_PREFIX][PREFIX_LEN];
    for (int p = 0; p < N_PREFIX; p++)
        for (int i = 0; i < PREFIX_LEN; i++)
            prefix[p][i] = 3 + RAND() % (vocab - 3);
    for (int r = 0; r < N_REQ; r++) {
        int p = RAND() % N_PREFIX, shared = RAND() % (PREFIX_LEN + 1), tail = 1 + RAND() % 30;
        memcpy(t[r].prompt, prefix[p], (size_t)shared * sizeof(int32_t));
        for (int i = 0; i < tail; i++)
            t[r].prompt[shared + i] = 3 + RAND() % (vocab - 3);
        t[r].n_prompt = shared + tail;
        t[r].max_tokens = 1 + RAND() % MAX_OUT;
        t[r].n = RAND() % 4 == 0 ? 2 : 1;
        t[r].salt = RAND() % 5 == 0 ? "tenant" : NULL;
    }
#undef RAND
}

/* Runs the trace on a fresh engine; returns the number of preemptions. */
static long long run_trace(const char *dir, const trace_req *t, bool caching, int num_blocks, int budget,
                           trace_out out[N_REQ][MAX_CHOICES])
{
    qs_config cfg;
    qs_config_defaults(&cfg);
    snprintf(cfg.model_dir, sizeof cfg.model_dir, "%s", dir);
    cfg.device = QS_DEVICE_CPU;
    qs_err err;
    qs_model *model;
    if (qs_model_load(&cfg, &model, &err))
        fail_msg("%s: load: %s", dir, err.msg);
    const qs_model_config *mc = qs_model_get_config(model);
    qs_kv_cache *kv;
    assert_int_equal(qs_kv_cache_create(mc, QS_PLATFORM_CPU, num_blocks, &kv, &err), 0);
    qs_engine_backend be;
    assert_int_equal(qs_engine_backend_model(model, kv, &be, &err), 0);
    qs_engine_options opt = {.max_num_seqs = 4, .max_num_batched_tokens = budget, .max_model_len = 256,
                             .seed = 1, .start_thread = false, .enable_prefix_caching = caching};
    qs_engine *e;
    if (qs_engine_create(&opt, &be, &e, &err))
        fail_msg("%s: engine: %s", dir, err.msg);
    qs_event_sink *sinks[N_REQ];
    for (int r = 0; r < N_REQ; r++) {
        qs_seq_request q[MAX_CHOICES];
        for (int c = 0; c < t[r].n; c++) {
            memset(&q[c], 0, sizeof q[c]);
            q[c].prompt = t[r].prompt;
            q[c].n_prompt = t[r].n_prompt;
            qs_sampling_params_defaults(&q[c].sampling);
            q[c].sampling.temperature = 0.0;
            q[c].sampling.logprobs = 0;
            q[c].max_tokens = t[r].max_tokens;
            q[c].ignore_eos = true;
            q[c].choice = c;
            q[c].cache_salt = t[r].salt;
        }
        sinks[r] = qs_event_sink_new();
        assert_int_equal(qs_engine_submit(e, q, t[r].n, sinks[r], &err), QS_SUBMIT_OK);
        if (r % 3 == 2) /* later requests arrive while earlier ones run */
            for (int k = 0; k < 4; k++)
                qs_engine_step(e);
    }
    for (int i = 0; i < 100000 && qs_engine_step(e) != 0; i++)
        ;
    memset(out, 0, sizeof(trace_out) * N_REQ * MAX_CHOICES);
    for (int r = 0; r < N_REQ; r++) {
        qs_engine_event *list = qs_event_sink_take(sinks[r], 0);
        for (qs_engine_event *ev = list; ev; ev = ev->next) {
            trace_out *o = &out[r][ev->choice];
            if (ev->token >= 0 && o->n < MAX_OUT) {
                o->tokens[o->n] = ev->token;
                assert_true(ev->has_logprobs);
                o->logprobs[o->n++] = ev->lp.logprob;
            }
            if (ev->finish != QS_FINISH_NONE) {
                assert_int_equal(ev->finish, QS_FINISH_LENGTH);
                o->done = true;
                o->cached = ev->cached_tokens;
            }
        }
        qs_engine_event_free_list(list);
        qs_event_sink_release(sinks[r]);
    }
    qs_engine_load load;
    qs_engine_get_load(e, &load);
    assert_int_equal(load.num_running, 0);
    assert_int_equal(load.num_free_blocks, num_blocks);
    qs_engine_free(e);
    return load.num_preemptions;
}

static void check_model(const char *name, const char *dir)
{
    qs_config cfg;
    qs_config_defaults(&cfg);
    snprintf(cfg.model_dir, sizeof cfg.model_dir, "%s", dir);
    qs_model_config mc;
    qs_err err;
    if (qs_model_config_load(dir, &mc, &err))
        fail_msg("%s: %s", name, err.msg);
    static trace_req t[N_REQ];
    make_trace(t, mc.vocab_size, 777);
    qs_model_config_free(&mc);
    static trace_out cold[N_REQ][MAX_CHOICES], warm[N_REQ][MAX_CHOICES];
    run_trace(dir, t, false, 256, 64, cold);
    long long preempted = run_trace(dir, t, true, 16, 48, warm);
    double max_diff = 0;
    int cached = 0, tokens = 0;
    for (int r = 0; r < N_REQ; r++)
        for (int c = 0; c < t[r].n; c++) {
            assert_true(cold[r][c].done && warm[r][c].done);
            assert_int_equal(cold[r][c].cached, 0);
            assert_int_equal(warm[r][c].n, t[r].max_tokens);
            assert_int_equal(cold[r][c].n, warm[r][c].n);
            for (int i = 0; i < cold[r][c].n; i++) {
                if (cold[r][c].tokens[i] != warm[r][c].tokens[i])
                    fail_msg("%s: request %d choice %d token %d: %d without the cache, %d with it", name, r, c, i,
                             cold[r][c].tokens[i], warm[r][c].tokens[i]);
                double d = fabs((double)cold[r][c].logprobs[i] - (double)warm[r][c].logprobs[i]);
                max_diff = d > max_diff ? d : max_diff;
            }
            tokens += cold[r][c].n;
            cached += warm[r][c].cached;
        }
    printf("%s: %d tokens equal with and without the prefix cache, max logprob difference %.3g, %d prompt tokens "
           "cached, %lld preemptions\n",
           name, tokens, max_diff, cached, preempted);
    assert_true(max_diff <= 1e-4);
    assert_true(cached > 0);
    assert_true(preempted > 0);
}

static void golden_model(void **state)
{
    const char *name = *state;
    char dir[512], cfg_path[600];
    snprintf(dir, sizeof dir, "tests/data/hf-goldens/%s", name);
    snprintf(cfg_path, sizeof cfg_path, "%s/config.json", dir);
    if (!qs_file_exists(cfg_path)) {
        printf("skip %s: %s not found (run from the repository root)\n", name, cfg_path);
        skip();
    }
    check_model(name, dir);
}

static void stories260k(void **state)
{
    (void)state;
    char dir[256];
    int made = qs_test_stories_make("prefix-cache", dir, sizeof dir, NULL);
    if (made == 0)
        skip();
    assert_int_equal(made, 1);
    check_model("stories260K", dir);
    qs_test_stories_remove(dir);
}

#define GOLDEN(n) cmocka_unit_test_prestate(golden_model, (void *)n)

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(stories260k), GOLDEN("llama"), GOLDEN("mistral_sw"), GOLDEN("qwen3"), GOLDEN("mixtral"),
        GOLDEN("llama-fp8"),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
