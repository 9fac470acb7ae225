/* report.c — scoring, the printed report and the results JSON of report.h (cJSON). */
#include "eval/report.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/fileio.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double qs_eval_percentile(double *v, size_t n, double q)
{
    if (n == 0)
        return 0;
    qsort(v, n, sizeof *v, cmp_double);
    double pos = q / 100.0 * (double)(n - 1);
    size_t lo = (size_t)floor(pos);
    size_t hi = lo + 1 < n ? lo + 1 : lo;
    return v[lo] + (v[hi] - v[lo]) * (pos - (double)lo);
}

void qs_eval_score(const qs_eval_response *responses, const qs_gsm8k_answer *labels, size_t n, double wall_s,
                   int num_shots, int max_tokens, qs_eval_result *out)
{
    memset(out, 0, sizeof *out);
    out->num_questions = n;
    out->num_shots = num_shots;
    out->max_tokens = max_tokens;
    double *lat = n ? malloc(n * sizeof *lat) : NULL;
    double lat_sum = 0;
    for (size_t i = 0; i < n; i++) {
        qs_gsm8k_answer pred = qs_gsm8k_extract_answer(responses[i].text ? responses[i].text : "");
        out->correct += qs_gsm8k_answer_equal(&pred, &labels[i]);
        out->invalid += !pred.valid;
        out->failed_requests += responses[i].failed;
        out->total_output_tokens += responses[i].completion_tokens;
        lat_sum += responses[i].latency_s;
        if (lat)
            lat[i] = responses[i].latency_s;
    }
    out->accuracy = n ? (double)out->correct / (double)n : 0;
    out->invalid_rate = n ? (double)out->invalid / (double)n : 0;
    out->latency_s = wall_s;
    out->questions_per_second = wall_s > 0 ? (double)n / wall_s : 0;
    out->tokens_per_second = wall_s > 0 ? (double)out->total_output_tokens / wall_s : 0;
    out->latency_mean_s = n ? lat_sum / (double)n : 0;
    if (lat) {
        out->latency_p50_s = qs_eval_percentile(lat, n, 50);
        out->latency_p99_s = qs_eval_percentile(lat, n, 99);
    }
    free(lat);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    out->timestamp = (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

void qs_eval_print_result(FILE *out, const qs_eval_result *r)
{
    fprintf(out, "\nResults:\n");
    fprintf(out, "Accuracy: %.3f (%zu/%zu)\n", r->accuracy, r->correct, r->num_questions);
    fprintf(out, "Invalid responses: %.3f\n", r->invalid_rate);
    if (r->failed_requests)
        fprintf(out, "Failed requests: %zu\n", r->failed_requests);
    fprintf(out, "Total latency: %.3f s\n", r->latency_s);
    fprintf(out, "Request latency: mean %.3f s, p50 %.3f s, p99 %.3f s\n", r->latency_mean_s, r->latency_p50_s,
            r->latency_p99_s);
    fprintf(out, "Questions per second: %.3f\n", r->questions_per_second);
    fprintf(out, "Total output tokens: %ld\n", r->total_output_tokens);
    fprintf(out, "Output tokens per second: %.3f\n", r->tokens_per_second);
}

static cJSON *config_json(const qs_eval_config *c)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "file", c->path);
    cJSON_AddStringToObject(o, "model_name", c->model_name);
    cJSON_AddNumberToObject(o, "accuracy_threshold", c->accuracy_threshold);
    cJSON_AddNumberToObject(o, "num_questions", c->num_questions);
    cJSON_AddNumberToObject(o, "num_fewshot", c->num_fewshot);
    cJSON_AddStringToObject(o, "server_args", c->server_args);
    cJSON *env = cJSON_AddObjectToObject(o, "env");
    for (size_t i = 0; i < c->env.count; i++) {
        const char *kv = c->env.items[i], *eq = strchr(kv, '=');
        char key[256];
        snprintf(key, sizeof key, "%.*s", (int)(eq - kv), kv);
        cJSON_AddStringToObject(env, key, eq + 1);
    }
    cJSON_AddNumberToObject(o, "tolerance", c->tolerance);
    cJSON_AddNumberToObject(o, "startup_max_wait_seconds", c->startup_max_wait_seconds);
    cJSON_AddNumberToObject(o, "max_tokens", c->max_tokens);
    cJSON_AddNumberToObject(o, "temperature", c->temperature);
    cJSON_AddNumberToObject(o, "seed", (double)c->seed);
    cJSON_AddNumberToObject(o, "request_timeout_seconds", c->request_timeout_seconds);
    cJSON_AddBoolToObject(o, "use_chat_completions", c->use_chat_completions);
    if (c->max_concurrency > 0)
        cJSON_AddNumberToObject(o, "max_concurrency", c->max_concurrency);
    else
        cJSON_AddNullToObject(o, "max_concurrency");
    cJSON_AddStringToObject(o, "gen_prefix", c->gen_prefix);
    return o;
}

