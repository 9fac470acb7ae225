/* eval_run.c — the orchestration of eval_run.h. Data and model problems are found before the
 * server starts (no startup time wasted); once started, the server is stopped on every path. */
#include "eval/eval_run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "eval/gsm8k.h"
#include "hub/hub.h"
#include "eval/interrupt.h"
#include "eval/model_support.h"
#include "eval/report.h"
#include "eval/runner.h"
#include "eval/server_proc.h"

const char *qs_eval_status_name(qs_eval_status s)
{
    switch (s) {
    case QS_EVAL_PASSED: return "pass";
    case QS_EVAL_FAILED: return "FAIL";
    case QS_EVAL_SKIPPED: return "skipped";
    case QS_EVAL_ERROR: return "ERROR";
    }
    return "?";
}

static void apply_overrides(qs_eval_config *c, const qs_eval_options *o)
{
    if (o->has_num_questions)
        c->num_questions = o->num_questions;
    if (o->has_num_shots)
        c->num_fewshot = o->num_shots;
    if (o->has_max_tokens)
        c->max_tokens = o->max_tokens;
    if (o->has_temperature)
        c->temperature = o->temperature;
    if (o->has_seed)
        c->seed = o->seed;
    if (o->has_max_concurrency)
        c->max_concurrency = o->max_concurrency;
    if (o->has_request_timeout)
        c->request_timeout_seconds = o->request_timeout_seconds;
    if (o->use_chat_completions)
        c->use_chat_completions = true;
}

/* Everything the requests need, built before any server starts. */
typedef struct {
    qs_gsm8k_set train, test;
    char **prompts;
    qs_gsm8k_answer *labels;
    size_t n;
} eval_inputs;

static void inputs_free(eval_inputs *in)
{
    for (size_t i = 0; i < in->n && in->prompts; i++)
        free(in->prompts[i]);
    free(in->prompts);
    free(in->labels);
    qs_gsm8k_free(&in->train);
    qs_gsm8k_free(&in->test);
}

static int build_inputs(const qs_eval_config *c, const char *data_dir_arg, eval_inputs *in, qs_err *err)
{
    memset(in, 0, sizeof *in);
    char dir[2048], path[4096];
    if (qs_gsm8k_find_data_dir(data_dir_arg, dir, sizeof dir, err) != 0)
        return -1;
    snprintf(path, sizeof path, "%s/train.jsonl", dir);
    if (qs_gsm8k_load(path, &in->train, err) != 0)
        return -1;
    snprintf(path, sizeof path, "%s/test.jsonl", dir);
    if (qs_gsm8k_load(path, &in->test, err) != 0)
        return -1;
    in->n = (size_t)c->num_questions < in->test.count ? (size_t)c->num_questions : in->test.count;
    char *block = qs_gsm8k_fewshot_block(&in->train, c->num_fewshot, c->gen_prefix, err);
    if (!block)
        return qs_err_prefix(err, "%s: ", path);
    in->prompts = calloc(in->n ? in->n : 1, sizeof *in->prompts);
    in->labels = calloc(in->n ? in->n : 1, sizeof *in->labels);
    int rc = in->prompts && in->labels ? 0 : qs_errf(err, "out of memory");
    for (size_t i = 0; i < in->n && rc == 0; i++) {
        in->labels[i] = qs_gsm8k_label(in->test.rows[i].answer);
        if (!in->labels[i].valid)
            rc = qs_errf(err, "%s: test question %zu has no valid answer after ####", path, i);
        else if (!(in->prompts[i] = qs_gsm8k_prompt(block, in->test.rows[i].question, c->gen_prefix)))
            rc = qs_errf(err, "out of memory");
    }
    free(block);
    return rc;
}

static qs_eval_status finish(qs_eval_outcome *out, qs_eval_status s, const qs_err *err)
{
    out->status = s;
    if (err)
        snprintf(out->reason, sizeof out->reason, "%s", err->msg);
    if (s == QS_EVAL_ERROR)
        fprintf(stderr, "qserve-eval: error: %s\n", out->reason);
    else if (s == QS_EVAL_SKIPPED)
        fprintf(stderr, "qserve-eval: skipped: %s\n", out->reason);
    return s;
}

