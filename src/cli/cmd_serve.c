/* cmd_serve.c — `qserve serve MODEL [flags]` (also `qserve MODEL [flags]`): parse the
 * serve flags (src/config), bind the HTTP server first so /health answers 503 while loading,
 * load tokenizer, model and KV cache on a loader thread, start the engine, then wait for
 * SIGINT/SIGTERM and drain (server_drain.c: new requests 503, running ones finish for up to
 * --shutdown-timeout seconds, the rest end with an error body or event; exit 0). */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/chat_template_arg.h"
#include "cli/commands.h"
#include "cli/model_source.h"
#include "cli/tp_launch.h"
#include "parallel/launch.h"
#include "config/config.h"
#include "device/backends.h"
#include "engine/engine.h"
#include "model/kv_cache.h"
#include "engine/kv_setup.h"
#include "engine/sampling_defaults.h"
#include "model/model.h"
#include "model/model_config.h"
#include "model/model_config_load.h"
#include "server/reasoning_parser.h"
#include "model/model_tp.h"
#include "server/server.h"
#include "server/tool_parser.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"
#include "util/log.h"
#include "util/parallel.h"

#define CPU_KV_DEFAULT_BYTES ((size_t)2 << 30)

typedef struct {
    qs_config *cfg; /* model_dir becomes the resolved folder (src/hub) */
    const char *chat_template;        /* --chat-template's text, or NULL for the tokenizer's */
    const char *chat_template_origin;
    qs_sampling_defaults defaults;
    char tok_dir[1024];
    qs_server *server;
    bool failed;
} loader_args;

static void add_eos(int32_t *eos, int *n, int id)
{
    if (id < 0)
        return;
    for (int i = 0; i < *n; i++)
        if (eos[i] == id)
            return;
    if (*n < 3 * QS_MAX_EOS)
        eos[(*n)++] = id;
}

/* How many KV blocks to create: --kv-cache-memory when given, else enough for max_num_seqs
 * full-length sequences, bounded by a memory budget; -1 when one full-length sequence would need
 * far more than the budget. */
static int choose_kv_blocks(const qs_config *cfg, const qs_model_config *mc, const qs_device_caps *dev,
                            int max_model_len, qs_kv_dtype dtype, qs_err *err)
{
    long long per_seq = ((long long)max_model_len + QS_KV_BLOCK_SIZE - 1) / QS_KV_BLOCK_SIZE;
    if (cfg->kv_cache_memory)
        return qs_kv_cache_blocks_for_bytes_dtype(mc, dev->platform, dtype, cfg->kv_cache_memory);
    long long want = (long long)per_seq * (cfg->max_num_seqs > 0 ? cfg->max_num_seqs : 16);
    size_t budget = CPU_KV_DEFAULT_BYTES;
    if (dev->platform == QS_PLATFORM_CUDA) {
        /* As vLLM: the KV cache gets what --gpu-memory-utilization allows beyond what the weights
         * already use, less headroom for activations and kernel scratch. */
        budget = (size_t)(0.25 * cfg->gpu_memory_utilization * (double)dev->memory_bytes);
        const qs_backend *backend = qs_backend_for_platform(dev->platform);
        size_t free_b = 0, total_b = 0;
        qs_err ignored;
        if (backend && backend->mem_info(&free_b, &total_b, &ignored) == 0) {
            double allowed = cfg->gpu_memory_utilization * (double)total_b - (double)(total_b - free_b);
            double headroom = 2.0 * (1 << 30);
            budget = allowed > headroom ? (size_t)(allowed - headroom) : 0;
        }
    }
    long long cap = qs_kv_cache_blocks_for_bytes_dtype(mc, dev->platform, dtype, budget);
    if (cap < per_seq) {
        /* One full-length sequence needs far more (over 4x) than the budget: refused, as vLLM
         * does, rather than allocating what max_position_embeddings asks (2^31 positions: 256 GB). */
        if ((long long)QS_KV_BLOCK_SIZE * cap < 1 || per_seq > 4 * cap + 64)
            return qs_errf(err,
                           "max_model_len %d needs %lld KV-cache blocks for one sequence, but the KV-cache budget "
                           "(%.2f GiB) holds %lld; lower --max-model-len or set --kv-cache-memory",
                           max_model_len, per_seq, (double)budget / (1 << 30), cap);
        cap = per_seq; /* at least one full-length sequence */
    }
    return (int)(want < cap ? want : cap);
}