static cJSON *params_json(const qs_eval_request_params *p)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "url", p->base_url);
    cJSON_AddStringToObject(o, "endpoint", p->chat ? "/v1/chat/completions" : "/v1/completions");
    if (p->model)
        cJSON_AddStringToObject(o, "model", p->model);
    cJSON_AddNumberToObject(o, "max_tokens", p->max_tokens);
    if (p->send_temperature)
        cJSON_AddNumberToObject(o, "temperature", p->temperature);
    if (p->send_seed)
        cJSON_AddNumberToObject(o, "seed", (double)p->seed);
    const char *stop[] = {"Question", "Assistant:", "<|separator|>"};
    cJSON_AddItemToObject(o, "stop", cJSON_CreateStringArray(stop, 3));
    cJSON_AddNumberToObject(o, "request_timeout_seconds", p->timeout_s);
    cJSON_AddNumberToObject(o, "max_concurrency",
                            p->max_concurrency > 0 ? p->max_concurrency : QS_EVAL_DEFAULT_CONCURRENCY);
    return o;
}

int qs_eval_save_results(const char *path, const qs_eval_result *r, const qs_eval_request_params *params,
                         const qs_eval_config *cfg, bool passed, double needed, qs_err *err)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "accuracy", r->accuracy);
    cJSON_AddNumberToObject(o, "invalid_rate", r->invalid_rate);
    cJSON_AddNumberToObject(o, "latency", r->latency_s);
    cJSON_AddNumberToObject(o, "questions_per_second", r->questions_per_second);
    cJSON_AddNumberToObject(o, "total_output_tokens", (double)r->total_output_tokens);
    cJSON_AddNumberToObject(o, "tokens_per_second", r->tokens_per_second);
    cJSON_AddNumberToObject(o, "num_questions", (double)r->num_questions);
    cJSON_AddNumberToObject(o, "num_shots", r->num_shots);
    cJSON_AddNumberToObject(o, "max_tokens", r->max_tokens);
    cJSON_AddNumberToObject(o, "timestamp", r->timestamp);
    cJSON_AddNumberToObject(o, "correct", (double)r->correct);
    cJSON_AddNumberToObject(o, "failed_requests", (double)r->failed_requests);
    cJSON_AddNumberToObject(o, "request_latency_mean", r->latency_mean_s);
    cJSON_AddNumberToObject(o, "request_latency_p50", r->latency_p50_s);
    cJSON_AddNumberToObject(o, "request_latency_p99", r->latency_p99_s);
    if (cfg) {
        cJSON_AddBoolToObject(o, "passed", passed);
        cJSON_AddNumberToObject(o, "required_accuracy", needed);
    }
    cJSON_AddItemToObject(o, "request_params", params_json(params));
    if (cfg)
        cJSON_AddItemToObject(o, "config", config_json(cfg));
    char *text = cJSON_Print(o);
    cJSON_Delete(o);
    if (!text)
        return qs_errf(err, "out of memory writing %s", path);
    size_t len = strlen(text);
    text[len] = '\n'; /* cJSON_Print's NUL becomes the final newline */
    int rc = qs_write_file(path, text, len + 1, err);
    free(text);
    return rc ? qs_err_prefix(err, "--save-results: ") : 0;
}
