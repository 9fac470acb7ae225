/* eval_run.h — one whole eval: config -> model lookup -> GSM8K prompts -> server start -> requests
 * -> score -> report, stopping the server on every path. qserve-eval's main is a thin CLI around
 * it; --config-list calls it once per config and tabulates the outcomes. */
#ifndef QS_EVAL_EVAL_RUN_H
#define QS_EVAL_EVAL_RUN_H

#include <stdbool.h>

#include "eval/eval_config.h"
#include "util/error.h"

typedef struct qs_eval_options {
    const char *data_dir;       /* --data-dir, NULL = $QSERVE_GSM8K_DIR or ../shared/data/gsm8k */
    const char *save_results;   /* --save-results FILE */
    const char *server;         /* --server BIN */
    const char *server_log;     /* --server-log FILE (kept); NULL = temporary, removed after a success */
    const char *host;           /* --host: evaluate a running server, start nothing */
    int port;                   /* --port, with host */
    double stop_grace_s;        /* SIGTERM -> SIGKILL; 0 = 8 s */
    bool skip_missing_models;   /* --skip-missing-models: a model not found locally is "skipped" */
    /* Command-line overrides of config values (standalone-evaluator flags); has_* says given. */
    bool has_num_questions, has_num_shots, has_max_tokens, has_temperature, has_seed, has_max_concurrency,
        has_request_timeout, use_chat_completions;
    int num_questions, num_shots, max_tokens, max_concurrency;
    double temperature, request_timeout_seconds;
    long long seed;
    const char *model;          /* --model: sent with chat requests */
} qs_eval_options;

typedef enum { QS_EVAL_PASSED, QS_EVAL_FAILED, QS_EVAL_SKIPPED, QS_EVAL_ERROR } qs_eval_status;

typedef struct qs_eval_outcome {
    qs_eval_status status;
    bool judged;                /* a threshold applied (a config was given) */
    double accuracy, needed;    /* needed = accuracy_threshold - tolerance */
    char reason[QS_ERR_MSG_MAX]; /* skipped / error: why */
} qs_eval_outcome;

/* config_path may be NULL only with o->host (standalone run with defaults and overrides). */
qs_eval_status qs_eval_run(const char *config_path, const qs_eval_options *o, qs_eval_outcome *out);
const char *qs_eval_status_name(qs_eval_status s);

#endif
