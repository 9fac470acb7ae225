/* config_args.c — fills struct qs_config from, in rising priority: defaults and the environment,
 * the YAML file of --config, the command line. Flags are looked up in the option table
 * (config_options.c); an unknown flag is an error with close matches or the list of flags.
 * Within the command line, --kernel-config is applied before --linear-backend / --moe-backend /
 * --batch-invariant so an explicit flag overrides the JSON (as in vLLM). The result is validated
 * as a whole at the end (ranges, tensor parallelism, backend names). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "registry/registry.h"

void qs_config_defaults(qs_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->api_key = "";
    snprintf(cfg->host, sizeof cfg->host, "0.0.0.0");
    cfg->port = 8000;
    cfg->max_num_seqs = 0;
    cfg->max_num_queued_reqs = 1024;
    cfg->max_connections = 4096;
    cfg->max_connections_per_client = 256;
    cfg->client_timeout = 10;
    cfg->shutdown_timeout = 5;
    cfg->gpu_memory_utilization = 0.9;
    cfg->device = QS_DEVICE_AUTO;
    cfg->tensor_parallel_size = 1;
    cfg->pipeline_parallel_size = 1;
    cfg->enable_prefix_caching = true;
    snprintf(cfg->kv_cache_dtype, sizeof cfg->kv_cache_dtype, "auto");
    snprintf(cfg->generation_config, sizeof cfg->generation_config, "auto");
    cfg->max_logprobs = 20;
    snprintf(cfg->response_role, sizeof cfg->response_role, "assistant");
    snprintf(cfg->allowed_origins, sizeof cfg->allowed_origins, "[\"*\"]");
    snprintf(cfg->allowed_methods, sizeof cfg->allowed_methods, "[\"*\"]");
    snprintf(cfg->allowed_headers, sizeof cfg->allowed_headers, "[\"*\"]");
    qs_kernel_config_defaults(&cfg->kernels);
}

int qs_config_max_num_seqs(const qs_config *cfg, bool on_cuda)
{
    if (cfg->max_num_seqs > 0)
        return cfg->max_num_seqs;
    return on_cuda ? 256 : 16;
}

/* One pass over argv. apply_kernel_config selects which options this pass applies: the
 * --kernel-config ones (pass 1) or all the others and the positional MODEL (pass 2). */
static int cli_pass(int argc, char **argv, qs_config *cfg, bool kernel_config_pass, qs_err *err)
{
    int positional = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            cfg->help_requested = true;
            continue;
        }
        if (a[0] != '-' || !a[1]) {
            if (kernel_config_pass)
                continue;
            if (positional++)
                return qs_errf(err, "unexpected argument '%s' (MODEL is already '%s')", a, cfg->model_dir);
            if (strlen(a) >= sizeof cfg->model_dir)
                return qs_errf(err, "MODEL '%.40s...' is too long", a);
            snprintf(cfg->model_dir, sizeof cfg->model_dir, "%s", a);
            continue;
        }
        const char *alias = qs_config_short_alias(a);
        if (a[1] != '-' && !alias) {
            char hint[1024];
            qs_config_suggest(a + 1, hint, sizeof hint);
            return qs_errf(err, "unknown option '%s'; %s", a, hint);
        }
        char name[96];
        const char *eq = strchr(a, '=');
        if (alias) {
            snprintf(name, sizeof name, "%s", alias);
        } else {
            snprintf(name, sizeof name, "%s", a + 2);
            if (eq && (size_t)(eq - (a + 2)) < sizeof name)
                name[eq - (a + 2)] = '\0';
        }
        const qs_option *opt = qs_config_find_option(name);
        if (!opt) {
            char hint[1024];
            qs_config_suggest(name, hint, sizeof hint);
            return qs_errf(err, "unknown option '--%s'; %s", name, hint);
        }
        const char *value = eq ? eq + 1 : NULL;
        char names[QS_MAX_SERVED_NAMES * 256 + 16];
        if (!value && opt->type == QS_OPT_NAMES) {
            /* as argparse's nargs="+": every following word up to the next flag */
            if (i + 1 >= argc || argv[i + 1][0] == '-')
                return qs_errf(err, "--%s needs a value (%s)", opt->name, opt->metavar);
            size_t len = 0;
            names[0] = '\0';
            while (i + 1 < argc && argv[i + 1][0] != '-' && len < sizeof names)
                len += (size_t)snprintf(names + len, sizeof names - len, "%s%s", len ? "\n" : "", argv[++i]);
            value = names;
        }
        if (!value && !qs_option_is_bare(opt)) {
            if (i + 1 >= argc)
                return qs_errf(err, "--%s needs a value (%s)", opt->name, opt->metavar ? opt->metavar : "VALUE");
            value = argv[++i];
        }
        if (opt->type == QS_OPT_CONFIG_FILE || (opt->type == QS_OPT_KERNEL_CONFIG) != kernel_config_pass)
            continue;
        char source[128];
        snprintf(source, sizeof source, "--%s", opt->name);
        if (qs_config_set_option(cfg, opt, value, source, err))
            return -1;
    }
    return 0;
}