/* --generation-config / --override-generation-config, said in the log as vLLM says it. */
static int resolve_sampling_defaults(const qs_config *cfg, qs_sampling_defaults *d, qs_err *err)
{
    if (qs_sampling_defaults_resolve(cfg->generation_config, cfg->model_dir, cfg->override_generation_config, d, err))
        return -1;
    char desc[256];
    qs_sampling_defaults_describe(d, desc, sizeof desc);
    if (strcmp(desc, "none"))
        qs_info("default sampling parameters for requests that do not set them: %s (from %s; --generation-config "
                "vllm turns them off)",
                desc, d->source);
    else
        qs_info("default sampling parameters: vLLM's (%s)", d->source);
    return 0;
}

/* The model and its KV cache, sized the same way on every tensor-parallel rank (each holds its
 * own KV heads): *max_model_len receives the context length served. */
static int load_model_kv(const qs_config *cfg, qs_model **model_out, qs_kv_cache **kv_out, int *max_len_out,
                         qs_err *err)
{
    *model_out = NULL;
    *kv_out = NULL;
    qs_model *model = NULL;
    qs_kv_cache *kv = NULL;
    if (qs_model_load(cfg, &model, err))
        goto fail;
    const qs_model_config *mc = qs_model_get_config(model);
    const qs_device_caps *dev = qs_model_device(model);
    int max_model_len = mc->max_position_embeddings > 0 ? mc->max_position_embeddings : 2048;
    if (cfg->max_model_len > 0) {
        if (mc->max_position_embeddings > 0 && cfg->max_model_len > mc->max_position_embeddings) {
            qs_errf(err, "--max-model-len %d exceeds the model's max_position_embeddings %d", cfg->max_model_len,
                    mc->max_position_embeddings);
            goto fail;
        }
        max_model_len = cfg->max_model_len;
    }
    qs_kv_setup kvs;
    if (qs_kv_setup_resolve(cfg, mc, dev->platform, &kvs, err))
        goto fail;
    int blocks = choose_kv_blocks(cfg, mc, dev, max_model_len, kvs.dtype, err);
    if (blocks >= 0 && qs_cli_tp_agree_min(&blocks, err)) /* -tp: every rank's cache the same size */
        blocks = -1;
    int rc_kv = blocks < 0 ? -1 : qs_kv_setup_create_cache(&kvs, mc, dev->platform, blocks, &kv, err);
    qs_kv_setup_free(&kvs);
    if (rc_kv)
        goto fail;
    const char *kv_dtype = qs_kv_dtype_name(qs_kv_cache_dtype(kv), dev->platform);
    char per_elem[96] = "";
    if (qs_kv_cache_dtype(kv) == QS_KV_FP8_E4M3)
        snprintf(per_elem, sizeof per_elem, " (1 byte an element: twice the %d blocks of bf16 in the same memory)",
                 blocks / 2);
    qs_info("KV cache: %d blocks of %d tokens (%d tokens), %s%s, on %s", blocks, QS_KV_BLOCK_SIZE,
            blocks * QS_KV_BLOCK_SIZE, kv_dtype, per_elem, dev->name);
    *model_out = model;
    *kv_out = kv;
    *max_len_out = max_model_len;
    return 0;
fail:
    if (kv)
        qs_kv_cache_free(kv);
    qs_model_free(model);
    return -1;
}

