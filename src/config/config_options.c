/* config_options.c — the one table of serve options. Each row names a flag as vLLM users type it,
 * its type, the qs_config field it fills and its help. The CLI parser, the YAML loader, --help and
 * docs/cli.md all come from this table, so a flag cannot exist in one place and not another. */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config/config.h"
#include "registry/registry.h"
#include "util/log.h"

#define F(field) offsetof(qs_config, field), sizeof(((qs_config *)0)->field)
#define NOF 0, 0

static const qs_option OPTIONS[] = {
    {"config", QS_OPT_CONFIG_FILE, NOF, "FILE.yaml",
     "read options from a YAML file (keys are these flag names); flags on the command line override it"},
    {"model", QS_OPT_STRING, F(model_dir), "MODEL",
     "model folder or Hugging Face repo id ORG/NAME (same as the positional MODEL)"},
    {"revision", QS_OPT_STRING, F(revision), "REV",
     "the model's revision on the Hugging Face hub: branch, tag or commit (default main)"},
    {"download-dir", QS_OPT_STRING, F(download_dir), "DIR",
     "Hugging Face cache folder to read models from and download them into (default $HF_HUB_CACHE, "
     "$HF_HOME/hub or ~/.cache/huggingface/hub)"},
    {"tokenizer", QS_OPT_STRING, F(tokenizer), "NAME|DIR",
     "tokenizer (and chat template) from this folder or hub repo instead of the model's"},
    {"tokenizer-revision", QS_OPT_STRING, F(tokenizer_revision), "REV",
     "revision of --tokenizer on the hub (default main)"},
    {"offline", QS_OPT_BOOL, F(offline), NULL,
     "use only the Hugging Face cache, never the network (or set HF_HUB_OFFLINE=1)"},
    {"host", QS_OPT_STRING, F(host), "HOST", "address to listen on (default 0.0.0.0)"},
    {"port", QS_OPT_INT, F(port), "PORT", "port to listen on (default 8000)"},
    {"served-model-name", QS_OPT_NAMES, F(served_model_names), "NAME [NAME...]",
     "model names in the API: requests may give any of them, /v1/models lists them all, responses report the "
     "first (default: MODEL as given, e.g. ORG/NAME)"},
    {"api-key", QS_OPT_INTERNED, F(api_key), "KEY",
     "require 'Authorization: Bearer KEY' on /v1 requests, /tokenize and /detokenize (or set QSERVE_API_KEY)"},
    {"metrics-require-key", QS_OPT_BOOL, F(metrics_require_key), NULL,
     "with --api-key, /metrics needs the key too (default: /metrics is open)"},
    {"max-connections", QS_OPT_INT, F(max_connections), "N",
     "open connections at most, lowered to fit the open-file limit (default 4096)"},
    {"max-connections-per-client", QS_OPT_INT, F(max_connections_per_client), "N",
     "open connections at most from one client address; more are refused at once (default 256)"},
    {"client-timeout", QS_OPT_INT, F(client_timeout), "SECONDS",
     "a connection must send a complete request (headers and body) within this many seconds of opening or of "
     "its previous response, else it is closed (default 10)"},
    {"shutdown-timeout", QS_OPT_DOUBLE, F(shutdown_timeout), "SECONDS",
     "on SIGTERM/SIGINT, running requests get this long to finish before they are ended with an error "
     "(default 5; 0 = at once)"},
    {"max-model-len", QS_OPT_INT, F(max_model_len), "N", "context length limit (default: the model's)"},
    {"max-num-seqs", QS_OPT_INT, F(max_num_seqs), "N", "sequences batched together at most (default 256, CPU 16)"},
    {"max-num-batched-tokens", QS_OPT_INT, F(max_num_batched_tokens), "N",
     "tokens processed in one engine step at most (default: automatic)"},
    {"max-num-queued-reqs", QS_OPT_INT, F(max_num_queued_reqs), "N",
     "sequences waiting for a slot at most before new requests get 429 (default 1024)"},
    {"gpu-memory-utilization", QS_OPT_DOUBLE, F(gpu_memory_utilization), "FRACTION",
     "share of GPU memory for weights, activations and KV cache, in (0, 1] (default 0.9)"},
    {"kv-cache-memory", QS_OPT_BYTES, F(kv_cache_memory), "BYTES",
     "KV cache size, e.g. 4GiB, 512M or a byte count (default: from --gpu-memory-utilization on CUDA, "
     "enough for --max-num-seqs full-length sequences on CPU)"},
    {"seed", QS_OPT_LLONG, F(seed), "N", "default sampling seed (default 0)"},
    {"device", QS_OPT_DEVICE, F(device), "auto|cpu|cuda",
     "where to run: auto = CUDA GPU 0 if there is one, else CPU (default auto)"},
    {"quantization", QS_OPT_QUANTIZATION, F(quantization), "fp8",
     "quantize a BF16 checkpoint to FP8 while loading (quantized checkpoints are detected from config.json)"},
    {"threads", QS_OPT_INT, F(threads), "N", "CPU threads (default 0 = every core)"},
    {"tensor-parallel-size", QS_OPT_INT, F(tensor_parallel_size), "N",
     "ranks to split the model over (also -tp N): MPI processes on CPU, started by qserve itself or by "
     "mpirun (docs/parallel.md; default 1)"},
    {"pipeline-parallel-size", QS_OPT_INT, F(pipeline_parallel_size), "N",
     "pipeline stages; only 1 (pipeline parallelism is not implemented)"},
    {"enable-expert-parallel", QS_OPT_BOOL, F(enable_expert_parallel), NULL,
     "MoE layers keep whole experts, num_experts / N a rank, instead of splitting every expert over the "
     "--tensor-parallel-size N ranks (docs/parallel.md)"},
    {"linear-backend", QS_OPT_BACKEND, F(kernels.linear_backend), "NAME",
     "kernel for linear layers: auto, cublaslt, marlin, emulation, reference (default auto)"},
    {"moe-backend", QS_OPT_BACKEND, F(kernels.moe_backend), "NAME",
     "kernel for MoE experts: auto, cublaslt, marlin, emulation, reference (default auto)"},
    {"kernel-config", QS_OPT_KERNEL_CONFIG, F(kernels), "JSON",
     "kernel settings as JSON: linear_backend, moe_backend, linear_backend_per_quant {scheme: backend}, "
     "batch_invariant, disabled_kernels"},
    {"batch-invariant", QS_OPT_BOOL, F(kernels.batch_invariant), NULL,
     "only use kernels whose results do not depend on batching (or set QSERVE_BATCH_INVARIANT=1)"},
    {"disabled-kernels", QS_OPT_NAME_LIST, F(kernels.disabled_kernels), "A,B",
     "never use these kernels (added to QSERVE_DISABLED_KERNELS)"},
    {"enforce-eager", QS_OPT_BOOL, F(enforce_eager), NULL,
     "run every step eagerly: no decode-step CUDA graphs (same as QSERVE_CUDA_GRAPHS=0)"},
    {"enable-prefix-caching", QS_OPT_BOOL, F(enable_prefix_caching), NULL,
     "reuse the KV blocks of cached prompt prefixes across requests (default on)"},
    {"no-enable-prefix-caching", QS_OPT_BOOL_OFF, F(enable_prefix_caching), NULL,
     "turn automatic prefix caching off"},
    {"enable-auto-tool-choice", QS_OPT_BOOL, F(enable_auto_tool_choice), NULL,
     "let the model decide when to call tools (tool_choice \"auto\", the default with tools); needs "
     "--tool-call-parser"},
    {"tool-call-parser", QS_OPT_STRING, F(tool_call_parser), "hermes|llama3_json|mistral|pythonic",
     "how the model writes tool calls: hermes (Qwen2.5/Qwen3), llama3_json (Llama 3.1+/4), mistral, pythonic "
     "(Llama 4 pythonic)"},
    {"reasoning-parser", QS_OPT_STRING, F(reasoning_parser), "qwen3|deepseek_r1",
     "split <think>...</think> into message.reasoning_content (qwen3: Qwen3; deepseek_r1: DeepSeek-R1 and its "
     "distills)"},
    {"kv-cache-dtype", QS_OPT_KV_DTYPE, F(kv_cache_dtype), "auto|bf16|fp8|fp8_e4m3",
     "KV cache element type: auto = the activation type (BF16 on CUDA, F32 on CPU); fp8 = fp8_e4m3 with "
     "per-layer scales from the checkpoint (k_scale/v_scale) or 1.0, twice the blocks for the memory"},
    {"chat-template", QS_OPT_STRING, F(chat_template), "FILE|TEMPLATE",
     "chat template for /v1/chat/completions: a Jinja file, or the template itself on one line (as vLLM); "
     "default: the tokenizer's"},
    {"generation-config", QS_OPT_STRING, F(generation_config), "auto|vllm|FOLDER",
     "sampling defaults for requests that do not set them: auto = the model's generation_config.json, vllm = "
     "vLLM's neutral defaults, FOLDER = that folder's generation_config.json (default auto)"},
    {"override-generation-config", QS_OPT_STRING, F(override_generation_config), "JSON",
     "sampling defaults over --generation-config, e.g. '{\"temperature\": 0.5}' (keys: temperature, top_p, "
     "top_k, min_p, repetition_penalty, max_new_tokens)"},
    {"max-logprobs", QS_OPT_INT, F(max_logprobs), "N",
     "most logprobs a request may ask for (logprobs / top_logprobs), 0..20 (default 20); more is a 400"},
    {"response-role", QS_OPT_STRING, F(response_role), "ROLE",
     "role of chat completion messages when add_generation_prompt is true (default assistant)"},
    {"allowed-origins", QS_OPT_STRING, F(allowed_origins), "JSON",
     "CORS: origins allowed, a JSON list (default [\"*\"])"},
    {"allowed-methods", QS_OPT_STRING, F(allowed_methods), "JSON",
     "CORS: methods allowed, a JSON list (default [\"*\"])"},
    {"allowed-headers", QS_OPT_STRING, F(allowed_headers), "JSON",
     "CORS: request headers allowed, a JSON list (default [\"*\"])"},
    {"allow-credentials", QS_OPT_BOOL, F(allow_credentials), NULL, "CORS: allow credentials (default off)"},
    {"root-path", QS_OPT_STRING, F(root_path), "PATH",
     "path prefix of a proxy in front of the server: /PATH/v1/... is served as /v1/... (both work)"},
    {"enable-log-requests", QS_OPT_BOOL, F(enable_log_requests), NULL,
     "log each request: its id, sampling parameters and prompt (the first 256 characters)"},
    {"disable-log-requests", QS_OPT_BOOL_OFF, F(enable_log_requests), NULL,
     "do not log requests (the default; vLLM's older flag)"},
    {"disable-log-stats", QS_OPT_BOOL, F(disable_log_stats), NULL,
     "no periodic engine line (throughput, running and waiting sequences, KV cache use)"},
    {"uvicorn-log-level", QS_OPT_LOG_LEVEL, NOF, "LEVEL",
     "log level: debug, info, warning, error, critical or trace (as QSERVE_LOG_LEVEL)"},
    /* vLLM flags whose only meaning qserve always has: accepted with those values, refused otherwise. */
    {"trust-remote-code", QS_OPT_ACCEPTED_FLAG, NOF, NULL,
     "vLLM flag; qserve runs no code from the model repository, so there is nothing to trust"},
    {"disable-uvicorn-access-log", QS_OPT_ACCEPTED_FLAG, NOF, NULL,
     "vLLM flag; qserve writes no access log"},
    {"enable-chunked-prefill", QS_OPT_ACCEPTED_FLAG, NOF, NULL,
     "vLLM flag; chunked prefill is always on (=false is refused)"},
    {"dtype", QS_OPT_ACCEPTED, NOF, "auto|bfloat16|bf16",
     "activation type: BF16 on CUDA, F32 on the CPU reference path; other types are refused"},
    {"load-format", QS_OPT_ACCEPTED, NOF, "auto|safetensors", "weights format: safetensors only"},
    {"block-size", QS_OPT_ACCEPTED, NOF, "16", "KV-cache block size: 16 tokens only"},
    {"distributed-executor-backend", QS_OPT_ACCEPTED, NOF, "mp|uni",
     "one process drives one device (tensor parallel size 1), which either name describes"},
};
#define N_OPTIONS (sizeof OPTIONS / sizeof OPTIONS[0])

