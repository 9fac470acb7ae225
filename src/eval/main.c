/* main.c — qserve-eval, the gsm8k eval harness: command-line parsing only; the work is in the
 * rest of this folder (eval_run.c runs one config, eval_list.c a config list). See docs/evals.md. */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "eval/eval_list.h"
#include "eval/eval_run.h"
#include "eval/interrupt.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: qserve-eval CONFIG.yaml [options]\n"
            "       qserve-eval --config-list LIST.txt [options]\n"
            "       qserve-eval --host H --port P [CONFIG.yaml] [options]   (a server already running)\n\n"
            "Runs GSM8K few-shot questions through qserve's OpenAI API, the way vLLM's\n"
            "tests/evals/gsm8k harness does, and exits 0 iff accuracy >= accuracy_threshold - tolerance\n"
            "(1 below it, 2 on usage, config, model or server errors).\n\n"
            "options:\n"
            "  --data-dir DIR          folder with test.jsonl and train.jsonl\n"
            "                          (default $QSERVE_GSM8K_DIR, else ../shared/data/gsm8k)\n"
            "  --save-results FILE     write the results, request parameters and config as JSON\n"
            "  --server BIN            the qserve binary (default: next to qserve-eval, else PATH)\n"
            "  --server-log FILE       keep the server's output there (default: a /tmp file,\n"
            "                          removed after a completed run)\n"
            "  --host H --port P       evaluate a running server; nothing is started or stopped\n"
            "                          (--port alone: host 127.0.0.1)\n"
            "  --stop-grace-seconds S  SIGTERM to SIGKILL delay when stopping the server (default 8)\n"
            "  --config-list FILE      run every config listed (one YAML path per line) and tabulate\n"
            "  --skip-missing-models   a model found neither as a folder nor in the local Hugging Face\n"
            "                          cache counts as skipped instead of an error (nothing is downloaded;\n"
            "                          without it a missing hub model is downloaded, docs/cli.md)\n"
            "overrides of config values (vLLM's standalone evaluator flags):\n"
            "  --num-questions N  --num-shots N  --max-tokens N  --temperature T  --seed S\n"
            "  --max-concurrency N  --request-timeout-seconds S  --use-chat-completions  --model NAME\n");
}

static int parse_int(const char *flag, const char *v, int *out)
{
    long x;
    if (qs_arg_int(flag, v, &x) != 0)
        return -1;
    *out = (int)x;
    return 0;
}

int main(int argc, char **argv)
{
    qs_eval_options o = {0};
    const char *config = NULL, *list = NULL, *port = NULL, *v;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int r = 0;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--use-chat-completions")) {
            o.use_chat_completions = true;
        } else if (!strcmp(a, "--skip-missing-models")) {
            o.skip_missing_models = true;
        } else if ((r = qs_arg_value(argc, argv, &i, "--data-dir", &o.data_dir)) ||
                   (r = qs_arg_value(argc, argv, &i, "--save-results", &o.save_results)) ||
                   (r = qs_arg_value(argc, argv, &i, "--server-log", &o.server_log)) ||
                   (r = qs_arg_value(argc, argv, &i, "--server", &o.server)) ||
                   (r = qs_arg_value(argc, argv, &i, "--host", &o.host)) ||
                   (r = qs_arg_value(argc, argv, &i, "--port", &port)) ||
                   (r = qs_arg_value(argc, argv, &i, "--config-list", &list)) ||
                   (r = qs_arg_value(argc, argv, &i, "--model", &o.model))) {
            if (r < 0)
                return 2;
        } else if ((r = qs_arg_value(argc, argv, &i, "--num-questions", &v))) {
            if (r < 0 || parse_int(a, v, &o.num_questions) != 0)
                return 2;
            o.has_num_questions = true;
        } else if ((r = qs_arg_value(argc, argv, &i, "--num-shots", &v))) {
            if (r < 0 || parse_int(a, v, &o.num_shots) != 0)
                return 2;
            o.has_num_shots = true;
        } else if ((r = qs_arg_value(argc, argv, &i, "--max-tokens", &v))) {
            if (r < 0 || parse_int(a, v, &o.max_tokens) != 0)
                return 2;
            o.has_max_tokens = true;
        } else if ((r = qs_arg_value(argc, argv, &i, "--max-concurrency", &v))) {
            if (r < 0 || parse_int(a, v, &o.max_concurrency) != 0)
                return 2;
            o.has_max_concurrency = true;
        } else if ((r = qs_arg_value(argc, argv, &i, "--temperature", &v))) {
            if (r < 0 || qs_arg_double(a, v, &o.temperature) != 0)
                return 2;
            o.has_temperature = true;
        } else if ((r = qs_arg_value(argc, argv, &i, "--request-timeout-seconds", &v))) {
            if (r < 0 || qs_arg_double(a, v, &o.request_timeout_seconds) != 0)
                return 2;
            o.has_request_timeout = true;
        } else if ((r = qs_arg_value(argc, argv, &i, "--stop-grace-seconds", &v))) {
            if (r < 0 || qs_arg_double(a, v, &o.stop_grace_s) != 0)
                return 2;
            if (o.stop_grace_s <= 0) {
                fprintf(stderr, "error: --stop-grace-seconds must be greater than 0\n");
                return 2;
            }
        } else if ((r = qs_arg_value(argc, argv, &i, "--seed", &v))) {
            long s;
            if (r < 0 || qs_arg_int(a, v, &s) != 0)
                return 2;
            o.seed = s;
            o.has_seed = true;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "error: unknown option '%s'\n", a);
            usage(stderr);
            return 2;
        } else if (!config) {
            config = a;
        } else {
            fprintf(stderr, "error: more than one config given ('%s' and '%s'); use --config-list\n", config, a);
            return 2;
        }
    }
    if (o.host && !port) {
        fprintf(stderr, "error: --host needs --port\n");
        return 2;
    }
    if (port && !o.host)
        o.host = "127.0.0.1"; /* vLLM's evaluator default host */
    if (port) {
        if (parse_int("--port", port, &o.port) != 0)
            return 2;
        if (o.port < 1 || o.port > 65535) {
            fprintf(stderr, "error: --port: %d is not a TCP port\n", o.port);
            return 2;
        }
    }
    if (list && config) {
        fprintf(stderr, "error: give either CONFIG.yaml or --config-list, not both\n");
        return 2;
    }
    if (!config && !list && !o.host) {
        usage(stderr);
        return 2;
    }
    if ((o.has_num_questions && o.num_questions < 0) || (o.has_num_shots && o.num_shots < 0) ||
        (o.has_max_tokens && o.max_tokens < 1) || (o.has_max_concurrency && o.max_concurrency < 1) ||
        (o.has_request_timeout && o.request_timeout_seconds <= 0) || (o.has_temperature && o.temperature < 0)) {
        fprintf(stderr, "error: an override is out of range (questions/shots >= 0, max tokens and concurrency >= 1, "
                        "timeout > 0, temperature >= 0)\n");
        return 2;
    }
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0) {
        fprintf(stderr, "error: libcurl initialisation failed\n");
        return 2;
    }
    qs_eval_install_signal_handlers();
    int code;
    if (list) {
        code = qs_eval_run_list(list, &o, stdout);
    } else {
        qs_eval_outcome out;
        qs_eval_status s = qs_eval_run(config, &o, &out);
        code = s == QS_EVAL_PASSED ? 0 : s == QS_EVAL_FAILED ? 1 : 2;
    }
    curl_global_cleanup();
    return code;
}