static int load_all(const loader_args *la, const char *tok_dir, qs_server_model *out, qs_err *err)
{
    const qs_config *cfg = la->cfg;
    memset(out, 0, sizeof *out);
    qs_tokenizer *tok = NULL;
    qs_model *model = NULL;
    qs_kv_cache *kv = NULL;
    qs_chat_template *tmpl = NULL;
    qs_engine *engine = NULL;
    if (qs_tokenizer_load(tok_dir, &tok, err))
        return -1;
    /* The same loader as `generate`, refused the same way when malformed, before the weights load. */
    qs_generation_config gen;
    if (qs_generation_config_load(cfg->model_dir, &gen, err)) {
        qs_tokenizer_free(tok);
        return -1;
    }
    double t0 = (double)clock() / CLOCKS_PER_SEC;
    int max_model_len = 0;
    if (load_model_kv(cfg, &model, &kv, &max_model_len, err))
        goto fail;
    const qs_model_config *mc = qs_model_get_config(model);
    const char *kv_dtype = qs_kv_dtype_name(qs_kv_cache_dtype(kv), qs_model_device(model)->platform);

    int32_t eos[3 * QS_MAX_EOS];
    int n_eos = 0;
    for (int i = 0; i < mc->n_eos; i++)
        add_eos(eos, &n_eos, mc->eos_token_ids[i]);
    for (int i = 0; i < gen.n_eos; i++)
        add_eos(eos, &n_eos, gen.eos_token_ids[i]);
    add_eos(eos, &n_eos, qs_tokenizer_eos_id(tok));

    const char *src = qs_tokenizer_chat_template(tok);
    if (la->chat_template) {
        if (qs_chat_template_compile(la->chat_template, la->chat_template_origin, &tmpl, err))
            goto fail;
        qs_info("chat template: %s (--chat-template)", la->chat_template_origin);
    } else if (src) {
        qs_err terr;
        if (qs_chat_template_compile(src, "tokenizer_config.json chat_template", &tmpl, &terr)) {
            qs_warn("chat template not usable, /v1/chat/completions will answer 400: %s", terr.msg);
            tmpl = NULL;
        }
    } else {
        qs_info("the checkpoint has no chat template; /v1/chat/completions will answer 400");
    }

    int vocab = mc->vocab_size;
    qs_engine_backend backend;
    if (qs_engine_backend_model(model, kv, &backend, err))
        goto fail;
    model = NULL; /* owned by the backend now */
    kv = NULL;
    qs_engine_options opt = {
        .max_num_seqs = cfg->max_num_seqs > 0 ? cfg->max_num_seqs : 16,
        .max_num_batched_tokens = cfg->max_num_batched_tokens,
        .max_num_queued_reqs = cfg->max_num_queued_reqs,
        .max_model_len = max_model_len,
        .seed = (uint64_t)cfg->seed,
        .eos_ids = eos,
        .n_eos = n_eos,
        .tokenizer = tok,
        .start_thread = true,
        .enable_prefix_caching = cfg->enable_prefix_caching,
        .kv_cache_dtype = kv_dtype,
        .disable_log_stats = cfg->disable_log_stats,
    };
    if (opt.max_num_batched_tokens <= 0)
        opt.max_num_batched_tokens = 2048;
    if (qs_engine_create(&opt, &backend, &engine, err)) {
        backend.destroy(backend.ctx);
        goto fail;
    }
    qs_info("engine: max_model_len %d, max_num_seqs %d, max_num_batched_tokens %d, %d end-of-sequence ids, "
            "prefix caching %s, loaded in %.1f s CPU time",
            max_model_len, opt.max_num_seqs, opt.max_num_batched_tokens, n_eos,
            opt.enable_prefix_caching ? "on" : "off (--no-enable-prefix-caching)",
            (double)clock() / CLOCKS_PER_SEC - t0);
    *out = (qs_server_model){.engine = engine,
                             .tokenizer = tok,
                             .chat_template = tmpl,
                             .max_model_len = max_model_len,
                             .vocab_size = vocab,
                             .created = (int64_t)time(NULL)};
    return 0;
fail:
    if (tmpl)
        qs_chat_template_free(tmpl);
    if (kv)
        qs_kv_cache_free(kv);
    if (model)
        qs_model_free(model);
    qs_tokenizer_free(tok);
    return -1;
}

/* A tensor-parallel rank other than 0: no HTTP, no tokenizer, no engine; it loads its shard and
 * KV cache and runs every step rank 0 sends until rank 0 stops. */