const qs_option *qs_config_options(size_t *count)
{
    *count = N_OPTIONS;
    return OPTIONS;
}

/* Compares an option name with user text where '-' and '_' are the same letter. */
static int same_name(const char *opt, const char *text)
{
    for (; *opt && *text; opt++, text++) {
        char a = *opt == '_' ? '-' : *opt, b = *text == '_' ? '-' : *text;
        if (a != b)
            return 0;
    }
    return *opt == *text;
}

const qs_option *qs_config_find_option(const char *name)
{
    if (!name)
        return NULL;
    while (*name == '-')
        name++;
    for (size_t i = 0; i < N_OPTIONS; i++)
        if (same_name(OPTIONS[i].name, name))
            return &OPTIONS[i];
    return NULL;
}

void qs_config_suggest(const char *unknown, char *buf, size_t cap)
{
    while (*unknown == '-')
        unknown++;
    char name[96];
    snprintf(name, sizeof name, "%s", unknown);
    name[strcspn(name, "=")] = '\0';
    size_t len = 0;
    int found = 0;
    buf[0] = '\0';
    /* Near misses by spelling first; only without any, names that contain one another. */
    for (int pass = 0; pass < 2 && !found; pass++)
        for (size_t i = 0; i < N_OPTIONS && len < cap; i++) {
            const char *o = OPTIONS[i].name;
            int close = pass == 0 ? qs_edit_distance(name, o) <= (strlen(name) > 10 ? (int)strlen(name) / 5 : 2)
                                  : strlen(name) >= 4 && (strstr(o, name) || strstr(name, o));
            if (close)
                len += (size_t)snprintf(buf + len, cap - len, "%s--%s", found++ ? ", " : "did you mean ", o);
        }
    if (found) {
        if (len < cap)
            snprintf(buf + len, cap - len, "?");
        return;
    }
    len = (size_t)snprintf(buf, cap, "valid flags:");
    for (size_t i = 0; i < N_OPTIONS && len < cap; i++)
        len += (size_t)snprintf(buf + len, cap - len, " --%s", OPTIONS[i].name);
}