qs_eval_status qs_eval_run(const char *config_path, const qs_eval_options *o, qs_eval_outcome *out)
{
    memset(out, 0, sizeof *out);
    qs_err err = {{0}};
    qs_eval_config cfg;
    qs_eval_config_defaults(&cfg);
    cfg.num_questions = 1319;
    cfg.num_fewshot = 5;
    if (config_path) {
        if (qs_eval_config_load(config_path, &cfg, &err) != 0) {
            qs_eval_config_free(&cfg);
            return finish(out, QS_EVAL_ERROR, &err);
        }
        if (cfg.warnings[0])
            fprintf(stderr, "%s", cfg.warnings);
    } else {
        /* Standalone like vLLM's evaluator CLI: chat mode leaves temperature to the server. */
        if (!(cfg.model_name = strdup("")) || !(cfg.server_args = strdup("")) || !(cfg.gen_prefix = strdup(""))) {
            qs_eval_config_free(&cfg);
            qs_errf(&err, "out of memory");
            return finish(out, QS_EVAL_ERROR, &err);
        }
    }
    apply_overrides(&cfg, o);
    out->judged = config_path != NULL;
    out->needed = cfg.accuracy_threshold - cfg.tolerance;

    char model_dir[2048] = "";
    qs_eval_status status = QS_EVAL_ERROR;
    eval_inputs in = {0};
    qs_eval_server server = {0};
    if (!o->host) {
        /* the server's hub flags pick the revision and cache; --skip-missing-models looks in the
         * cache only (a model not there is skipped), otherwise what is missing is downloaded */
        bool offline = o->skip_missing_models;
        for (size_t i = 0; i < cfg.server_argv.count; i++)
            offline |= !strcmp(cfg.server_argv.items[i], "--offline");
        qs_hub_options ho = {.revision = qs_eval_flag_value(&cfg.server_argv, "--revision"),
                             .cache_dir = qs_eval_flag_value(&cfg.server_argv, "--download-dir"),
                             .offline = offline,
                             .offline_why = o->skip_missing_models ? "--skip-missing-models (cache only)" : NULL,
                             .files = QS_HUB_FILES_MODEL};
        if (qs_hub_resolve(cfg.model_name, &ho, model_dir, sizeof model_dir, &err) != 0) {
            qs_err_prefix(&err, "%s: ", cfg.path);
            if (o->skip_missing_models) {
                snprintf(out->reason, sizeof out->reason, "%s", err.msg);
                status = QS_EVAL_SKIPPED;
            }
            goto done;
        }
        /* a --tokenizer (or --tokenizer-revision) of the server is fetched too: the server reads
         * the cache only when the model came from the hub */
        const char *tok = qs_eval_flag_value(&cfg.server_argv, "--tokenizer");
        const char *tok_rev = qs_eval_flag_value(&cfg.server_argv, "--tokenizer-revision");
        if (tok || tok_rev) {
            char tok_dir[2048];
            qs_hub_options to = ho;
            to.revision = tok_rev;
            to.files = QS_HUB_FILES_TOKENIZER;
            if (qs_hub_resolve(tok ? tok : cfg.model_name, &to, tok_dir, sizeof tok_dir, &err) != 0) {
                qs_err_prefix(&err, "%s: --tokenizer: ", cfg.path);
                if (o->skip_missing_models) {
                    snprintf(out->reason, sizeof out->reason, "%s", err.msg);
                    status = QS_EVAL_SKIPPED;
                }
                goto done;
            }
        }
        if (qs_eval_model_dir_unsupported(model_dir, out->reason, sizeof out->reason)) {
            status = QS_EVAL_SKIPPED;
            goto done;
        }
    }
    if (build_inputs(&cfg, o->data_dir, &in, &err) != 0)
        goto done;

    /* vLLM serves a model under its id and its runner sends that id as "model" in chat requests. A
     * hub model is handed to the server by its id (served under it by default), which finds the
     * snapshot just resolved in the cache without going to the network again. */
    const char *named = qs_eval_flag_value(&cfg.server_argv, "--served-model-name");
    bool from_hub = !o->host && strcmp(model_dir, cfg.model_name) != 0;
    qs_eval_request_params params = {
        .chat = cfg.use_chat_completions,
        .model = o->model ? o->model : o->host ? NULL : named ? named : cfg.model_name,
        .max_tokens = cfg.max_tokens,
        .send_temperature = config_path || o->has_temperature || !cfg.use_chat_completions,
        .temperature = cfg.temperature,
        .send_seed = true,
        .seed = cfg.seed,
        .timeout_s = cfg.request_timeout_seconds,
        .max_concurrency = cfg.max_concurrency,
        .progress = true,
    };
    char base_url[512];
    if (o->host) {
        snprintf(base_url, sizeof base_url, "%s%s:%d", strstr(o->host, "://") ? "" : "http://", o->host, o->port);
    } else {
        char binary[4096];
        if (qs_eval_find_server_binary(o->server, binary, sizeof binary, &err) != 0)
            goto done;
        qs_eval_server_opts so = {
            .binary = binary,
            .model_dir = from_hub ? cfg.model_name : model_dir,
            .args = &cfg.server_argv,
            .env = &cfg.env,
            .startup_wait_s = cfg.startup_max_wait_seconds,
            .log_path = o->server_log,
            .stop_grace_s = o->stop_grace_s,
            .cache_only = from_hub,
        };
        fprintf(stderr, "qserve-eval: %s: starting the server (up to %g s)\n", cfg.path, cfg.startup_max_wait_seconds);
        if (qs_eval_server_start(&so, &server, &err) != 0) {
            qs_err_prefix(&err, "%s: ", cfg.path);
            goto done;
        }
        fprintf(stderr, "qserve-eval: server ready at %s: %s\n", server.base_url, server.command);
        snprintf(base_url, sizeof base_url, "%s", server.base_url);
    }
    params.base_url = base_url;

    printf("Running GSM8K evaluation: %zu questions, %d-shot%s\n", in.n, cfg.num_fewshot,
           cfg.use_chat_completions ? ", chat completions" : "");
    fflush(stdout);
    qs_eval_response *responses = calloc(in.n ? in.n : 1, sizeof *responses);
    double wall = 0;
    if (!responses) {
        qs_errf(&err, "out of memory");
        goto done;
    }
    int rc = qs_eval_run_requests(&params, in.prompts, in.n, responses, &wall, &err);
    /* Failed requests may mean the server died: give a dying process a moment to be reaped. */
    size_t failed = 0;
    for (size_t i = 0; i < in.n; i++)
        failed += responses[i].failed;
    char how[128];
    bool exited = qs_eval_server_exited(&server, how, sizeof how);
    for (int i = 0; i < 40 && failed && !exited && server.pid > 0; i++) {
        usleep(50000);
        exited = qs_eval_server_exited(&server, how, sizeof how);
    }
    if (rc == 0 && exited) {
        char what[256];
        snprintf(what, sizeof what, "%s: the server exited during the run (%s)", cfg.path, how);
        rc = qs_eval_server_log_error(&server, &err, what);
    }
    qs_eval_server_stop(&server);
    if (rc == 0) {
        qs_eval_result result;
        qs_eval_score(responses, in.labels, in.n, wall, cfg.num_fewshot, cfg.max_tokens, &result);
        qs_eval_print_result(stdout, &result);
        out->accuracy = result.accuracy;
        bool passed = !out->judged || result.accuracy >= out->needed;
        if (out->judged)
            printf("%s: accuracy %.3f %s %.3f (accuracy_threshold %.3f - tolerance %.3f)\n",
                   passed ? "PASS" : "FAIL", result.accuracy, passed ? ">=" : "<", out->needed,
                   cfg.accuracy_threshold, cfg.tolerance);
        fflush(stdout);
        if (o->save_results &&
            qs_eval_save_results(o->save_results, &result, &params, config_path ? &cfg : NULL, passed, out->needed,
                                 &err) != 0)
            rc = -1;
        else
            status = passed ? QS_EVAL_PASSED : QS_EVAL_FAILED;
        if (!passed)
            snprintf(out->reason, sizeof out->reason, "GSM8K metric too low: %.4f < %.4f - %.4f = %.4f",
                     result.accuracy, cfg.accuracy_threshold, cfg.tolerance, out->needed);
    }
    qs_eval_responses_free(responses, in.n);
    free(responses);
done:
    qs_eval_server_stop(&server);
    /* The temporary server log is kept when something went wrong, for a look afterwards. */
    if (server.log_path[0] && !o->server_log && (status == QS_EVAL_PASSED || status == QS_EVAL_FAILED))
        unlink(server.log_path);
    inputs_free(&in);
    qs_eval_config_free(&cfg);
    return finish(out, status, status == QS_EVAL_ERROR ? &err : NULL);
}