static int serve_worker(qs_config *cfg)
{
    /* mpirun forwards SIGINT/SIGTERM to every rank: rank 0 drains, then its stop ends this loop */
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    signal(QS_LAUNCH_STOP_SIGNAL, SIG_IGN);
    char tok_dir[1024];
    qs_err err = {{0}};
    qs_model *model = NULL;
    qs_kv_cache *kv = NULL;
    int max_model_len = 0;
    if (qs_cli_resolve_config(cfg, tok_dir, sizeof tok_dir, &err) ||
        load_model_kv(cfg, &model, &kv, &max_model_len, &err)) {
        char why[QS_ERR_MSG_MAX + 64];
        snprintf(why, sizeof why, "loading %s failed: %s", cfg->model_dir, err.msg);
        qs_cli_tp_fail(cfg, why);
        return 1;
    }
    qs_info("tensor parallel: ready, waiting for rank 0's steps");
    int rc = qs_model_tp_worker(model, kv, &err);
    qs_kv_cache_free(kv);
    qs_model_free(model);
    qs_cli_tp_finish();
    return rc ? 1 : 0;
}

static void *loader_main(void *arg)
{
    loader_args *a = arg;
    qs_server_model m;
    qs_err err = {{0}};
    /* a hub name is resolved (and downloaded) here, while /health answers 503 */
    if (qs_cli_resolve_config(a->cfg, a->tok_dir, sizeof a->tok_dir, &err) ||
        resolve_sampling_defaults(a->cfg, &a->defaults, &err) || load_all(a, a->tok_dir, &m, &err)) {
        qs_error("loading %s failed: %s", a->cfg->model_dir, err.msg);
        qs_cli_tp_fail(a->cfg, "rank 0 could not load the model"); /* ends every rank */
        qs_server_set_failed(a->server, err.msg);
        a->failed = true;
        kill(getpid(), SIGUSR1); /* wakes the main thread's sigwait */
        return NULL;
    }
    qs_server_set_sampling_defaults(a->server, &a->defaults);
    qs_server_set_ready(a->server, &m);
    qs_info("ready: serving '%s' (GET /health answers 200)", a->cfg->served_model_name);
    return NULL;
}