static int parse_int(const char *source, const char *v, long long lo, long long hi, long long *out, qs_err *err)
{
    char *end;
    errno = 0;
    long long x = strtoll(v ? v : "", &end, 10);
    if (!v || errno || end == v || *end)
        return qs_errf(err, "%s: expected an integer, got '%s'", source, v ? v : "");
    if (x < lo || x > hi)
        return qs_errf(err, "%s: %lld is out of range [%lld, %lld]", source, x, lo, hi);
    *out = x;
    return 0;
}

bool qs_option_is_bare(const qs_option *opt)
{
    return opt->type == QS_OPT_BOOL || opt->type == QS_OPT_BOOL_OFF || opt->type == QS_OPT_ACCEPTED_FLAG;
}

const char *qs_config_short_alias(const char *arg)
{
    size_t n = strcspn(arg, "=");
    return n == 3 && !strncmp(arg, "-tp", 3) ? "tensor-parallel-size" : NULL;
}

/* served-model-name: names separated by newlines (the CLI joins the words after the flag, YAML
 * the items of a list); they replace whatever an earlier layer set. */
static int set_names(qs_config *cfg, const char *value, const char *source, qs_err *err)
{
    int n = 0;
    for (const char *p = value; *p;) {
        size_t len = strcspn(p, "\n");
        if (len == 0)
            return qs_errf(err, "%s: a model name must not be empty", source);
        if (n == QS_MAX_SERVED_NAMES)
            return qs_errf(err, "%s: at most %d names", source, QS_MAX_SERVED_NAMES);
        if (len >= sizeof cfg->served_model_names[0])
            return qs_errf(err, "%s: name '%.40s...' is longer than %zu characters", source, p,
                           sizeof cfg->served_model_names[0] - 1);
        memcpy(cfg->served_model_names[n], p, len);
        cfg->served_model_names[n++][len] = '\0';
        p += len;
        if (*p)
            p++;
    }
    if (n == 0)
        return qs_errf(err, "%s: needs at least one name", source);
    cfg->n_served_model_names = n;
    snprintf(cfg->served_model_name, sizeof cfg->served_model_name, "%s", cfg->served_model_names[0]);
    return 0;
}

