/* report.h — scoring and reporting one eval: accuracy and invalid rate as vLLM's _score_gsm8k
 * computes them, plus per-request latency (mean/p50/p99), questions/s and output tokens/s from
 * usage.completion_tokens; printed for people, and saved as JSON (--save-results) together with
 * the request parameters and the config. */
#ifndef QS_EVAL_REPORT_H
#define QS_EVAL_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "eval/eval_config.h"
#include "eval/gsm8k.h"
#include "eval/runner.h"
#include "util/error.h"

typedef struct qs_eval_result {
    size_t num_questions;
    int num_shots;
    int max_tokens;
    double accuracy;
    double invalid_rate;
    size_t correct, invalid, failed_requests;
    double latency_s;            /* the whole run's wall time (vLLM's "latency") */
    double questions_per_second;
    long total_output_tokens;
    double tokens_per_second;
    double latency_mean_s, latency_p50_s, latency_p99_s; /* per request */
    double timestamp;            /* seconds since the epoch */
} qs_eval_result;

/* Scores responses[i] against labels[i]. */
void qs_eval_score(const qs_eval_response *responses, const qs_gsm8k_answer *labels, size_t n, double wall_s,
                   int num_shots, int max_tokens, qs_eval_result *out);
/* The q-th percentile (0..100) of v[0..n) with linear interpolation (numpy's default); sorts v. */
double qs_eval_percentile(double *v, size_t n, double q);
/* The human-readable report (vLLM's "Results:" block plus latency percentiles). */
void qs_eval_print_result(FILE *out, const qs_eval_result *r);
/* Writes {results..., "passed", "threshold", "request_params": {...}, "config": {...}} to path.
 * cfg may be NULL (standalone --host/--port run without a config). */
int qs_eval_save_results(const char *path, const qs_eval_result *r, const qs_eval_request_params *params,
                         const qs_eval_config *cfg, bool passed, double needed, qs_err *err);

#endif
