/* eval_config.h — one gsm8k eval config: the YAML schema of vLLM's tests/evals/gsm8k/configs
 * (reference/vllm-kernel-selection-and-gsm8k.md §d.2), read with libyaml. Required keys:
 * model_name, accuracy_threshold, num_questions, num_fewshot. A wrong type, a bad value or a
 * missing required key is an error naming the key, the file and the line; an unknown key is a
 * warning (collected in `warnings`). model_name may use ${VAR} and ${VAR:-default}. */
#ifndef QS_EVAL_EVAL_CONFIG_H
#define QS_EVAL_EVAL_CONFIG_H

#include <stdbool.h>

#include "eval/strlist.h"
#include "util/error.h"

typedef struct qs_eval_config {
    char path[1024];                 /* the YAML file it came from */
    char *model_name;                /* as written, ${VAR} expanded */
    double accuracy_threshold;
    int num_questions;               /* capped at the test-set size when run */
    int num_fewshot;
    char *server_args;               /* raw text ("" when absent) */
    qs_eval_strlist server_argv;     /* server_args split like shlex.split */
    qs_eval_strlist env;             /* "KEY=VALUE" pairs for the server */
    double tolerance;                /* 0.08 */
    double startup_max_wait_seconds; /* 1200 */
    int max_tokens;                  /* 256 */
    double temperature;              /* 0.0 */
    long long seed;                  /* 42 */
    double request_timeout_seconds;  /* 600 */
    bool use_chat_completions;       /* false */
    int max_concurrency;             /* 0 = not set (then 100, aiohttp's default connector limit) */
    char *gen_prefix;                /* "" */
    bool has_min_acceptance_length;  /* speculative-decoding check: read, reported as not applicable */
    double min_acceptance_length;
    double rocm_request_timeout_seconds; /* read for compatibility, unused (no ROCm) */
    char warnings[2048];             /* one line per unknown key / ignored setting, "" if none */
} qs_eval_config;

/* Defaults of every optional key (no model yet). */
void qs_eval_config_defaults(qs_eval_config *cfg);
/* Parses YAML text; `path` names it in messages. */
int qs_eval_config_parse(const char *yaml_text, const char *path, qs_eval_config *cfg, qs_err *err);
int qs_eval_config_load(const char *path, qs_eval_config *cfg, qs_err *err);
void qs_eval_config_free(qs_eval_config *cfg);

/* Expands ${VAR} and ${VAR:-default} from the environment; an unset ${VAR} without a default
 * is an error naming it. Returns a malloc'd string or NULL. */
char *qs_eval_expand_env(const char *s, qs_err *err);

#endif
