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

static void gauge(strbuf *b, const char *name, const char *help, const char *labels, double v)
{
    sb_printf(b, "# HELP qserve:%s %s\n# TYPE qserve:%s gauge\nqserve:%s{%s} %.17g\n", name, help, name, name, labels, v);
}

/* prefix: "qserve" for qserve's own metrics, "vllm" where qserve exports vLLM's metric under vLLM's
 * name so dashboards written for vLLM read it unchanged */
static void counter_named(strbuf *b, const char *prefix, const char *name, const char *help, const char *labels,
                          unsigned long long v)
{
    sb_printf(b, "# HELP %s:%s %s\n# TYPE %s:%s counter\n%s:%s{%s} %llu\n", prefix, name, help, prefix, name, prefix,
              name, labels, v);
}

static void counter(strbuf *b, const char *name, const char *help, const char *labels, unsigned long long v)
{
    counter_named(b, "qserve", name, help, labels, v);
}

static void histogram(strbuf *b, const char *name, const char *help, const char *labels, const qs_histogram *h)
{
    sb_printf(b, "# HELP qserve:%s %s\n# TYPE qserve:%s histogram\n", name, help, name);
    unsigned long long cum = 0;
    for (int i = 0; i < h->n_bounds; i++) {
        cum += h->counts[i];
        sb_printf(b, "qserve:%s_bucket{%s,le=\"%g\"} %llu\n", name, labels, h->bounds[i], cum);
    }
    cum += h->counts[h->n_bounds];
    sb_printf(b, "qserve:%s_bucket{%s,le=\"+Inf\"} %llu\n", name, labels, cum);
    sb_printf(b, "qserve:%s_sum{%s} %.17g\n", name, labels, h->sum);
    sb_printf(b, "qserve:%s_count{%s} %llu\n", name, labels, h->count);
}

char *qs_metrics_render(const char *model_name, qs_engine *engine, const qs_http_counters *http)
{
    char esc[600], labels[700];
    escape_label(model_name, esc, sizeof esc);
    snprintf(labels, sizeof labels, "model_name=\"%s\"", esc);
    strbuf b = {0};
    qs_engine_load load = {0};
    qs_engine_stats st;
    qs_engine_stats_init(&st);
    if (engine) {
        qs_engine_get_load(engine, &load);
        qs_engine_get_stats(engine, &st);
    }
    gauge(&b, "num_requests_running", "Number of sequences in the running batch.", labels, load.num_running);
    gauge(&b, "num_requests_waiting", "Number of sequences waiting to be scheduled.", labels, load.num_waiting);
    double usage = load.num_blocks ? 1.0 - (double)load.num_free_blocks / load.num_blocks : 0.0;
    gauge(&b, "kv_cache_usage_perc", "Fraction of KV-cache blocks in use (1 = full).", labels, usage);
    gauge(&b, "kv_cache_blocks_total", "KV-cache blocks of 16 positions.", labels, load.num_blocks);
    sb_printf(&b,
              "# HELP qserve:cache_config_info Information of the KV cache configuration.\n"
              "# TYPE qserve:cache_config_info gauge\n"
              "qserve:cache_config_info{%s,block_size=\"16\",cache_dtype=\"%s\",enable_prefix_caching=\"%s\","
              "num_gpu_blocks=\"%d\"} 1\n",
              labels, load.kv_cache_dtype ? load.kv_cache_dtype : "auto", load.prefix_caching ? "True" : "False",
              load.num_blocks);
    counter(&b, "num_preemptions_total", "Sequences preempted (recomputed) because the KV cache was full.", labels,
            st.preemptions_total);
    counter(&b, "prompt_tokens_total", "Prompt tokens processed.", labels, st.prompt_tokens_total);
    counter_named(&b, "vllm", "prefix_cache_queries_total", "Prompt tokens looked up in the prefix cache.", labels,
                  st.prefix_cache_queries_total);
    counter_named(&b, "vllm", "prefix_cache_hits_total", "Prompt tokens found in the prefix cache.", labels,
                  st.prefix_cache_hits_total);
    counter(&b, "generation_tokens_total", "Tokens generated.", labels, st.generation_tokens_total);
    sb_printf(&b, "# HELP qserve:request_success_total Finished sequences by finish reason.\n"
                  "# TYPE qserve:request_success_total counter\n");
    for (int r = QS_FINISH_STOP; r < QS_STATS_FINISH_KINDS; r++)
        sb_printf(&b, "qserve:request_success_total{%s,finished_reason=\"%s\"} %llu\n", labels,
                  qs_finish_reason_name((qs_finish_reason)r), st.finished[r]);
    histogram(&b, "time_to_first_token_seconds", "Time from arrival to the first generated token.", labels, &st.ttft);
    histogram(&b, "inter_token_latency_seconds", "Time between consecutive generated tokens.", labels, &st.itl);
    histogram(&b, "e2e_request_latency_seconds", "Time from arrival to the last token.", labels, &st.e2e);
    histogram(&b, "request_queue_time_seconds", "Time from arrival to the first scheduled step.", labels, &st.queue);
    if (http) {
        counter(&b, "http_requests_total", "HTTP requests answered.", labels, http->requests_total);
        counter(&b, "http_client_errors_total", "HTTP requests answered with a 4xx status.", labels, http->errors_4xx);
        counter(&b, "http_server_errors_total", "HTTP requests answered with a 5xx status.", labels, http->errors_5xx);
        counter(&b, "http_client_disconnects_total", "Requests aborted because the client went away.", labels,
                http->aborted_by_client);
    }
    if (b.oom) {
        free(b.buf);
        return NULL;
    }
    return b.buf;
}