/* vLLM's (uvicorn's) level names onto qserve's four levels. */
static int set_log_level(const char *value, const char *source, qs_err *err)
{
    static const struct {
        const char *name;
        qs_log_level level;
    } LEVELS[] = {{"trace", QS_LOG_DEBUG}, {"debug", QS_LOG_DEBUG}, {"info", QS_LOG_INFO},     {"warning", QS_LOG_WARN},
                  {"warn", QS_LOG_WARN},   {"error", QS_LOG_ERROR}, {"critical", QS_LOG_ERROR}};
    for (size_t i = 0; i < sizeof LEVELS / sizeof LEVELS[0]; i++)
        if (!strcasecmp(value, LEVELS[i].name)) {
            qs_log_set_level(LEVELS[i].level);
            return 0;
        }
    return qs_errf(err, "%s: unknown log level '%s'; expected debug, info, warning, error, critical or trace", source,
                   value);
}

static int check_accepted(const qs_option *opt, const char *value, const char *source, qs_err *err)
{
    char want[64];
    snprintf(want, sizeof want, "%s", value);
    qs_normalize_name(want);
    for (const char *p = opt->metavar; *p;) {
        size_t len = strcspn(p, "|");
        if (len == strlen(want) && !strncmp(p, want, len))
            return 0;
        p += len;
        if (*p)
            p++;
    }
    return qs_errf(err, "%s %s: qserve does not implement this value (%s; accepted: %s)", source, value, opt->help,
                   opt->metavar);
}

