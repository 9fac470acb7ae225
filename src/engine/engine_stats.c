/* engine_stats.c — histogram buckets and observation for the engine's /metrics figures. The
 * bounds are vLLM's, so a vLLM dashboard's histogram_quantile reads the same buckets. */
#include "engine/engine_stats.h"

#include <string.h>

static const double TTFT_BOUNDS[] = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,  0.25,  0.5,   0.75,
                                     1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
static const double ITL_BOUNDS[] = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75,
                                    1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0};
static const double REQUEST_LATENCY_BOUNDS[] = {0.3,  0.5,  0.8,  1.0,  1.5,   2.0,   2.5,   5.0,   10.0,   15.0,  20.0,
                                                30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};
static const double STEP_TOKEN_BOUNDS[] = {1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384};

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

void qs_histogram_init(qs_histogram *h, qs_histogram_kind kind)
{
    memset(h, 0, sizeof *h);
    const double *b = TTFT_BOUNDS;
    int n = COUNT(TTFT_BOUNDS);
    if (kind == QS_HIST_ITL) {
        b = ITL_BOUNDS;
        n = COUNT(ITL_BOUNDS);
    } else if (kind == QS_HIST_E2E || kind == QS_HIST_QUEUE) {
        b = REQUEST_LATENCY_BOUNDS;
        n = COUNT(REQUEST_LATENCY_BOUNDS);
    } else if (kind == QS_HIST_STEP_TOKENS) {
        b = STEP_TOKEN_BOUNDS;
        n = COUNT(STEP_TOKEN_BOUNDS);
    }
    h->n_bounds = n;
    memcpy(h->bounds, b, (size_t)n * sizeof *b);
}

void qs_histogram_init_1_2_5(qs_histogram *h, double max_value)
{
    memset(h, 0, sizeof *h);
    static const int mantissa[] = {1, 2, 5};
    for (double scale = 1; h->n_bounds < QS_HIST_MAX_BUCKETS; scale *= 10)
        for (int i = 0; i < 3 && h->n_bounds < QS_HIST_MAX_BUCKETS; i++) {
            double v = mantissa[i] * scale;
            if (v > max_value)
                return;
            h->bounds[h->n_bounds++] = v;
        }
}

void qs_histogram_observe(qs_histogram *h, double value)
{
    int i = 0;
    while (i < h->n_bounds && value > h->bounds[i])
        i++;
    h->counts[i]++;
    h->count++;
    h->sum += value;
}

void qs_engine_stats_init(qs_engine_stats *s, int max_model_len)
{
    memset(s, 0, sizeof *s);
    double max_tokens = max_model_len > 0 ? max_model_len : 2147483647.0;
    qs_histogram_init(&s->ttft, QS_HIST_TTFT);
    qs_histogram_init(&s->itl, QS_HIST_ITL);
    qs_histogram_init(&s->e2e, QS_HIST_E2E);
    qs_histogram_init(&s->queue, QS_HIST_QUEUE);
    qs_histogram_init(&s->request_tpot, QS_HIST_ITL);
    qs_histogram_init_1_2_5(&s->request_prompt_tokens, max_tokens);
    qs_histogram_init_1_2_5(&s->request_generation_tokens, max_tokens);
    qs_histogram_init(&s->step_tokens, QS_HIST_STEP_TOKENS);
    qs_histogram_init(&s->prefill_time, QS_HIST_E2E);
    qs_histogram_init(&s->decode_time, QS_HIST_E2E);
    qs_histogram_init(&s->inference_time, QS_HIST_E2E);
}
