/* bench_serve.c — an online serving benchmark in the manner of `vllm bench serve`: random
 * prompts of a given token length (sent as token ids, so the input length is exact), streamed
 * completions through libcurl's multi interface, either all at once bounded by --concurrency or
 * arriving as a Poisson process at --request-rate. Prints request / token throughput and TTFT,
 * TPOT (excluding the first token) and ITL mean / median / p99, like vLLM's report.
 *
 *   build/bench_serve --url http://127.0.0.1:8000 --model NAME --num-prompts 200 \
 *       --random-input-len 128 --random-output-len 128 --concurrency 32 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cJSON.h>
#include <curl/curl.h>

typedef struct {
    const char *url, *model, *api_key, *endpoint;
    int num_prompts, input_len, output_len, concurrency, vocab_size;
    double request_rate; /* <= 0: all at once */
    unsigned seed;
    bool ignore_eos;
} options;

typedef struct {
    int index;
    CURL *curl;
    struct curl_slist *headers;
    char *body;
    char *line;          /* SSE bytes not yet split into lines */
    size_t line_len, line_cap;
    double t_start, t_first, t_last;
    double *itl;         /* gaps between content chunks */
    int n_itl, cap_itl;
    int output_tokens;
    bool done_marker, failed;
    long status;
} request;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: bench_serve [--url URL] [--model NAME] [--endpoint /v1/completions] [--num-prompts N]\n"
            "                   [--random-input-len N] [--random-output-len N] [--concurrency N]\n"
            "                   [--request-rate R] [--seed S] [--vocab-size V] [--api-key KEY] [--no-ignore-eos]\n"
            "  --url          server base URL (default http://127.0.0.1:8000)\n"
            "  --model        model name sent in requests (default: none, the server's model)\n"
            "  --num-prompts  requests to send (default 100)\n"
            "  --random-input-len / --random-output-len  prompt and completion tokens (default 128 / 128)\n"
            "  --concurrency  most requests in flight at once (default: all)\n"
            "  --request-rate requests per second as a Poisson process (default: all at time 0)\n"
            "  --vocab-size   prompt token ids are drawn from [10, V) (default 512: any model has those)\n"
            "  --no-ignore-eos  let requests stop at EOS (default: ignore_eos, exact output lengths)\n");
}

static int parse_args(int argc, char **argv, options *o)
{
    *o = (options){.url = "http://127.0.0.1:8000", .endpoint = "/v1/completions", .num_prompts = 100,
                   .input_len = 128, .output_len = 128, .concurrency = 0, .vocab_size = 512, .seed = 0,
                   .ignore_eos = true};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            exit(0);
        }
        if (!strcmp(a, "--no-ignore-eos")) {
            o->ignore_eos = false;
            continue;
        }
        if (!v) {
            fprintf(stderr, "error: %s needs a value\n", a);
            return -1;
        }
        i++;
        if (!strcmp(a, "--url")) o->url = v;
        else if (!strcmp(a, "--model")) o->model = v;
        else if (!strcmp(a, "--endpoint")) o->endpoint = v;
        else if (!strcmp(a, "--api-key")) o->api_key = v;
        else if (!strcmp(a, "--num-prompts")) o->num_prompts = atoi(v);
        else if (!strcmp(a, "--random-input-len")) o->input_len = atoi(v);
        else if (!strcmp(a, "--random-output-len")) o->output_len = atoi(v);
        else if (!strcmp(a, "--concurrency") || !strcmp(a, "--max-concurrency")) o->concurrency = atoi(v);
        else if (!strcmp(a, "--request-rate")) o->request_rate = !strcmp(v, "inf") ? 0 : atof(v);
        else if (!strcmp(a, "--seed")) o->seed = (unsigned)strtoul(v, NULL, 10);
        else if (!strcmp(a, "--vocab-size")) o->vocab_size = atoi(v);
        else {
            fprintf(stderr, "error: unknown option %s\n", a);
            usage(stderr);
            return -1;
        }
    }
    if (o->num_prompts <= 0 || o->input_len <= 0 || o->output_len <= 0 || o->vocab_size <= 10) {
        fprintf(stderr, "error: --num-prompts, --random-input-len, --random-output-len must be > 0, --vocab-size > 10\n");
        return -1;
    }
    if (o->concurrency <= 0 || o->concurrency > o->num_prompts)
        o->concurrency = o->num_prompts;
    return 0;
}

/* xorshift: the same prompts for the same --seed */
static uint32_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return (uint32_t)(*s >> 11);
}