int qs_config_set_option(qs_config *cfg, const qs_option *opt, const char *value, const char *source, qs_err *err)
{
    char *field = (char *)cfg + opt->offset;
    if (!value && !qs_option_is_bare(opt))
        return qs_errf(err, "%s needs a value (%s)", source, opt->metavar ? opt->metavar : "VALUE");
    switch (opt->type) {
    case QS_OPT_STRING:
        if (strlen(value) >= opt->size)
            return qs_errf(err, "%s: value is longer than %zu characters", source, opt->size - 1);
        memcpy(field, value, strlen(value) + 1);
        return 0;
    case QS_OPT_INTERNED: {
        const char *copy = qs_config_intern(value);
        if (!copy)
            return qs_errf(err, "%s: out of memory", source);
        *(const char **)field = copy;
        return 0;
    }
    case QS_OPT_QUANTIZATION: {
        char q[32];
        snprintf(q, sizeof q, "%s", value);
        qs_normalize_name(q);
        if (strcmp(q, "fp8") && strcmp(q, "none") && q[0])
            return qs_errf(err,
                           "%s: unknown quantization '%s'; qserve can only quantize online to 'fp8' "
                           "(FP8 and NVFP4 checkpoints are recognised from their config.json)",
                           source, value);
        snprintf(field, opt->size, "%s", strcmp(q, "none") ? q : "");
        return 0;
    }
    case QS_OPT_INT: {
        long long x;
        if (parse_int(source, value, INT_MIN, INT_MAX, &x, err))
            return -1;
        *(int *)field = (int)x;
        return 0;
    }
    case QS_OPT_LLONG: {
        long long x;
        if (parse_int(source, value, LLONG_MIN, LLONG_MAX, &x, err))
            return -1;
        *(long long *)field = x;
        return 0;
    }
    case QS_OPT_DOUBLE: {
        char *end;
        errno = 0;
        double x = strtod(value, &end);
        if (errno || end == value || *end)
            return qs_errf(err, "%s: expected a number, got '%s'", source, value);
        *(double *)field = x;
        return 0;
    }
    case QS_OPT_BYTES:
        if (qs_parse_bytes(value, (size_t *)field))
            return qs_errf(err, "%s: expected a size such as 4GiB, 512M or 1073741824, got '%s'", source, value);
        return 0;
    case QS_OPT_BOOL:
        if (!value) {
            *(bool *)field = true;
            return 0;
        }
        if (qs_parse_bool(value, (bool *)field))
            return qs_errf(err, "%s: expected true or false, got '%s'", source, value);
        return 0;
    case QS_OPT_BOOL_OFF: {
        bool on = true;
        if (value && qs_parse_bool(value, &on))
            return qs_errf(err, "%s: expected true or false, got '%s'", source, value);
        *(bool *)field = !on;
        return 0;
    }
    case QS_OPT_KV_DTYPE: {
        char d[32];
        snprintf(d, sizeof d, "%s", value);
        qs_normalize_name(d);
        if (strcmp(d, "auto") && strcmp(d, "bf16") && strcmp(d, "fp8") && strcmp(d, "fp8_e4m3"))
            return qs_errf(err, "%s: unknown KV cache dtype '%s'; expected auto, bf16, fp8 or fp8_e4m3", source, value);
        snprintf(field, opt->size, "%s", d);
        return 0;
    }
    case QS_OPT_DEVICE:
        if (qs_device_choice_from_name(value, (qs_device_choice *)field))
            return qs_errf(err, "%s: unknown device '%s'; expected auto, cpu or cuda", source, value);
        return 0;
    case QS_OPT_BACKEND: {
        char name[QS_NAME_MAX];
        if (strlen(value) >= sizeof name)
            return qs_errf(err, "%s: backend name '%.32s...' is too long", source, value);
        snprintf(name, sizeof name, "%s", value);
        qs_normalize_name(name);
        bool moe = opt->offset == offsetof(qs_config, kernels.moe_backend);
        if (qs_registry_check_backend_name(name, moe ? QS_KIND_MOE : QS_KIND_LINEAR, source, err))
            return -1;
        memcpy(field, name, sizeof name);
        return 0;
    }
    case QS_OPT_NAME_LIST:
        return qs_kernel_config_add_disabled(&cfg->kernels, value, source, err);
    case QS_OPT_KERNEL_CONFIG:
        return qs_kernel_config_apply_json(&cfg->kernels, value, err);
    case QS_OPT_CONFIG_FILE:
        return qs_errf(err, "%s: a config file cannot name another config file", source);
    case QS_OPT_NAMES:
        return set_names(cfg, value, source, err);
    case QS_OPT_LOG_LEVEL:
        return set_log_level(value, source, err);
    case QS_OPT_ACCEPTED:
        return check_accepted(opt, value, source, err);
    case QS_OPT_ACCEPTED_FLAG: {
        bool on = true;
        if (value && qs_parse_bool(value, &on))
            return qs_errf(err, "%s: expected true or false, got '%s'", source, value);
        if (!on)
            return qs_errf(err, "%s=false: qserve does not implement that (%s)", source, opt->help);
        return 0;
    }
    }
    return qs_errf(err, "%s: unhandled option type", source);
}

