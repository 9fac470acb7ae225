/* config.h — everything a user can set: serve flags, backend choices, sampling defaults. One
 * struct qs_config is filled from, in rising priority: built-in defaults, the YAML file named by
 * --config, the command line. Names are normalised (lowercase, '-' -> '_'); an unknown flag, YAML
 * key or value is an error naming it (and, for YAML, the line and file) and listing valid ones. */
#ifndef QS_CONFIG_CONFIG_H
#define QS_CONFIG_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "core/scheme.h"
#include "device/device.h" /* qs_device_choice */
#include "registry/kernel_choice.h"
#include "util/error.h"
#include "util/names.h"

#define QS_MAX_SERVED_NAMES 8
#define QS_CHAT_TEMPLATE_ARG_MAX 32768 /* --chat-template: a path or an inline template */
#define QS_JSON_ARG_MAX 4096           /* --override-generation-config, --allowed-origins, ... */
#define QS_CONFIG_MAX_LOGPROBS 20      /* the most --max-logprobs can be: the sampler reports top-20 */

typedef struct qs_config {
    char model_dir[1024];          /* a folder or a hub repo id as typed; a folder once resolved (src/hub) */
    char served_model_name[256];   /* the first --served-model-name (the one responses report); default: model_dir as given */
    char served_model_names[QS_MAX_SERVED_NAMES][256]; /* every name `model` may give; [0] == served_model_name */
    int n_served_model_names;      /* 0 until set; validate() makes it at least 1 */
    char revision[256];            /* hub revision of the model ("" = main) */
    char download_dir[1024];       /* Hugging Face cache root ("" = the default cache) */
    char tokenizer[1024];          /* tokenizer folder or repo id ("" = the model's) */
    char tokenizer_revision[256];  /* hub revision of --tokenizer ("" = main) */
    bool offline;                  /* cache only (also HF_HUB_OFFLINE=1) */
    char host[256];                /* default "0.0.0.0" */
    int port;                      /* default 8000 */
    int max_model_len;             /* 0 = from the model config */
    int max_num_seqs;              /* 0 = auto: 256 on CUDA, 16 on CPU (qs_config_max_num_seqs) */
    int max_num_batched_tokens;    /* 0 = auto */
    int max_num_queued_reqs;       /* default 1024 */
    double gpu_memory_utilization; /* default 0.9 */
    size_t kv_cache_memory;        /* bytes; 0 = derive from gpu_memory_utilization / CPU default */
    const char *api_key;           /* --api-key, YAML or QSERVE_API_KEY, any length (qs_config_intern);
                                    * "" = open; never NULL after qs_config_defaults */
    bool metrics_require_key;      /* /metrics needs the key too */
    int max_connections;           /* default 4096, fitted under the open-file limit */
    int max_connections_per_client; /* per client address, default 256 */
    int client_timeout;            /* seconds a connection has to send a whole request, default 10 */
    double shutdown_timeout;       /* seconds running requests get on SIGTERM/SIGINT, default 5 */
    long long seed;                /* default 0 */
    qs_device_choice device;
    char quantization[32];         /* "" or "fp8" (online quantization at load) */
    bool no_fuse_projections;      /* keep q/k/v and gate/up separate (also QSERVE_NO_FUSE=1) */
    bool enforce_eager;            /* no decode-step CUDA graphs (as QSERVE_CUDA_GRAPHS=0) */
    bool enable_prefix_caching;    /* default true; --no-enable-prefix-caching turns it off */
    char kv_cache_dtype[16];       /* "auto" (default), "bf16", "fp8" or "fp8_e4m3" */
    int threads;                   /* CPU threads; 0 = all cores */
    int tensor_parallel_size;      /* ranks the model is split over (docs/parallel.md); -tp N too */
    int pipeline_parallel_size;    /* only 1: pipeline parallelism is refused */
    bool enable_expert_parallel;   /* under tp: whole experts per rank (docs/parallel.md) */
    char chat_template[QS_CHAT_TEMPLATE_ARG_MAX]; /* --chat-template: a file, or the template inline ("" = the tokenizer's) */
    char generation_config[1024];  /* "auto" (default: the model folder's generation_config.json), "vllm", or a folder */
    char override_generation_config[QS_JSON_ARG_MAX]; /* JSON object over the generation config's sampling defaults */
    int max_logprobs;              /* requests asking for more logprobs get 400; default 20 */
    char response_role[64];        /* role of chat responses when add_generation_prompt (default "assistant") */
    char allowed_origins[QS_JSON_ARG_MAX]; /* CORS: JSON list, default ["*"] */
    char allowed_methods[QS_JSON_ARG_MAX]; /* CORS: JSON list, default ["*"] */
    char allowed_headers[QS_JSON_ARG_MAX]; /* CORS: JSON list, default ["*"] */
    bool allow_credentials;        /* CORS: Access-Control-Allow-Credentials */
    char root_path[256];           /* path prefix a proxy puts before every route ("" = none) */
    bool enable_log_requests;      /* log each request's parameters and prompt (bounded) */
    bool disable_log_stats;        /* no periodic engine throughput line */
    bool enable_auto_tool_choice;  /* tool_choice "auto" is served (needs tool_call_parser) */
    char tool_call_parser[32];     /* "" or hermes|llama3_json|mistral|pythonic (src/server/tool_parser.h) */
    char reasoning_parser[32];     /* "" or qwen3|deepseek_r1 */
    qs_kernel_config kernels;
    char config_file[1024];        /* the --config FILE.yaml that was read, "" if none */
    bool help_requested;           /* --help / -h was given: print qs_config_print_help and exit 0 */
} qs_config;