static void on_sse_line(request *r, const char *line, size_t len)
{
    if (len < 6 || strncmp(line, "data: ", 6) != 0)
        return;
    if (len >= 12 && !strncmp(line + 6, "[DONE]", 6)) {
        r->done_marker = true;
        return;
    }
    cJSON *c = cJSON_ParseWithLength(line + 6, len - 6);
    if (!c)
        return;
    if (cJSON_GetObjectItem(c, "error"))
        r->failed = true;
    const cJSON *choices = cJSON_GetObjectItem(c, "choices");
    const cJSON *ch = cJSON_GetArrayItem(choices, 0);
    const cJSON *text = ch ? cJSON_GetObjectItem(ch, "text") : NULL;
    if (!text && ch) {
        const cJSON *delta = cJSON_GetObjectItem(ch, "delta");
        text = delta ? cJSON_GetObjectItem(delta, "content") : NULL;
    }
    if (cJSON_IsString(text) && text->valuestring[0]) {
        double t = now();
        if (r->t_first == 0)
            r->t_first = t;
        else {
            if (r->n_itl == r->cap_itl) {
                r->cap_itl = r->cap_itl ? r->cap_itl * 2 : 64;
                r->itl = realloc(r->itl, (size_t)r->cap_itl * sizeof *r->itl);
            }
            if (r->itl)
                r->itl[r->n_itl++] = t - r->t_last;
        }
        r->t_last = t;
    }
    const cJSON *u = cJSON_GetObjectItem(c, "usage");
    const cJSON *ct = u ? cJSON_GetObjectItem(u, "completion_tokens") : NULL;
    if (cJSON_IsNumber(ct))
        r->output_tokens = ct->valueint;
    cJSON_Delete(c);
}

static size_t on_data(char *data, size_t size, size_t n, void *cls)
{
    request *r = cls;
    size_t len = size * n;
    if (r->line_len + len + 1 > r->line_cap) {
        size_t cap = r->line_cap ? r->line_cap : 4096;
        while (cap < r->line_len + len + 1)
            cap *= 2;
        char *p = realloc(r->line, cap);
        if (!p)
            return 0;
        r->line = p;
        r->line_cap = cap;
    }
    memcpy(r->line + r->line_len, data, len);
    r->line_len += len;
    size_t start = 0;
    for (size_t i = 0; i < r->line_len; i++)
        if (r->line[i] == '\n') {
            on_sse_line(r, r->line + start, i - start);
            start = i + 1;
        }
    memmove(r->line, r->line + start, r->line_len - start);
    r->line_len -= start;
    return len;
}

static char *make_body(const options *o, uint64_t *rng)
{
    cJSON *b = cJSON_CreateObject();
    if (o->model)
        cJSON_AddStringToObject(b, "model", o->model);
    cJSON *ids = cJSON_AddArrayToObject(b, "prompt");
    for (int i = 0; i < o->input_len; i++)
        cJSON_AddItemToArray(ids, cJSON_CreateNumber(10 + rng_next(rng) % (uint32_t)(o->vocab_size - 10)));
    cJSON_AddNumberToObject(b, "max_tokens", o->output_len);
    cJSON_AddNumberToObject(b, "temperature", 0);
    cJSON_AddBoolToObject(b, "ignore_eos", o->ignore_eos);
    cJSON_AddBoolToObject(b, "stream", true);
    cJSON *so = cJSON_AddObjectToObject(b, "stream_options");
    cJSON_AddBoolToObject(so, "include_usage", true);
    char *s = cJSON_PrintUnformatted(b);
    cJSON_Delete(b);
    return s;
}