int qs_cmd_serve(int argc, char **argv)
{
    static qs_config cfg; /* large; static keeps it off the stack */
    qs_config_defaults(&cfg);
    qs_err err = {{0}};
    if (qs_config_parse_args(argc, argv, &cfg, &err)) {
        fprintf(stderr, "error: %s\n", err.msg);
        return 2;
    }
    if (cfg.help_requested) {
        printf("usage: qserve serve MODEL [flags]   (or: qserve MODEL [flags])\n\n");
        qs_config_print_help(stdout);
        return 0;
    }
    if (!cfg.model_dir[0]) {
        fprintf(stderr, "error: serve needs MODEL (usage: qserve serve MODEL [flags])\n");
        return 2;
    }
    int tp_rank = 0, tp_status = 0, tp = qs_cli_tp_start(&cfg, &tp_rank, &tp_status);
    if (tp != 0) /* -tp N: the ranks ran under mpirun (and ended), or joining the MPI job failed */
        return tp > 0 ? tp_status : 1;
    if (tp_rank > 0)
        return serve_worker(&cfg);
    if (!cfg.served_model_name[0])
        snprintf(cfg.served_model_name, sizeof cfg.served_model_name, "%s", cfg.model_dir);
    qs_reasoning_kind reasoning;
    if (cfg.tool_call_parser[0] && !qs_tool_parser_find(cfg.tool_call_parser)) {
        fprintf(stderr, "error: --tool-call-parser %s: unknown parser (valid: %s)\n", cfg.tool_call_parser,
                qs_tool_parser_names());
        return 2;
    }
    if (!qs_reasoning_parser_find(cfg.reasoning_parser, &reasoning)) {
        fprintf(stderr, "error: --reasoning-parser %s: unknown parser (valid: %s)\n", cfg.reasoning_parser,
                qs_reasoning_parser_names());
        return 2;
    }
    if (cfg.threads > 0)
        qs_parallel_set_threads(cfg.threads);
    char *chat_template = NULL, template_origin[1100] = "";
    if (cfg.chat_template[0] &&
        qs_chat_template_arg_load(cfg.chat_template, &chat_template, template_origin, sizeof template_origin, &err)) {
        fprintf(stderr, "error: %s\n", err.msg);
        return 2;
    }

    /* Every thread created from here on inherits this mask; the main thread takes the signals
     * with sigwait. SIGPIPE from a vanished client must never kill the server. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGUSR1);
    sigaddset(&set, QS_LAUNCH_STOP_SIGNAL); /* -tp: SIGINT/SIGTERM to the launching qserve */
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    qs_server_options sopt = {.host = cfg.host,
                              .port = cfg.port,
                              .model_name = cfg.served_model_name,
                              .api_key = cfg.api_key,
                              .metrics_require_key = cfg.metrics_require_key,
                              .max_body_bytes = 0,
                              .max_connections = cfg.max_connections,
                              .max_connections_per_client = cfg.max_connections_per_client,
                              .client_timeout_s = cfg.client_timeout,
                              .root_path = cfg.root_path,
                              .allowed_origins = cfg.allowed_origins,
                              .allowed_methods = cfg.allowed_methods,
                              .allowed_headers = cfg.allowed_headers,
                              .allow_credentials = cfg.allow_credentials,
                              .log_requests = cfg.enable_log_requests,
                              .max_logprobs = cfg.max_logprobs,
                              .max_logprobs_set = true,
                              .response_role = cfg.response_role,
                              .enable_auto_tool_choice = cfg.enable_auto_tool_choice,
                              .tool_call_parser = cfg.tool_call_parser,
                              .reasoning_parser = cfg.reasoning_parser};
    const char *names[QS_MAX_SERVED_NAMES];
    for (int i = 0; i < cfg.n_served_model_names; i++)
        names[i] = cfg.served_model_names[i];
    sopt.model_names = names;
    sopt.n_model_names = cfg.n_served_model_names;
    qs_server *server = NULL;
    if (qs_server_start(&sopt, &server, &err)) {
        fprintf(stderr, "error: %s\n", err.msg);
        free(chat_template);
        qs_cli_tp_fail(&cfg, "rank 0 could not start the HTTP server");
        return 1;
    }
    const char *shown_host = !strcmp(cfg.host, "0.0.0.0") || !cfg.host[0] ? "0.0.0.0" : cfg.host;
    qs_info("qserve listening on http://%s:%d (model '%s' loading from %s)", shown_host, qs_server_port(server),
            cfg.served_model_name, cfg.model_dir);
    if (cfg.api_key[0])
        qs_info("API key required on /v1/*, /tokenize, /detokenize%s (Authorization: Bearer ...)",
                cfg.metrics_require_key ? " and /metrics" : "");

    if (cfg.n_served_model_names > 1)
        qs_info("served model names: %d, responses report '%s'", cfg.n_served_model_names, cfg.served_model_name);
    loader_args la = {.cfg = &cfg, .server = server, .chat_template = chat_template,
                      .chat_template_origin = template_origin};
    pthread_t loader;
    if (pthread_create(&loader, NULL, loader_main, &la)) {
        qs_server_stop(server);
        fprintf(stderr, "error: cannot start the loader thread\n");
        return 1;
    }
    int sig = 0;
    sigwait(&set, &sig);
    if (sig == SIGUSR1 && la.failed) {
        pthread_join(loader, NULL);
        qs_server_stop(server);
        free(chat_template);
        return 1;
    }
    qs_info("received %s: draining (new requests get 503, running ones get %g s to finish)",
            sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "a stop signal (SIGUSR2)", cfg.shutdown_timeout);
    qs_server_drain(server, cfg.shutdown_timeout); /* a load in progress is answered 503 meanwhile */
    pthread_join(loader, NULL); /* a load in progress finishes first; the engine then stops at once */
    qs_server_stop(server); /* frees the model: the other ranks leave their step loop */
    free(chat_template);
    qs_cli_tp_finish();
    qs_info("shutdown complete");
    return 0;
}