void qs_config_defaults(qs_config *cfg);
/* A copy of s that lives until the process exits: string fields without a length cap (the API key)
 * point at one, so a qs_config stays a plain value that can be copied and needs no free. NULL when
 * out of memory. */
const char *qs_config_intern(const char *s);
/* max_num_seqs, with 0 resolved for the platform the engine runs on (on_cuda). */
int qs_config_max_num_seqs(const qs_config *cfg, bool on_cuda);
/* Applies the kernel environment: QSERVE_DISABLED_KERNELS=a,b (added to disabled_kernels) and
 * QSERVE_BATCH_INVARIANT=1. qs_config_parse_args calls it, and reads QSERVE_API_KEY itself. */
int qs_kernel_config_apply_env(qs_kernel_config *kc, qs_err *err);
/* Parses serve-style argv (argv[0] is the command name and is skipped; the first non-flag
 * argument is MODEL). Layers, in rising priority: defaults and the environment, the YAML of
 * --config FILE.yaml, the CLI. Within a layer --kernel-config is applied before the individual
 * --linear-backend / --moe-backend / --batch-invariant flags, which override it. Ends by
 * validating every value (backend names against the registry, ranges, tensor parallelism). */
int qs_config_parse_args(int argc, char **argv, qs_config *cfg, qs_err *err);

/* `qserve serve --help`: every option of the table (config_options.c) with its help text. */
void qs_config_print_help(FILE *out);

/* --- The option table (config_options.c): one row per serve flag, also the YAML keys. --- */
typedef enum {
    QS_OPT_STRING,        /* char[size] */
    QS_OPT_INTERNED,      /* const char *, any length, kept by qs_config_intern */
    QS_OPT_QUANTIZATION,  /* char[size]: "fp8" or "" ("none") */
    QS_OPT_INT,           /* int */
    QS_OPT_LLONG,         /* long long */
    QS_OPT_DOUBLE,        /* double */
    QS_OPT_BYTES,         /* size_t: "4GiB", "512M", "1073741824" */
    QS_OPT_BOOL,          /* bool: a bare flag, or =true/false/1/0/yes/no */
    QS_OPT_BOOL_OFF,      /* bool, negated: the bare flag (or =true) sets it false (--no-enable-...) */
    QS_OPT_KV_DTYPE,      /* char[size]: auto|bf16|fp8|fp8_e4m3, normalised */
    QS_OPT_DEVICE,        /* qs_device_choice: auto|cpu|cuda */
    QS_OPT_BACKEND,       /* char[QS_NAME_MAX], normalised kernel/backend name */
    QS_OPT_NAME_LIST,     /* kernel names "a,b" appended to kernels.disabled_kernels */
    QS_OPT_KERNEL_CONFIG, /* JSON object merged into kernels (qs_kernel_config_apply_json) */
    QS_OPT_CONFIG_FILE,   /* --config FILE.yaml */
    QS_OPT_NAMES,         /* served-model-name: one or more names (argv: the following words; YAML: a list) */
    QS_OPT_LOG_LEVEL,     /* uvicorn-log-level: sets qserve's log level */
    QS_OPT_ACCEPTED,      /* vLLM flag whose value qserve only has one way (or a few): metavar lists them
                             ("auto|bfloat16"); any other value stops start-up naming what qserve does */
    QS_OPT_ACCEPTED_FLAG  /* vLLM bare flag that only states what qserve always does; =false stops start-up */
} qs_opt_type;