/* Finds --config FILE (or --config=FILE) in argv; NULL if absent. */
static int find_config_file(int argc, char **argv, const char **path, qs_err *err)
{
    *path = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--config")) {
            if (i + 1 >= argc)
                return qs_errf(err, "--config needs a value (FILE.yaml)");
            *path = argv[++i];
        } else if (!strncmp(a, "--config=", 9)) {
            *path = a + 9;
        } else if (a[0] == '-' && a[1] == '-') {
            /* Skip the value of a valued option so `--served-model-name --config` is not misread. */
            const qs_option *opt = qs_config_find_option(a);
            if (opt && !strchr(a, '=') && opt->type == QS_OPT_NAMES)
                while (i + 1 < argc && argv[i + 1][0] != '-')
                    i++;
            else if (opt && !strchr(a, '=') && !qs_option_is_bare(opt))
                i++;
        } else if (qs_config_short_alias(a) && !strchr(a, '=')) {
            i++;
        }
    }
    return 0;
}

static int validate(qs_config *cfg, qs_err *err)
{
    if (cfg->pipeline_parallel_size != 1)
        return qs_errf(err, "--pipeline-parallel-size %d: pipeline parallelism is not implemented; use "
                            "--tensor-parallel-size to split a model over several ranks",
                       cfg->pipeline_parallel_size);
    if (cfg->enable_expert_parallel && cfg->tensor_parallel_size < 2)
        return qs_errf(err, "--enable-expert-parallel needs --tensor-parallel-size > 1 (the ranks to spread the "
                            "experts over)");
    if (cfg->tensor_parallel_size > 256)
        return qs_errf(err, "--tensor-parallel-size: at most 256, got %d", cfg->tensor_parallel_size);
    if (cfg->tensor_parallel_size < 1)
        return qs_errf(err, "--tensor-parallel-size: must be at least 1, got %d", cfg->tensor_parallel_size);
    if (cfg->port < 0 || cfg->port > 65535)
        return qs_errf(err, "--port: %d is not a TCP port (0-65535)", cfg->port);
    if (cfg->max_model_len < 0)
        return qs_errf(err, "--max-model-len: must be positive, got %d", cfg->max_model_len);
    if (cfg->max_num_seqs < 0)
        return qs_errf(err, "--max-num-seqs: must be positive, got %d", cfg->max_num_seqs);
    if (cfg->max_num_batched_tokens < 0)
        return qs_errf(err, "--max-num-batched-tokens: must be positive, got %d", cfg->max_num_batched_tokens);
    if (cfg->max_num_queued_reqs < 1)
        return qs_errf(err, "--max-num-queued-reqs: must be at least 1, got %d", cfg->max_num_queued_reqs);
    if (!(cfg->gpu_memory_utilization > 0 && cfg->gpu_memory_utilization <= 1))
        return qs_errf(err, "--gpu-memory-utilization: must be in (0, 1], got %g", cfg->gpu_memory_utilization);
    if (cfg->metrics_require_key && !cfg->api_key[0])
        return qs_errf(err, "--metrics-require-key needs an API key (--api-key KEY or QSERVE_API_KEY)");
    if (cfg->max_connections < 1)
        return qs_errf(err, "--max-connections: must be at least 1, got %d", cfg->max_connections);
    if (cfg->max_connections_per_client < 1)
        return qs_errf(err, "--max-connections-per-client: must be at least 1, got %d", cfg->max_connections_per_client);
    if (cfg->client_timeout < 1)
        return qs_errf(err, "--client-timeout: must be at least 1 second, got %d", cfg->client_timeout);
    if (!(cfg->shutdown_timeout >= 0 && cfg->shutdown_timeout <= 86400))
        return qs_errf(err, "--shutdown-timeout: must be in [0, 86400] seconds, got %g", cfg->shutdown_timeout);
    if (cfg->threads < 0)
        return qs_errf(err, "--threads: must be 0 (every core) or more, got %d", cfg->threads);
    if (cfg->max_num_batched_tokens > 0 && cfg->max_num_batched_tokens < cfg->max_num_seqs)
        return qs_errf(err, "--max-num-batched-tokens (%d) must be at least --max-num-seqs (%d)",
                       cfg->max_num_batched_tokens, cfg->max_num_seqs);
    if (cfg->enable_auto_tool_choice && !cfg->tool_call_parser[0])
        return qs_errf(err, "--enable-auto-tool-choice needs --tool-call-parser (hermes, llama3_json, mistral, pythonic)");
    if (qs_registry_check_kernel_config(&cfg->kernels, err))
        return -1;
    if (!cfg->help_requested && !cfg->model_dir[0])
        return qs_errf(err, "missing MODEL (usage: qserve serve MODEL [options]; see --help)%s",
                       cfg->n_served_model_names > 1
                           ? "; --served-model-name takes every word up to the next flag, so put MODEL first"
                           : "");
    if (cfg->max_logprobs < 0 || cfg->max_logprobs > QS_CONFIG_MAX_LOGPROBS)
        return qs_errf(err, "--max-logprobs: must be in [0, %d] (qserve reports at most %d logprobs a token), got %d",
                       QS_CONFIG_MAX_LOGPROBS, QS_CONFIG_MAX_LOGPROBS, cfg->max_logprobs);
    if (!cfg->response_role[0])
        return qs_errf(err, "--response-role: must not be empty");
    if (cfg->root_path[0] && (cfg->root_path[0] != '/' || strchr(cfg->root_path, '?')))
        return qs_errf(err, "--root-path: '%s' must be a path starting with '/'", cfg->root_path);
    const struct {
        const char *flag, *value;
    } lists[] = {{"--allowed-origins", cfg->allowed_origins},
                 {"--allowed-methods", cfg->allowed_methods},
                 {"--allowed-headers", cfg->allowed_headers}};
    for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++)
        if (qs_config_check_string_list(lists[i].flag, lists[i].value, err))
            return -1;
    if (cfg->override_generation_config[0] && qs_config_check_json_object("--override-generation-config",
                                                                          cfg->override_generation_config, err))
        return -1;
    if (!cfg->generation_config[0])
        return qs_errf(err, "--generation-config: expected auto, vllm or a folder");
    if (!cfg->served_model_name[0])
        snprintf(cfg->served_model_name, sizeof cfg->served_model_name, "%s", cfg->model_dir);
    if (cfg->n_served_model_names == 0) {
        snprintf(cfg->served_model_names[0], sizeof cfg->served_model_names[0], "%s", cfg->served_model_name);
        cfg->n_served_model_names = 1;
    }
    return 0;
}

int qs_config_parse_args(int argc, char **argv, qs_config *cfg, qs_err *err)
{
    qs_config_defaults(cfg);
    const char *key = getenv("QSERVE_API_KEY");
    if (key && *key) {
        if (!(cfg->api_key = qs_config_intern(key)))
            return qs_errf(err, "QSERVE_API_KEY: out of memory");
    }
    if (qs_kernel_config_apply_env(&cfg->kernels, err))
        return -1;
    const char *yaml = NULL;
    if (find_config_file(argc, argv, &yaml, err))
        return -1;
    if (yaml) {
        if (qs_config_load_yaml(yaml, cfg, err))
            return -1;
        snprintf(cfg->config_file, sizeof cfg->config_file, "%s", yaml);
    }
    if (cli_pass(argc, argv, cfg, true, err) || cli_pass(argc, argv, cfg, false, err))
        return -1;
    return validate(cfg, err);
}
