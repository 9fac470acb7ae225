/* engine_stats.c — histogram buckets and observation for the engine's /metrics figures. */
#include "engine/engine_stats.h"

#include <string.h>

static const double TTFT_BOUNDS[] = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5,
                                     0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0};
static const double ITL_BOUNDS[] = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75,
                                    1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0};
static const double E2E_BOUNDS[] = {0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0,
                                    40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0};

void qs_histogram_init(qs_histogram *h, qs_histogram_kind kind)
{
    memset(h, 0, sizeof *h);
    const double *b = TTFT_BOUNDS;
    int n = (int)(sizeof TTFT_BOUNDS / sizeof TTFT_BOUNDS[0]);
    if (kind == QS_HIST_ITL) {
        b = ITL_BOUNDS;
        n = (int)(sizeof ITL_BOUNDS / sizeof ITL_BOUNDS[0]);
    } else if (kind == QS_HIST_E2E || kind == QS_HIST_QUEUE) {
        b = E2E_BOUNDS;
        n = (int)(sizeof E2E_BOUNDS / sizeof E2E_BOUNDS[0]);
    }
    h->n_bounds = n;
    memcpy(h->bounds, b, (size_t)n * sizeof *b);
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

void qs_engine_stats_init(qs_engine_stats *s)
{
    memset(s, 0, sizeof *s);
    qs_histogram_init(&s->ttft, QS_HIST_TTFT);
    qs_histogram_init(&s->itl, QS_HIST_ITL);
    qs_histogram_init(&s->e2e, QS_HIST_E2E);
    qs_histogram_init(&s->queue, QS_HIST_QUEUE);
}