static void start_request(CURLM *multi, const options *o, request *r)
{
    char url[1024];
    snprintf(url, sizeof url, "%s%s", o->url, o->endpoint);
    r->curl = curl_easy_init();
    r->headers = curl_slist_append(NULL, "Content-Type: application/json");
    if (o->api_key) {
        char h[512];
        snprintf(h, sizeof h, "Authorization: Bearer %s", o->api_key);
        r->headers = curl_slist_append(r->headers, h);
    }
    curl_easy_setopt(r->curl, CURLOPT_URL, url);
    curl_easy_setopt(r->curl, CURLOPT_HTTPHEADER, r->headers);
    curl_easy_setopt(r->curl, CURLOPT_POSTFIELDS, r->body);
    curl_easy_setopt(r->curl, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(r->curl, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(r->curl, CURLOPT_PRIVATE, r);
    curl_easy_setopt(r->curl, CURLOPT_TIMEOUT, 3600L);
    r->t_start = now();
    curl_multi_add_handle(multi, r->curl);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void stats(double *v, int n, double *mean, double *median, double *p99)
{
    *mean = *median = *p99 = 0;
    if (n == 0)
        return;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    double s = 0;
    for (int i = 0; i < n; i++)
        s += v[i];
    *mean = s / n;
    *median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    double rank = 0.99 * (n - 1);
    int lo = (int)floor(rank);
    int hi = lo + 1 < n ? lo + 1 : lo;
    *p99 = v[lo] + (rank - lo) * (v[hi] - v[lo]);
}

static void print_block(const char *title, const char *name, double *v, int n)
{
    double mean, median, p99;
    stats(v, n, &mean, &median, &p99);
    printf("%s\n", title);
    printf("Mean %s (ms):%*s%.2f\n", name, (int)(34 - strlen(name)), "", mean * 1e3);
    printf("Median %s (ms):%*s%.2f\n", name, (int)(32 - strlen(name)), "", median * 1e3);
    printf("P99 %s (ms):%*s%.2f\n", name, (int)(35 - strlen(name)), "", p99 * 1e3);
}

int main(int argc, char **argv)
{
    options o;
    if (parse_args(argc, argv, &o))
        return 2;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    request *reqs = calloc((size_t)o.num_prompts, sizeof *reqs);
    uint64_t rng = 0x9E3779B97F4A7C15ull ^ o.seed;
    for (int i = 0; i < o.num_prompts; i++) {
        reqs[i].index = i;
        reqs[i].body = make_body(&o, &rng);
    }
    CURLM *multi = curl_multi_init();
    int next = 0, active = 0, finished = 0;
    double t0 = now(), next_arrival = t0;
    printf("bench_serve: %d prompts, input %d, output %d tokens, concurrency %d, request rate %s\n", o.num_prompts,
           o.input_len, o.output_len, o.concurrency, o.request_rate > 0 ? "poisson" : "inf");
    if (o.request_rate > 0)
        printf("bench_serve: request rate %.2f req/s\n", o.request_rate);
    while (finished < o.num_prompts) {
        double t = now();
        while (next < o.num_prompts && active < o.concurrency && t >= next_arrival) {
            start_request(multi, &o, &reqs[next++]);
            active++;
            if (o.request_rate > 0) {
                double u = ((double)rng_next(&rng) + 1.0) / 4294967296.0;
                next_arrival += -log(u) / o.request_rate;
            }
        }
        int running;
        curl_multi_perform(multi, &running);
        CURLMsg *msg;
        int left;
        while ((msg = curl_multi_info_read(multi, &left))) {
            if (msg->msg != CURLMSG_DONE)
                continue;
            request *r;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&r);
            curl_easy_getinfo(msg->easy_handle, CURLINFO_RESPONSE_CODE, &r->status);
            if (msg->data.result != CURLE_OK || r->status != 200 || !r->done_marker)
                r->failed = true;
            curl_multi_remove_handle(multi, msg->easy_handle);
            curl_easy_cleanup(msg->easy_handle);
            curl_slist_free_all(r->headers);
            r->curl = NULL;
            active--;
            finished++;
        }
        int wait_ms = 50;
        if (next < o.num_prompts && active < o.concurrency) { /* a request may start: don't sleep past it */
            double until = (next_arrival - now()) * 1e3;
            wait_ms = until <= 0 ? 0 : until < 50 ? (int)until : 50;
        }
        if (wait_ms > 0)
            curl_multi_poll(multi, NULL, 0, wait_ms, NULL);
    }
    double duration = now() - t0;

    int ok = 0;
    long long in_tokens = 0, out_tokens = 0, n_itl = 0;
    for (int i = 0; i < o.num_prompts; i++)
        if (!reqs[i].failed) {
            ok++;
            in_tokens += o.input_len;
            out_tokens += reqs[i].output_tokens;
            n_itl += reqs[i].n_itl;
        }
    double *ttft = calloc((size_t)(ok + 1), sizeof *ttft), *tpot = calloc((size_t)(ok + 1), sizeof *tpot);
    double *itl = calloc((size_t)(n_itl + 1), sizeof *itl);
    int n_ttft = 0, n_tpot = 0, k = 0;
    for (int i = 0; i < o.num_prompts; i++) {
        request *r = &reqs[i];
        if (r->failed)
            continue;
        if (r->t_first > 0)
            ttft[n_ttft++] = r->t_first - r->t_start;
        if (r->output_tokens > 1)
            tpot[n_tpot++] = (r->t_last - r->t_first) / (r->output_tokens - 1);
        for (int j = 0; j < r->n_itl; j++)
            itl[k++] = r->itl[j];
    }
    printf("============ Serving Benchmark Result ============\n");
    printf("%-40s %d\n", "Successful requests:", ok);
    printf("%-40s %d\n", "Failed requests:", o.num_prompts - ok);
    printf("%-40s %d\n", "Maximum request concurrency:", o.concurrency);
    printf("%-40s %.2f\n", "Benchmark duration (s):", duration);
    printf("%-40s %lld\n", "Total input tokens:", in_tokens);
    printf("%-40s %lld\n", "Total generated tokens:", out_tokens);
    printf("%-40s %.2f\n", "Request throughput (req/s):", ok / duration);
    printf("%-40s %.2f\n", "Output token throughput (tok/s):", out_tokens / duration);
    printf("%-40s %.2f\n", "Total token throughput (tok/s):", (in_tokens + out_tokens) / duration);
    print_block("---------------Time to First Token----------------", "TTFT", ttft, n_ttft);
    print_block("-----Time per Output Token (excl. 1st token)------", "TPOT", tpot, n_tpot);
    print_block("---------------Inter-token Latency----------------", "ITL", itl, k);
    printf("==================================================\n");
    for (int i = 0; i < o.num_prompts; i++) {
        free(reqs[i].body);
        free(reqs[i].line);
        free(reqs[i].itl);
    }
    free(reqs);
    free(ttft);
    free(tpot);
    free(itl);
    curl_multi_cleanup(multi);
    curl_global_cleanup();
    return ok == o.num_prompts ? 0 : 1;
}
