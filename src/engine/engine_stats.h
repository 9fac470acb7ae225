/* engine_stats.h — counters and histograms the engine keeps for /metrics: prompt and generation
 * token totals, requests finished per reason, time to first token, inter-token, end-to-end and
 * queue latency, tokens per request and per step. Bucket bounds are vLLM's (v1/metrics/loggers.py)
 * so dashboards and alerts built for vLLM read ours unchanged. */
#ifndef QS_ENGINE_ENGINE_STATS_H
#define QS_ENGINE_ENGINE_STATS_H

#define QS_HIST_MAX_BUCKETS 32
#define QS_STATS_FINISH_KINDS 5 /* indexed by qs_finish_reason */

typedef struct qs_histogram {
    int n_bounds;
    double bounds[QS_HIST_MAX_BUCKETS];           /* upper bounds, ascending (the +Inf one implied) */
    unsigned long long counts[QS_HIST_MAX_BUCKETS + 1]; /* per bucket, not cumulative; last = +Inf */
    unsigned long long count;
    double sum;
} qs_histogram;

typedef enum {
    QS_HIST_TTFT,       /* seconds, vllm:time_to_first_token_seconds */
    QS_HIST_ITL,        /* seconds, vllm:inter_token_latency_seconds */
    QS_HIST_E2E,        /* seconds, vllm:e2e_request_latency_seconds */
    QS_HIST_QUEUE,      /* seconds, vllm:request_queue_time_seconds */
    QS_HIST_STEP_TOKENS /* tokens a step, vllm:iteration_tokens_total */
} qs_histogram_kind;

void qs_histogram_init(qs_histogram *h, qs_histogram_kind kind);
/* vLLM's 1-2-5 buckets (1, 2, 5, 10, 20, 50, ...) up to max_value, for token counts per request. */
void qs_histogram_init_1_2_5(qs_histogram *h, double max_value);
void qs_histogram_observe(qs_histogram *h, double value);

typedef struct qs_engine_stats {
    unsigned long long prompt_tokens_total;
    unsigned long long generation_tokens_total;
    unsigned long long finished[QS_STATS_FINISH_KINDS];
    unsigned long long preemptions_total;
    unsigned long long prefix_cache_queries_total; /* prompt tokens looked up in the prefix cache */
    unsigned long long prefix_cache_hits_total;    /* of those, tokens found cached */
    qs_histogram ttft, itl, e2e, queue;
    qs_histogram request_tpot;                     /* per finished request: mean time per output token */
    qs_histogram request_prompt_tokens, request_generation_tokens; /* per finished request */
    qs_histogram step_tokens;                      /* tokens computed in one engine step */
    /* per finished sequence, as vLLM splits a request's time: first step -> first token (prefill),
     * first -> last token (decode), first step -> last token (inference) */
    qs_histogram prefill_time, decode_time, inference_time;
} qs_engine_stats;

/* max_model_len bounds the per-request token histograms (0: 1-2-5 buckets up to 2^31). */
void qs_engine_stats_init(qs_engine_stats *s, int max_model_len);

#endif
