/* test_server_metrics.c — the Prometheus text of /metrics: vLLM's names (vllm:) and labels, the
 * model_name label (escaped), gauges from the engine's load, counters and cumulative histogram
 * buckets from its statistics, driven by an engine over a one-token fake model. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "constant_model.h"
#include "engine/engine.h"
#include "server/metrics.h"

static unsigned long long value_of(const char *text, const char *series)
{
    const char *p = strstr(text, series);
    assert_non_null(p);
    return strtoull(p + strlen(series), NULL, 10);
}

static void test_metrics_text(void **state)
{
    (void)state;
    qs_engine_backend be = constant_backend();
    static const int32_t eos[] = {0};
    qs_engine_options opt = {.max_num_seqs = 4, .max_num_batched_tokens = 64, .max_num_queued_reqs = 16,
                             .max_model_len = 128, .eos_ids = eos, .n_eos = 1};
    qs_engine *e;
    qs_err err;
    assert_int_equal(qs_engine_create(&opt, &be, &e, &err), 0);
    int32_t prompt[5] = {1, 2, 3, 4, 5};
    qs_seq_request r[2];
    for (int i = 0; i < 2; i++) {
        memset(&r[i], 0, sizeof r[i]);
        r[i].prompt = prompt;
        r[i].n_prompt = 5;
        qs_sampling_params_defaults(&r[i].sampling);
        r[i].sampling.temperature = 0;
        r[i].max_tokens = 6;
        r[i].choice = i;
    }
    qs_event_sink *sink = qs_event_sink_new();
    assert_int_equal(qs_engine_submit(e, r, 2, sink, &err), QS_SUBMIT_OK);
    qs_engine_step(e); /* prefill both: one running step */
    char *mid = qs_metrics_render("m\"x", e, NULL);
    assert_non_null(strstr(mid, "vllm:num_requests_running{model_name=\"m\\\"x\",engine=\"0\"} 2\n"));
    assert_non_null(strstr(mid, "# TYPE vllm:kv_cache_usage_perc gauge"));
    free(mid);
    while (qs_engine_step(e) > 0)
        ;
    qs_http_counters http = {.requests_total = 7, .errors_4xx = 2, .errors_5xx = 1, .aborted_by_client = 1};
    char *text = qs_metrics_render("stories", e, &http);
    assert_int_equal(value_of(text, "vllm:num_requests_running{model_name=\"stories\",engine=\"0\"} "), 0);
    assert_int_equal(value_of(text, "vllm:prompt_tokens_total{model_name=\"stories\",engine=\"0\"} "), 10);
    assert_int_equal(value_of(text, "vllm:generation_tokens_total{model_name=\"stories\",engine=\"0\"} "), 12);
    assert_int_equal(
        value_of(text, "vllm:request_success_total{model_name=\"stories\",engine=\"0\",finished_reason=\"length\"} "), 2);
    assert_int_equal(value_of(text, "vllm:time_to_first_token_seconds_count{model_name=\"stories\",engine=\"0\"} "), 2);
    assert_int_equal(value_of(text, "vllm:inter_token_latency_seconds_count{model_name=\"stories\",engine=\"0\"} "), 10);
    assert_int_equal(
        value_of(text, "vllm:time_to_first_token_seconds_bucket{model_name=\"stories\",engine=\"0\",le=\"+Inf\"} "), 2);
    assert_int_equal(value_of(text, "qserve:http_requests_total{model_name=\"stories\"} "), 7);
    assert_int_equal(value_of(text, "qserve:http_client_disconnects_total{model_name=\"stories\"} "), 1);
    assert_non_null(strstr(text, "# TYPE vllm:e2e_request_latency_seconds histogram"));
    /* per-request token histograms use vLLM's 1-2-5 buckets up to max_model_len (128) */
    assert_int_equal(value_of(text, "vllm:request_prompt_tokens_count{model_name=\"stories\",engine=\"0\"} "), 2);
    assert_int_equal(value_of(text, "vllm:request_prompt_tokens_sum{model_name=\"stories\",engine=\"0\"} "), 10);
    assert_int_equal(
        value_of(text, "vllm:request_generation_tokens_bucket{model_name=\"stories\",engine=\"0\",le=\"5.0\"} "), 0);
    assert_int_equal(
        value_of(text, "vllm:request_generation_tokens_bucket{model_name=\"stories\",engine=\"0\",le=\"10.0\"} "), 2);
    assert_int_equal(
        value_of(text, "vllm:request_generation_tokens_bucket{model_name=\"stories\",engine=\"0\",le=\"100.0\"} "), 2);
    assert_null(strstr(text, "le=\"200.0\""));
    /* the prefill step computed 10 tokens, then 5 steps decoded 2 each */
    assert_int_equal(value_of(text, "vllm:iteration_tokens_total_count{model_name=\"stories\",engine=\"0\"} "), 6);
    assert_int_equal(value_of(text, "vllm:iteration_tokens_total_sum{model_name=\"stories\",engine=\"0\"} "), 20);
    assert_int_equal(value_of(text, "vllm:time_per_output_token_seconds_count{model_name=\"stories\",engine=\"0\"} "), 10);
    assert_int_equal(
        value_of(text, "vllm:request_time_per_output_token_seconds_count{model_name=\"stories\",engine=\"0\"} "), 2);
    assert_non_null(strstr(text, "vllm:time_to_first_token_seconds_bucket{model_name=\"stories\",engine=\"0\",le=\"0.001\"} "));
    assert_int_equal(value_of(text, "vllm:request_prefill_time_seconds_count{model_name=\"stories\",engine=\"0\"} "), 2);
    assert_int_equal(value_of(text, "vllm:request_decode_time_seconds_count{model_name=\"stories\",engine=\"0\"} "), 2);
    assert_int_equal(
        value_of(text, "vllm:request_inference_time_seconds_bucket{model_name=\"stories\",engine=\"0\",le=\"7680.0\"} "), 2);
    assert_non_null(strstr(text, "# TYPE qserve:kv_cache_blocks gauge"));
    assert_null(strstr(text, "kv_cache_blocks_total"));
    /* buckets are cumulative: never decreasing up to +Inf */
    unsigned long long prev = 0;
    const char *p = text;
    int buckets = 0;
    while ((p = strstr(p, "vllm:inter_token_latency_seconds_bucket{"))) {
        const char *sp = strchr(p, '}');
        unsigned long long v = strtoull(sp + 2, NULL, 10);
        assert_true(v >= prev);
        prev = v;
        buckets++;
        p = sp;
    }
    assert_true(buckets > 5);
    assert_int_equal(prev, 10);
    free(text);
    /* while loading there is no engine: zeros, same names */
    char *empty = qs_metrics_render("stories", NULL, NULL);
    assert_int_equal(value_of(empty, "vllm:generation_tokens_total{model_name=\"stories\",engine=\"0\"} "), 0);
    free(empty);
    qs_engine_event_free_list(qs_event_sink_take(sink, 0));
    qs_event_sink_release(sink);
    qs_engine_free(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_metrics_text)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
