/* metrics.c — Prometheus text exposition for /metrics (see metrics.h). */
#include "server/metrics.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char *buf;
    size_t len, cap;
    bool oom;
} strbuf;

__attribute__((format(printf, 2, 3))) static void sb_printf(strbuf *b, const char *fmt, ...)
{
    if (b->oom)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->buf ? b->buf + b->len : NULL, b->buf ? b->cap - b->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->oom = true;
            return;
        }
        if (b->buf && b->len + (size_t)n < b->cap) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = b->cap ? b->cap * 2 : 8192;
        while (cap < b->len + (size_t)n + 1)
            cap *= 2;
        char *p = realloc(b->buf, cap);
        if (!p) {
            b->oom = true;
            return;
        }
        b->buf = p;
        b->cap = cap;
    }
}

/* Label values must escape backslash, quote and newline. */
static void escape_label(const char *in, char *out, size_t cap)
{
    size_t o = 0;
    for (; *in && o + 3 < cap; in++) {
        if (*in == '\\' || *in == '"') {
            out[o++] = '\\';
            out[o++] = *in;
        } else if (*in == '\n') {
            out[o++] = '\\';
            out[o++] = 'n';
        } else {
            out[o++] = *in;
        }
    }
    out[o] = '\0';
}

/* prefix: "vllm" for the metrics vLLM exports, under vLLM's names, types, buckets and labels so
 * dashboards and alerts written for vLLM read them unchanged; "qserve" for qserve's own. */
static void gauge(strbuf *b, const char *prefix, const char *name, const char *help, const char *labels, double v)
{
    sb_printf(b, "# HELP %s:%s %s\n# TYPE %s:%s gauge\n%s:%s{%s} %.17g\n", prefix, name, help, prefix, name, prefix, name,
              labels, v);
}

static void counter(strbuf *b, const char *prefix, const char *name, const char *help, const char *labels,
                    unsigned long long v)
{
    sb_printf(b, "# HELP %s:%s %s\n# TYPE %s:%s counter\n%s:%s{%s} %llu\n", prefix, name, help, prefix, name, prefix,
              name, labels, v);
}

static void histogram(strbuf *b, const char *name, const char *help, const char *labels, const qs_histogram *h)
{
    sb_printf(b, "# HELP vllm:%s %s\n# TYPE vllm:%s histogram\n", name, help, name);
    unsigned long long cum = 0;
    for (int i = 0; i < h->n_bounds; i++) {
        cum += h->counts[i];
        /* as prometheus_client writes a bound (Python's float repr): "0.005", "1.0", "2560.0" */
        double v = h->bounds[i];
        char le[32];
        snprintf(le, sizeof le, v == (double)(long long)v ? "%.1f" : "%g", v);
        sb_printf(b, "vllm:%s_bucket{%s,le=\"%s\"} %llu\n", name, labels, le, cum);
    }
    cum += h->counts[h->n_bounds];
    sb_printf(b, "vllm:%s_bucket{%s,le=\"+Inf\"} %llu\n", name, labels, cum);
    sb_printf(b, "vllm:%s_sum{%s} %.17g\n", name, labels, h->sum);
    sb_printf(b, "vllm:%s_count{%s} %llu\n", name, labels, h->count);
}

