/* runner.c — the concurrent request loop of runner.h over libcurl's multi interface. */
#include "eval/runner.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "eval/interrupt.h"

#define MAX_PRINTED_ERRORS 10

static const char *const STOP[] = {"Question", "Assistant:", "<|separator|>"};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

char *qs_eval_request_body(const qs_eval_request_params *p, const char *prompt)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    if (p->chat) {
        cJSON *msgs = cJSON_AddArrayToObject(o, "messages");
        cJSON *m = cJSON_CreateObject();
        cJSON_AddItemToArray(msgs, m);
        cJSON_AddStringToObject(m, "role", "user");
        cJSON_AddStringToObject(m, "content", prompt);
    } else {
        cJSON_AddStringToObject(o, "prompt", prompt);
    }
    cJSON_AddNumberToObject(o, "max_tokens", p->max_tokens);
    cJSON_AddItemToObject(o, "stop", cJSON_CreateStringArray(STOP, 3));
    if (p->chat && p->model)
        cJSON_AddStringToObject(o, "model", p->model);
    if (p->send_temperature)
        cJSON_AddNumberToObject(o, "temperature", p->temperature);
    if (p->send_seed) {
        char seed[32];
        snprintf(seed, sizeof seed, "%lld", p->seed);
        cJSON_AddRawToObject(o, "seed", seed);
    }
    char *text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return text;
}

typedef struct {
    size_t index;
    CURL *easy;
    char *body;
    size_t len, cap;
    double start;
    char curl_error[CURL_ERROR_SIZE];
} transfer;

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *ctx)
{
    transfer *t = ctx;
    size_t n = size * nmemb;
    if (t->len + n + 1 > t->cap) {
        size_t cap = (t->len + n + 1) * 2;
        char *b = realloc(t->body, cap);
        if (!b)
            return 0;
        t->body = b;
        t->cap = cap;
    }
    memcpy(t->body + t->len, ptr, n);
    t->len += n;
    t->body[t->len] = '\0';
    return n;
}

/* Reads the answer text and token count out of a 200 response; fills why on failure. */
static int parse_response(const char *body, bool chat, qs_eval_response *r, char *why, size_t cap)
{
    cJSON *o = cJSON_Parse(body);
    if (!o) {
        snprintf(why, cap, "the response is not JSON: %.200s", body);
        return -1;
    }
    const cJSON *c0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(o, "choices"), 0);
    const cJSON *text = chat ? cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(c0, "message"),
                                                                 "content")
                             : cJSON_GetObjectItemCaseSensitive(c0, "text");
    int rc = 0;
    if (cJSON_IsString(text)) {
        r->text = strdup(text->valuestring);
    } else if (chat && cJSON_IsNull(text)) {
        r->text = strdup("");
    } else {
        snprintf(why, cap, "no %s in the response: %.200s", chat ? "choices[0].message.content" : "choices[0].text",
                 body);
        rc = -1;
    }
    const cJSON *tokens =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "usage"), "completion_tokens");
    r->completion_tokens = cJSON_IsNumber(tokens) ? (long)tokens->valuedouble : 0;
    cJSON_Delete(o);
    return rc;
}

static void finish_transfer(transfer *t, CURLcode code, const qs_eval_request_params *p, qs_eval_response *r,
                            size_t *errors)
{
    r->latency_s = now_s() - t->start;
    char why[512] = "";
    long status = 0;
    curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &status);
    if (code != CURLE_OK)
        snprintf(why, sizeof why, "%s", t->curl_error[0] ? t->curl_error : curl_easy_strerror(code));
    else if (status >= 400 || status < 200)
        snprintf(why, sizeof why, "HTTP %ld: %.300s", status, t->body ? t->body : "");
    else
        parse_response(t->body ? t->body : "", p->chat, r, why, sizeof why);
    if (why[0]) {
        free(r->text);
        r->text = strdup("");
        r->completion_tokens = 0;
        r->failed = true;
        if (++*errors <= MAX_PRINTED_ERRORS)
            fprintf(stderr, "Error calling qserve API (question %zu): %s\n", t->index, why);
        else if (*errors == MAX_PRINTED_ERRORS + 1)
            fprintf(stderr, "(further request errors are counted, not printed)\n");
    }
}

