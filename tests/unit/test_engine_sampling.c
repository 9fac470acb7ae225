/* test_engine_sampling.c — the engine's device-sampling path (engine.h: forward_sample, over
 * core/sample.h) on the CPU with stories260K: one batch of concurrent requests — greedy, greedy
 * with end tokens banned below min_tokens, seeded top-k/top-p sampling, sampling with logprobs,
 * greedy with a repetition penalty — runs once with the model's forward_sample and once without
 * (everything through qs_sample as before). Greedy and host-sampled requests must produce the
 * same tokens both ways, greedy ones llama2.c's golden tokens; the seeded device-sampled request
 * must repeat itself; and a shim around the backend checks which rows went to the device (those
 * without logprobs, penalties or logit_bias) and that greedy rows carry no temperature. Skips
 * when ../shared/data is absent. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/config.h"
#include "engine/engine.h"
#include "model/kv_cache.h"
#include "model/model.h"
#include "util/fileio.h"

#include "test_helpers.h"


#define N_REQ 5
#define EOS_ID 2

static char model_dir[256];
static int golden[200];
static bool have_data;

static int setup(void **state)
{
    int made = qs_test_stories_make("engine-sampling", model_dir, sizeof model_dir, golden);
    if (made <= 0)
        return made;
    have_data = true;
    return 0;
}

static int teardown(void **state)
{
    return qs_test_stories_remove(model_dir);
}

/* The shim: counts the rows each forward_sample call sends to the device, per choice. */
typedef struct shim {
    qs_engine_backend inner;
    int device_rows, host_rows;
    bool greedy_row_had_temperature;
} shim;

static shim g_shim;

static int shim_forward(void *ctx, const qs_seq_step *steps, int n, float *logits, qs_err *err)
{
    return g_shim.inner.forward(g_shim.inner.ctx, steps, n, logits, err);
}

static int shim_forward_sample(void *ctx, const qs_seq_step *steps, int n, const qs_sample_row *rows, int32_t *tokens,
                               float *logits, qs_err *err)
{
    int n_out = 0;
    for (int i = 0; i < n; i++)
        n_out += steps[i].want_logits;
    for (int r = 0; r < n_out; r++) {
        rows[r].skip ? g_shim.host_rows++ : g_shim.device_rows++;
        if (!rows[r].skip && rows[r].inv_temperature <= 0 && rows[r].u != 0)
            g_shim.greedy_row_had_temperature = true;
    }
    return g_shim.inner.forward_sample(g_shim.inner.ctx, steps, n, rows, tokens, logits, err);
}
static int32_t shim_alloc(void *ctx) { return g_shim.inner.alloc_block(g_shim.inner.ctx); }
static void shim_release(void *ctx, int32_t b) { g_shim.inner.release_block(g_shim.inner.ctx, b); }
static void shim_destroy(void *ctx) { g_shim.inner.destroy(g_shim.inner.ctx); }

typedef struct {
    int32_t tokens[256];
    int n;
    bool done;
} output;