char *qs_metrics_render(const char *model_name, qs_engine *engine, const qs_http_counters *http)
{
    char esc[600], labels[700], vllm_labels[720];
    escape_label(model_name, esc, sizeof esc);
    snprintf(labels, sizeof labels, "model_name=\"%s\"", esc);
    /* vLLM labels every engine metric with the engine index too; qserve runs one engine */
    snprintf(vllm_labels, sizeof vllm_labels, "%s,engine=\"0\"", labels);
    const char *vl = vllm_labels;
    strbuf b = {0};
    qs_engine_load load = {0};
    qs_engine_stats st;
    qs_engine_stats_init(&st, 0);
    if (engine) {
        qs_engine_get_load(engine, &load);
        qs_engine_get_stats(engine, &st);
    }
    gauge(&b, "vllm", "num_requests_running", "Number of requests (sequences) in model execution batches.", vl,
          load.num_running);
    gauge(&b, "vllm", "num_requests_waiting", "Number of requests (sequences) waiting to be processed.", vl,
          load.num_waiting);
    double usage = load.num_blocks ? 1.0 - (double)load.num_free_blocks / load.num_blocks : 0.0;
    gauge(&b, "vllm", "kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", vl, usage);
    sb_printf(&b,
              "# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig\n"
              "# TYPE vllm:cache_config_info gauge\n"
              "vllm:cache_config_info{%s,block_size=\"16\",cache_dtype=\"%s\",enable_prefix_caching=\"%s\","
              "num_gpu_blocks=\"%d\"} 1\n",
              vl, load.kv_cache_dtype ? load.kv_cache_dtype : "auto", load.prefix_caching ? "True" : "False",
              load.num_blocks);
    counter(&b, "vllm", "num_preemptions_total", "Cumulative number of preemption from the engine.", vl,
            st.preemptions_total);
    counter(&b, "vllm", "prompt_tokens_total", "Number of prefill tokens processed.", vl, st.prompt_tokens_total);
    counter(&b, "vllm", "generation_tokens_total", "Number of generation tokens processed.", vl,
            st.generation_tokens_total);
    counter(&b, "vllm", "prefix_cache_queries_total", "Prefix cache queries, in terms of number of queried tokens.", vl,
            st.prefix_cache_queries_total);
    counter(&b, "vllm", "prefix_cache_hits_total", "Prefix cache hits, in terms of number of cached tokens.", vl,
            st.prefix_cache_hits_total);
    sb_printf(&b, "# HELP vllm:request_success_total Count of successfully processed requests.\n"
                  "# TYPE vllm:request_success_total counter\n");
    for (int r = QS_FINISH_STOP; r < QS_STATS_FINISH_KINDS; r++)
        sb_printf(&b, "vllm:request_success_total{%s,finished_reason=\"%s\"} %llu\n", vl,
                  qs_finish_reason_name((qs_finish_reason)r), st.finished[r]);
    histogram(&b, "request_prompt_tokens", "Number of prefill tokens processed.", vl, &st.request_prompt_tokens);
    histogram(&b, "request_generation_tokens", "Number of generation tokens processed.", vl,
              &st.request_generation_tokens);
    histogram(&b, "iteration_tokens_total", "Histogram of number of tokens per engine_step.", vl, &st.step_tokens);
    histogram(&b, "time_to_first_token_seconds", "Histogram of time to first token in seconds.", vl, &st.ttft);
    histogram(&b, "inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", vl, &st.itl);
    /* vLLM keeps this older name as an alias of the inter-token latency, observed per token */
    histogram(&b, "time_per_output_token_seconds",
              "Histogram of time per output token in seconds (the inter-token latency, under its older name).", vl,
              &st.itl);
    histogram(&b, "request_time_per_output_token_seconds",
              "Histogram of time_per_output_token_seconds per request.", vl, &st.request_tpot);
    histogram(&b, "e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", vl, &st.e2e);
    histogram(&b, "request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", vl,
              &st.queue);
    histogram(&b, "request_inference_time_seconds", "Histogram of time spent in RUNNING phase for request.", vl,
              &st.inference_time);
    histogram(&b, "request_prefill_time_seconds", "Histogram of time spent in PREFILL phase for request.", vl,
              &st.prefill_time);
    histogram(&b, "request_decode_time_seconds", "Histogram of time spent in DECODE phase for request.", vl,
              &st.decode_time);
    gauge(&b, "qserve", "kv_cache_blocks", "KV-cache blocks of 16 positions the cache holds.", labels,
          load.num_blocks);
    if (http) {
        counter(&b, "qserve", "http_requests_total", "HTTP requests answered.", labels, http->requests_total);
        counter(&b, "qserve", "http_client_errors_total", "HTTP requests answered with a 4xx status.", labels,
                http->errors_4xx);
        counter(&b, "qserve", "http_server_errors_total", "HTTP requests answered with a 5xx status.", labels,
                http->errors_5xx);
        counter(&b, "qserve", "http_client_disconnects_total", "Requests aborted because the client went away.",
                labels, http->aborted_by_client);
    }
    if (b.oom) {
        free(b.buf);
        return NULL;
    }
    return b.buf;
}