typedef struct qs_option {
    const char *name;     /* "max-model-len" (YAML key: max-model-len or max_model_len) */
    qs_opt_type type;
    size_t offset;        /* field offset in qs_config (unused for ignored/config-file types) */
    size_t size;          /* field size, for strings */
    const char *metavar;  /* "N", "HOST", ... */
    const char *help;
} qs_option;

/* True for options written without a value (--flag), false for those that take one. */
bool qs_option_is_bare(const qs_option *opt);
/* -tp is vLLM's short name for --tensor-parallel-size: the long name of a short alias, or NULL. */
const char *qs_config_short_alias(const char *arg);

/* The whole table, in --help order. */
const qs_option *qs_config_options(size_t *count);
/* Finds an option by name; accepts "max-model-len", "max_model_len", "--max-model-len". */
const qs_option *qs_config_find_option(const char *name);
/* Sets one option from its textual value (source names where it came from for messages, e.g.
 * "--port" or "serve.yaml:3: port"). value is NULL for a bare boolean flag. */
int qs_config_set_option(qs_config *cfg, const qs_option *opt, const char *value, const char *source,
                         qs_err *err);
/* Writes "did you mean --x, --y?" or the full list of flags into buf for an unknown flag. */
void qs_config_suggest(const char *unknown, char *buf, size_t cap);

/* --- YAML (config_yaml.c): a mapping whose keys are option names; kernel_config may be a nested
 * mapping with the --kernel-config keys. Unknown keys and wrong types name the key, line, file. */
int qs_config_load_yaml(const char *path, qs_config *cfg, qs_err *err);

/* --- Kernel config (kernel_config.c) --- */
/* Merges a JSON object {"linear_backend": .., "moe_backend": .., "linear_backend_per_quant":
 * {scheme: backend}, "batch_invariant": bool, "disabled_kernels": [..]} into kc. Unknown keys,
 * unknown schemes and wrong types are errors naming them. */
int qs_kernel_config_apply_json(qs_kernel_config *kc, const char *json, qs_err *err);
/* One kernel_config key from text (YAML / JSON strings). key: linear_backend, moe_backend,
 * batch_invariant, disabled_kernels. */
int qs_kernel_config_set(qs_kernel_config *kc, const char *key, const char *value, qs_err *err);
/* linear_backend_per_quant[scheme] = backend; an unknown scheme is an error listing the schemes. */
int qs_kernel_config_set_per_quant(qs_kernel_config *kc, const char *scheme, const char *backend, qs_err *err);
/* Adds kernel names from "a,b,c" (normalised, duplicates dropped) to disabled_kernels. */
int qs_kernel_config_add_disabled(qs_kernel_config *kc, const char *list, const char *source, qs_err *err);

/* --- Small parsers (config_values.c) --- */
/* "4GiB", "512M", "1.5g", "1073741824" -> bytes. Suffixes K, M, G, T (optionally with i and/or B,
 * any case) are powers of 1024. */
int qs_parse_bytes(const char *s, size_t *out);
/* "true/false/1/0/yes/no/on/off" (any case) -> bool; -1 if none of those. */
int qs_parse_bool(const char *s, bool *out);
const char *qs_device_choice_name(qs_device_choice d);
int qs_device_choice_from_name(const char *s, qs_device_choice *out); /* -1 if unknown */
/* JSON text that must be a list of strings (--allowed-origins ...) / an object; errors name flag. */
int qs_config_check_string_list(const char *flag, const char *json, qs_err *err);
int qs_config_check_json_object(const char *flag, const char *json, qs_err *err);

#endif
