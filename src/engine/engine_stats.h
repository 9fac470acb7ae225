/* engine_stats.h — counters and latency histograms the engine keeps for /metrics: prompt and
 * generation token totals, requests finished per reason, time to first token, inter-token and
 * end-to-end latency. Bucket bounds follow vLLM's so dashboards built for it read ours. */
#ifndef QS_ENGINE_ENGINE_STATS_H
#define QS_ENGINE_ENGINE_STATS_H

#define QS_HIST_MAX_BUCKETS 24
#define QS_STATS_FINISH_KINDS 5 /* indexed by qs_finish_reason */

typedef struct qs_histogram {
    int n_bounds;
    double bounds[QS_HIST_MAX_BUCKETS];           /* upper bounds, ascending (the +Inf one implied) */
    unsigned long long counts[QS_HIST_MAX_BUCKETS + 1]; /* per bucket, not cumulative; last = +Inf */
    unsigned long long count;
    double sum;
} qs_histogram;

typedef enum { QS_HIST_TTFT, QS_HIST_ITL, QS_HIST_E2E, QS_HIST_QUEUE } qs_histogram_kind;

void qs_histogram_init(qs_histogram *h, qs_histogram_kind kind);
void qs_histogram_observe(qs_histogram *h, double value);

typedef struct qs_engine_stats {
    unsigned long long prompt_tokens_total;
    unsigned long long generation_tokens_total;
    unsigned long long finished[QS_STATS_FINISH_KINDS];
    unsigned long long preemptions_total;
    unsigned long long prefix_cache_queries_total; /* prompt tokens looked up in the prefix cache */
    unsigned long long prefix_cache_hits_total;    /* of those, tokens found cached */
    qs_histogram ttft, itl, e2e, queue;
} qs_engine_stats;

void qs_engine_stats_init(qs_engine_stats *s);

#endif