static int start_transfer(CURLM *multi, transfer *t, const qs_eval_request_params *p, const char *url,
                          struct curl_slist *headers, const char *prompt)
{
    t->easy = curl_easy_init();
    char *json = qs_eval_request_body(p, prompt);
    if (!t->easy || !json) {
        free(json);
        return -1;
    }
    curl_easy_setopt(t->easy, CURLOPT_URL, url);
    curl_easy_setopt(t->easy, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(t->easy, CURLOPT_COPYPOSTFIELDS, json);
    curl_easy_setopt(t->easy, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(t->easy, CURLOPT_WRITEDATA, t);
    curl_easy_setopt(t->easy, CURLOPT_ERRORBUFFER, t->curl_error);
    curl_easy_setopt(t->easy, CURLOPT_TIMEOUT_MS, (long)(p->timeout_s * 1000));
    curl_easy_setopt(t->easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(t->easy, CURLOPT_NOPROXY, "localhost,127.0.0.1,::1");
    curl_easy_setopt(t->easy, CURLOPT_PRIVATE, t);
    free(json);
    t->start = now_s();
    return curl_multi_add_handle(multi, t->easy) == CURLM_OK ? 0 : -1;
}

static void show_progress(size_t done, size_t n, double start, double *last_shown, bool tty)
{
    double now = now_s();
    bool last = done == n;
    if (tty) {
        if (!last && now - *last_shown < 0.2)
            return;
        fprintf(stderr, "\rEvaluating: %zu/%zu (%3.0f%%) %.2f q/s", done, n, 100.0 * (double)done / (double)n,
                (double)done / (now - start));
        if (last)
            fputc('\n', stderr);
    } else {
        size_t step = n >= 10 ? n / 10 : 1;
        if (!last && done % step != 0 && now - *last_shown < 30)
            return;
        fprintf(stderr, "Evaluating: %zu/%zu (%.0f%%) %.2f q/s\n", done, n, 100.0 * (double)done / (double)n,
                (double)done / (now - start));
    }
    *last_shown = now;
}

int qs_eval_run_requests(const qs_eval_request_params *p, char *const *prompts, size_t n, qs_eval_response *out,
                         double *wall_s, qs_err *err)
{
    memset(out, 0, n * sizeof *out);
    *wall_s = 0;
    if (n == 0)
        return 0;
    char url[512];
    snprintf(url, sizeof url, "%s%s", p->base_url, p->chat ? "/v1/chat/completions" : "/v1/completions");
    size_t limit = (size_t)(p->max_concurrency > 0 ? p->max_concurrency : QS_EVAL_DEFAULT_CONCURRENCY);
    if (limit > n)
        limit = n;
    CURLM *multi = curl_multi_init();
    transfer *slots = calloc(limit, sizeof *slots);
    struct curl_slist *headers = curl_slist_append(NULL, "Content-Type: application/json");
    headers = curl_slist_append(headers, "Expect:");
    if (!multi || !slots || !headers) {
        curl_multi_cleanup(multi);
        free(slots);
        curl_slist_free_all(headers);
        return qs_errf(err, "out of memory setting up %zu concurrent requests", limit);
    }
    bool tty = isatty(STDERR_FILENO);
    double start = now_s(), last_shown = 0;
    size_t next = 0, done = 0, errors = 0;
    int rc = 0;
    while (done < n && rc == 0) {
        for (size_t s = 0; s < limit && next < n; s++) {
            if (slots[s].easy)
                continue;
            slots[s] = (transfer){.index = next};
            if (start_transfer(multi, &slots[s], p, url, headers, prompts[next]) != 0) {
                rc = qs_errf(err, "cannot start the request for question %zu", next);
                break;
            }
            next++;
        }
        int running;
        curl_multi_perform(multi, &running);
        CURLMsg *msg;
        int queued;
        while ((msg = curl_multi_info_read(multi, &queued)) != NULL) {
            if (msg->msg != CURLMSG_DONE)
                continue;
            transfer *t;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&t);
            finish_transfer(t, msg->data.result, p, &out[t->index], &errors);
            curl_multi_remove_handle(multi, t->easy);
            curl_easy_cleanup(t->easy);
            free(t->body);
            *t = (transfer){0};
            done++;
            if (p->progress)
                show_progress(done, n, start, &last_shown, tty);
        }
        if (qs_eval_interrupted())
            rc = qs_errf(err, "interrupted after %zu of %zu questions", done, n);
        else if (done < n)
            curl_multi_poll(multi, NULL, 0, 100, NULL);
    }
    for (size_t s = 0; s < limit; s++) {
        if (!slots[s].easy)
            continue;
        curl_multi_remove_handle(multi, slots[s].easy);
        curl_easy_cleanup(slots[s].easy);
        free(slots[s].body);
    }
    *wall_s = now_s() - start;
    for (size_t i = 0; i < n; i++)
        if (!out[i].text && !(out[i].text = strdup("")))
            rc = qs_errf(err, "out of memory");
    free(slots);
    curl_slist_free_all(headers);
    curl_multi_cleanup(multi);
    return rc;
}

void qs_eval_responses_free(qs_eval_response *r, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(r[i].text);
}