/* Runs the batch of requests to the end; device: whether the backend keeps its forward_sample. */
static void run_batch(bool device, output out[N_REQ])
{
    qs_config cfg;
    qs_config_defaults(&cfg);
    snprintf(cfg.model_dir, sizeof cfg.model_dir, "%s", model_dir);
    cfg.device = QS_DEVICE_CPU;
    qs_err err;
    qs_model *model;
    if (qs_model_load(&cfg, &model, &err))
        fail_msg("load: %s", err.msg);
    assert_true(qs_model_samples_on_device(model));
    qs_kv_cache *kv;
    assert_int_equal(qs_kv_cache_create(qs_model_get_config(model), QS_PLATFORM_CPU, 128, &kv, &err), 0);
    memset(&g_shim, 0, sizeof g_shim);
    assert_int_equal(qs_engine_backend_model(model, kv, &g_shim.inner, &err), 0);
    assert_non_null(g_shim.inner.forward_sample);
    qs_engine_backend be = g_shim.inner;
    be.forward = shim_forward;
    be.forward_sample = device ? shim_forward_sample : NULL;
    be.alloc_block = shim_alloc;
    be.release_block = shim_release;
    be.destroy = shim_destroy;
    static const int32_t eos[] = {EOS_ID};
    qs_engine_options opt = {.max_num_seqs = 8, .max_num_batched_tokens = 256, .max_model_len = 256, .seed = 5,
                             .eos_ids = eos, .n_eos = 1, .start_thread = false};
    qs_engine *e;
    assert_int_equal(qs_engine_create(&opt, &be, &e, &err), 0);

    static const int32_t prompt[] = {1};
    qs_seq_request req[N_REQ];
    for (int i = 0; i < N_REQ; i++) {
        memset(&req[i], 0, sizeof req[i]);
        req[i].prompt = prompt;
        req[i].n_prompt = 1;
        qs_sampling_params_defaults(&req[i].sampling);
        req[i].sampling.temperature = 0;
        req[i].max_tokens = 40;
        req[i].choice = i;
    }
    req[0].max_tokens = 200; /* greedy, llama2.c's golden */
    req[0].ignore_eos = true;
    req[1].min_tokens = 30;  /* greedy, EOS banned for 30 tokens */
    req[1].max_tokens = 60;
    req[2].sampling.temperature = 0.8; /* seeded top-k / top-p on the device */
    req[2].sampling.top_k = 40;
    req[2].sampling.top_p = 0.9;
    req[2].sampling.has_seed = true;
    req[2].sampling.seed = 7;
    req[3].sampling.temperature = 1.0; /* logprobs: the host */
    req[3].sampling.has_seed = true;
    req[3].sampling.seed = 9;
    req[3].sampling.logprobs = 2;
    req[4].sampling.repetition_penalty = 1.3; /* a penalty: the host */
    qs_event_sink *sink = qs_event_sink_new();
    assert_int_equal(qs_engine_submit(e, req, N_REQ, sink, &err), QS_SUBMIT_OK);
    memset(out, 0, sizeof(output) * N_REQ);
    for (int guard = 0; guard < 2000; guard++) {
        int rc = qs_engine_step(e);
        assert_true(rc >= 0);
        for (qs_engine_event *ev = qs_event_sink_take(sink, 0), *next; ev; ev = next) {
            next = ev->next;
            output *o = &out[ev->choice];
            if (ev->token >= 0 && o->n < 256)
                o->tokens[o->n++] = ev->token;
            if (ev->finish != QS_FINISH_NONE)
                o->done = true;
            qs_engine_event_free(ev);
        }
        if (rc == 0)
            break;
    }
    for (int i = 0; i < N_REQ; i++)
        assert_true(out[i].done);
    qs_event_sink_release(sink);
    qs_engine_free(e);
}

static void device_and_host_paths_agree(void **state)
{
    if (!have_data)
        skip();
    output dev[N_REQ], host[N_REQ], again[N_REQ];
    run_batch(false, host);
    assert_int_equal(g_shim.device_rows, 0);
    run_batch(true, dev);
    /* greedy (two) and seeded top-k/top-p went to the device, logprobs and the penalty stayed */
    int want_device = dev[0].n + dev[1].n + dev[2].n, want_host = dev[3].n + dev[4].n;
    assert_int_equal(g_shim.device_rows, want_device);
    assert_int_equal(g_shim.host_rows, want_host);
    assert_false(g_shim.greedy_row_had_temperature);
    run_batch(true, again);

    assert_int_equal(dev[0].n, 200);
    for (int i = 0; i < 200; i++)
        if (dev[0].tokens[i] != golden[i])
            fail_msg("greedy on the device path, token %d: %d, golden %d", i, dev[0].tokens[i], golden[i]);
    for (int r = 0; r < N_REQ; r++) {
        if (r == 2)
            continue;
        if (dev[r].n != host[r].n || memcmp(dev[r].tokens, host[r].tokens, sizeof(int32_t) * dev[r].n))
            fail_msg("request %d: %d tokens with device sampling, %d without, or different ones", r, dev[r].n,
                     host[r].n);
    }
    assert_true(dev[1].n >= 30);
    for (int i = 0; i < 29; i++)
        assert_int_not_equal(dev[1].tokens[i], EOS_ID);
    assert_true(dev[2].n > 0);
    if (dev[2].n != again[2].n || memcmp(dev[2].tokens, again[2].tokens, sizeof(int32_t) * dev[2].n))
        fail_msg("the seeded request sampled on the device did not repeat itself");
    for (int i = 0; i < dev[2].n; i++)
        assert_true(dev[2].tokens[i] >= 0 && dev[2].tokens[i] < 512);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(device_and_host_paths_agree),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
