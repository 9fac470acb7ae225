/* metrics.h — GET /metrics: the engine's load and statistics in Prometheus text format, under
 * vLLM's metric names, types, buckets and labels (vllm:num_requests_running, ..., labelled
 * model_name and engine) so vLLM dashboards work unchanged; qserve's own figures (KV blocks, HTTP
 * request counters kept by the server) under qserve:. */
#ifndef QS_SERVER_METRICS_H
#define QS_SERVER_METRICS_H

#include "engine/engine.h"

typedef struct qs_http_counters {
    unsigned long long requests_total;     /* every HTTP request answered */
    unsigned long long errors_4xx, errors_5xx;
    unsigned long long aborted_by_client;  /* requests whose client went away */
} qs_http_counters;

/* Renders the exposition text (malloc'd). engine may be NULL while the model loads. */
char *qs_metrics_render(const char *model_name, qs_engine *engine, const qs_http_counters *http);

#endif