void qs_config_print_help(FILE *out)
{
    fprintf(out, "usage: qserve [serve] MODEL [options]\n\n"
                 "Serves MODEL over an OpenAI-compatible HTTP API. Options come from, in rising\n"
                 "priority: defaults, the environment, --config FILE.yaml, the command line.\n"
                 "Write --flag VALUE or --flag=VALUE; names and backend values accept '-' or '_'.\n\n"
                 "options:\n");
    for (size_t i = 0; i < N_OPTIONS; i++) {
        const qs_option *o = &OPTIONS[i];
        char lhs[96];
        snprintf(lhs, sizeof lhs, "--%s%s%s", o->name, o->metavar ? " " : "", o->metavar ? o->metavar : "");
        if (strlen(lhs) > 30)
            fprintf(out, "  %s\n  %-30s %s\n", lhs, "", o->help);
        else
            fprintf(out, "  %-30s %s\n", lhs, o->help);
    }
    fprintf(out, "  %-30s %s\n", "-tp N", "same as --tensor-parallel-size N (vLLM's short name)");
    fprintf(out, "  %-30s %s\n", "-h, --help", "show this help");
    fprintf(out, "\nenvironment:\n"
                 "  QSERVE_API_KEY=KEY             same as --api-key\n"
                 "  QSERVE_DISABLED_KERNELS=A,B    never use these kernels\n"
                 "  QSERVE_BATCH_INVARIANT=1       same as --batch-invariant\n"
                 "  QSERVE_NO_FUSE=1               keep q/k/v and gate/up as separate layers (no fusion)\n"
                 "  QSERVE_SMALL_STEP_TOKENS=N     auto on CUDA: W8A8 FP8 steps of <= N tokens on marlin (default 64 on\n"
                 "                                 compute capability 9.0 with sm_90a kernels built, else 32; 0 off)\n"
                 "  QSERVE_CUDA_GRAPHS=0           CUDA: run decode steps eagerly instead of capturing them once per batch-size bucket and replaying them\n"
                 "  QSERVE_LOG_LEVEL=debug|info|warn|error\n"
                 "\nsee docs/cli.md (options, YAML format) and docs/backends.md (kernel selection).\n");
}
