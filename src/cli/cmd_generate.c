/* cmd_generate.c — `qserve generate MODEL (--prompt TEXT | --prompt-ids 1,2,3) [options]`:
 * one prompt through the model on this machine, without the server. Generation flags are parsed
 * here; every other flag (backends, device, threads, --config) goes to qs_config_parse_args, so
 * generate accepts the same backend and device options as `serve`. Sampling defaults come from
 * --generation-config (the model's generation_config.json by default, as vLLM) and
 * --override-generation-config, the flags override them; --temperature 0 is greedy.
 * Output: the text streamed as it is generated and a tokens/s line on stderr, or with --json one
 * object {"prompt_ids", "token_ids", "text", "logprobs"?}. */
#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/args.h"
#include "cli/chat_template_arg.h"
#include "cli/commands.h"
#include "cli/model_source.h"
#include "cli/tp_launch.h"
#include "engine/generate.h"
#include "engine/kv_setup.h"
#include "engine/sampling_defaults.h"
#include "model/model_config.h"
#include "model/model_config_load.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"
#include "util/fileio.h"

#define MAX_STOPS 16

typedef struct gen_opts {
    const char *prompt;
    int *prompt_ids;
    int n_prompt_ids;
    long max_tokens;
    bool chat, json, ignore_eos;
    const char *stops[MAX_STOPS];
    int n_stops;
    bool has_temperature, has_top_p, has_top_k, has_min_p, has_rep;
    double temperature, top_p, min_p, rep;
    long top_k, logprobs, seed;
    bool has_seed;
} gen_opts;

static void usage(void)
{
    fprintf(stderr,
            "usage: qserve generate MODEL (--prompt TEXT | --prompt-ids 1,2,3) [--max-tokens N]\n"
            "       [--temperature T] [--top-p P] [--top-k K] [--min-p P] [--repetition-penalty R] [--seed S]\n"
            "       [--logprobs N] [--chat] [--json] [--stop STR]... [--ignore-eos] [serve options: --device,\n"
            "       --linear-backend, --moe-backend, --threads, --config, ...] [--revision REV]\n"
            "       [--download-dir DIR] [--offline] [--tokenizer NAME|DIR] [--tokenizer-revision REV]\n"
            "  MODEL is a folder or a Hugging Face repo id ORG/NAME (from the cache, downloaded if missing)\n");
}

/* Takes the generate flags out of argv; the rest (argv[0] included) lands in rest[]. */
static int parse_generate_flags(int argc, char **argv, gen_opts *o, char **rest, int *n_rest)
{
    *n_rest = 0;
    rest[(*n_rest)++] = argv[0];
    for (int i = 1; i < argc; i++) {
        const char *v = NULL;
        int r;
        if ((r = qs_arg_value(argc, argv, &i, "--prompt", &v)) != 0) {
            if (r < 0)
                return -1;
            o->prompt = v;
        } else if ((r = qs_arg_value(argc, argv, &i, "--prompt-ids", &v)) != 0) {
            if (r < 0 || qs_arg_int_list("--prompt-ids", v, &o->prompt_ids, &o->n_prompt_ids))
                return -1;
        } else if ((r = qs_arg_value(argc, argv, &i, "--max-tokens", &v)) != 0) {
            if (r < 0 || qs_arg_int("--max-tokens", v, &o->max_tokens))
                return -1;
        } else if ((r = qs_arg_value(argc, argv, &i, "--temperature", &v)) != 0) {
            if (r < 0 || qs_arg_double("--temperature", v, &o->temperature))
                return -1;
            o->has_temperature = true;
        } else if ((r = qs_arg_value(argc, argv, &i, "--top-p", &v)) != 0) {
            if (r < 0 || qs_arg_double("--top-p", v, &o->top_p))
                return -1;
            o->has_top_p = true;
        } else if ((r = qs_arg_value(argc, argv, &i, "--min-p", &v)) != 0) {
            if (r < 0 || qs_arg_double("--min-p", v, &o->min_p))
                return -1;
            o->has_min_p = true;
        } else if ((r = qs_arg_value(argc, argv, &i, "--repetition-penalty", &v)) != 0) {
            if (r < 0 || qs_arg_double("--repetition-penalty", v, &o->rep))
                return -1;
            o->has_rep = true;
        } else if ((r = qs_arg_value(argc, argv, &i, "--top-k", &v)) != 0) {
            if (r < 0 || qs_arg_int("--top-k", v, &o->top_k))
                return -1;
            o->has_top_k = true;
        } else if ((r = qs_arg_value(argc, argv, &i, "--seed", &v)) != 0) {
            if (r < 0 || qs_arg_int("--seed", v, &o->seed))
                return -1;
            o->has_seed = true;
        } else if ((r = qs_arg_value(argc, argv, &i, "--logprobs", &v)) != 0) {
            if (r < 0 || qs_arg_int("--logprobs", v, &o->logprobs))
                return -1;
        } else if ((r = qs_arg_value(argc, argv, &i, "--stop", &v)) != 0) {
            if (r < 0)
                return -1;
            if (o->n_stops == MAX_STOPS) {
                fprintf(stderr, "error: at most %d --stop strings\n", MAX_STOPS);
                return -1;
            }
            o->stops[o->n_stops++] = v;
        } else if (qs_arg_is(argv[i], "--chat")) {
            o->chat = true;
        } else if (qs_arg_is(argv[i], "--json")) {
            o->json = true;
        } else if (qs_arg_is(argv[i], "--ignore-eos")) {
            o->ignore_eos = true;
        } else {
            rest[(*n_rest)++] = argv[i];
        }
    }
    return 0;
}

static int check_opts(const gen_opts *o)
{
    if (!o->prompt == !o->prompt_ids) {
        fprintf(stderr, "error: give exactly one of --prompt TEXT and --prompt-ids 1,2,3\n");
        return -1;
    }
    if (o->chat && !o->prompt) {
        fprintf(stderr, "error: --chat needs --prompt TEXT\n");
        return -1;
    }
    if (o->max_tokens < 1) {
        fprintf(stderr, "error: --max-tokens must be at least 1, got %ld\n", o->max_tokens);
        return -1;
    }
    if (o->has_temperature && o->temperature < 0) {
        fprintf(stderr, "error: --temperature must be >= 0, got %g\n", o->temperature);
        return -1;
    }
    if (o->has_top_p && (o->top_p <= 0 || o->top_p > 1)) {
        fprintf(stderr, "error: --top-p must be in (0, 1], got %g\n", o->top_p);
        return -1;
    }
    if (o->has_min_p && (o->min_p < 0 || o->min_p > 1)) {
        fprintf(stderr, "error: --min-p must be in [0, 1], got %g\n", o->min_p);
        return -1;
    }
    if (o->has_rep && o->rep <= 0) {
        fprintf(stderr, "error: --repetition-penalty must be > 0, got %g\n", o->rep);
        return -1;
    }
    if (o->logprobs < -1 || o->logprobs > QS_MAX_LOGPROBS) {
        fprintf(stderr, "error: --logprobs must be in 0..%d, got %ld\n", QS_MAX_LOGPROBS, o->logprobs);
        return -1;
    }
    return 0;
}

/* Sampling parameters: defaults, then --generation-config (the model's generation_config.json by
 * default) and --override-generation-config, then the flags. */
static void sampling_params(const gen_opts *o, const qs_sampling_defaults *d, qs_sampling_params *p)
{
    qs_sampling_params_defaults(p);
    if (o->has_temperature)
        p->temperature = o->temperature;
    if (o->has_top_p)
        p->top_p = o->top_p;
    if (o->has_top_k)
        p->top_k = (int)o->top_k;
    if (o->has_min_p)
        p->min_p = o->min_p;
    if (o->has_rep)
        p->repetition_penalty = o->rep;
    qs_sampling_given given = {.temperature = o->has_temperature,
                               .top_p = o->has_top_p,
                               .top_k = o->has_top_k,
                               .min_p = o->has_min_p,
                               .repetition_penalty = o->has_rep};
    qs_sampling_defaults_apply(d, &given, p);
    p->has_seed = o->has_seed;
    p->seed = (uint64_t)o->seed;
    p->logprobs = (int)o->logprobs;
}

/* The prompt's token ids: given, or encoded (through the chat template with --chat). */
static int prompt_tokens(const gen_opts *o, const qs_tokenizer *tok, const char *chat_template_arg, int32_t **ids,
                         size_t *n, qs_err *err)
{
    if (o->prompt_ids) {
        *ids = malloc(sizeof(int32_t) * (size_t)o->n_prompt_ids);
        if (!*ids)
            return qs_errf(err, "out of memory");
        for (int i = 0; i < o->n_prompt_ids; i++)
            (*ids)[i] = o->prompt_ids[i];
        *n = (size_t)o->n_prompt_ids;
        return 0;
    }
    if (!o->chat)
        return qs_tokenizer_encode(tok, o->prompt, strlen(o->prompt), true, ids, n, err);
    char *own = NULL, origin[1100] = "tokenizer_config.json chat_template";
    if (chat_template_arg[0] && qs_chat_template_arg_load(chat_template_arg, &own, origin, sizeof origin, err))
        return -1;
    const char *src = own ? own : qs_tokenizer_chat_template(tok);
    if (!src)
        return qs_errf(err, "--chat: the tokenizer has no chat_template (tokenizer_config.json); give --chat-template");
    qs_chat_template *t;
    int crc = qs_chat_template_compile(src, origin, &t, err);
    free(own);
    if (crc)
        return -1;
    cJSON *messages = cJSON_CreateArray(), *msg = cJSON_CreateObject();
    cJSON_AddStringToObject(msg, "role", "user");
    cJSON_AddStringToObject(msg, "content", o->prompt);
    cJSON_AddItemToArray(messages, msg);
    char *text = NULL;
    int rc = qs_chat_template_render(t, messages, NULL, true, qs_tokenizer_bos_token(tok), qs_tokenizer_eos_token(tok),
                                     NULL, &text, err);
    cJSON_Delete(messages);
    qs_chat_template_free(t);
    if (rc == 0) /* the template writes the special tokens itself, as vLLM's chat path */
        rc = qs_tokenizer_encode(tok, text, strlen(text), false, ids, n, err);
    free(text);
    return rc;
}

typedef struct stream_ctx {
    bool print;
    size_t tokens;
} stream_ctx;

static void on_text(void *ctx, const char *text, size_t len)
{
    stream_ctx *s = ctx;
    if (s->print && len) {
        fwrite(text, 1, len, stdout);
        fflush(stdout);
    }
}

static void print_json(const int32_t *prompt, size_t n_prompt, const qs_generation *g)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *p = cJSON_AddArrayToObject(o, "prompt_ids");
    for (size_t i = 0; i < n_prompt; i++)
        cJSON_AddItemToArray(p, cJSON_CreateNumber(prompt[i]));
    cJSON *t = cJSON_AddArrayToObject(o, "token_ids");
    for (int i = 0; i < g->n_tokens; i++)
        cJSON_AddItemToArray(t, cJSON_CreateNumber(g->tokens[i]));
    cJSON_AddStringToObject(o, "text", g->text ? g->text : "");
    if (g->logprobs) {
        cJSON *lps = cJSON_AddArrayToObject(o, "logprobs");
        for (int i = 0; i < g->n_tokens; i++) {
            const qs_token_logprobs *lp = &g->logprobs[i];
            cJSON *e = cJSON_CreateObject();
            cJSON_AddNumberToObject(e, "token_id", lp->token_id);
            cJSON_AddNumberToObject(e, "logprob", lp->logprob);
            cJSON *top = cJSON_AddArrayToObject(e, "top");
            for (int k = 0; k < lp->n_top; k++) {
                cJSON *x = cJSON_CreateObject();
                cJSON_AddNumberToObject(x, "token_id", lp->top_ids[k]);
                cJSON_AddNumberToObject(x, "logprob", lp->top_logprobs[k]);
                cJSON_AddItemToArray(top, x);
            }
            cJSON_AddItemToArray(lps, e);
        }
    }
    char *s = cJSON_PrintUnformatted(o);
    if (s)
        printf("%s\n", s);
    free(s);
    cJSON_Delete(o);
}

/* Serve options that mean nothing without a server: refused on generate's command line rather
 * than taken and ignored (a --config YAML written for serve may still hold them). */
static const char *serve_only_option(int n, char **args)
{
    static const char *const SERVE_ONLY[] = {
        "host", "port", "served-model-name", "api-key", "metrics-require-key", "max-connections",
        "max-connections-per-client", "client-timeout", "shutdown-timeout", "max-num-seqs", "max-num-batched-tokens",
        "max-num-queued-reqs", "response-role", "allowed-origins", "allowed-methods", "allowed-headers",
        "allow-credentials", "root-path", "enable-log-requests", "disable-log-stats"};
    for (int i = 1; i < n; i++) {
        if (strncmp(args[i], "--", 2) != 0)
            continue;
        char name[96];
        snprintf(name, sizeof name, "%s", args[i] + 2);
        name[strcspn(name, "=")] = '\0';
        const qs_option *opt = qs_config_find_option(name);
        for (size_t k = 0; opt && k < sizeof SERVE_ONLY / sizeof SERVE_ONLY[0]; k++)
            if (!strcmp(opt->name, SERVE_ONLY[k]))
                return args[i];
    }
    return NULL;
}

int qs_cmd_generate(int argc, char **argv)
{
    gen_opts o = {.max_tokens = 16, .logprobs = -1};
    char **rest = calloc((size_t)argc + 1, sizeof(char *));
    int n_rest = 0, status = 2;
    qs_err err = {{0}};
    qs_tokenizer *tok = NULL;
    qs_model *model = NULL;
    qs_kv_setup kvs = {0};
    int32_t *prompt = NULL;
    size_t n_prompt = 0;
    qs_generation gen = {0};
    qs_config cfg;
    if (!rest || parse_generate_flags(argc, argv, &o, rest, &n_rest)) {
        usage();
        goto done;
    }
    const char *serve_only = serve_only_option(n_rest, rest);
    if (serve_only) {
        fprintf(stderr, "error: %s is a serve option; generate runs no server\n", serve_only);
        goto done;
    }
    if (qs_config_parse_args(n_rest, rest, &cfg, &err)) {
        fprintf(stderr, "error: %s\n", err.msg);
        usage();
        goto done;
    }
    if (cfg.help_requested) {
        usage();
        status = 0;
        goto done;
    }
    if (o.logprobs > cfg.max_logprobs) {
        fprintf(stderr, "error: --logprobs %ld is greater than --max-logprobs %d\n", o.logprobs, cfg.max_logprobs);
        goto done;
    }
    if (check_opts(&o)) {
        usage();
        goto done;
    }
    status = 1;
    int tp_rank = 0, tp_status = 0, tp = qs_cli_tp_start(&cfg, &tp_rank, &tp_status);
    if (tp > 0) /* -tp N: the ranks ran under mpirun and have ended */
        status = tp_status;
    if (tp != 0)
        goto done;
    qs_generation_config gc;
    qs_sampling_defaults defaults;
    char tok_dir[1024], tok_path[1200];
    if (qs_cli_resolve_config(&cfg, tok_dir, sizeof tok_dir, &err)) {
        fprintf(stderr, "error: %s\n", err.msg);
        goto done;
    }
    qs_path_join(tok_path, sizeof(tok_path), tok_dir, "tokenizer.json");
    /* --prompt-ids needs no tokenizer: without one the output is ids only (no text, no --stop) */
    bool need_tok = !o.prompt_ids || o.n_stops > 0 || qs_file_exists(tok_path);
    if (!need_tok)
        fprintf(stderr, "note: %s has no tokenizer.json; printing token ids only\n", tok_dir);
    if ((need_tok && qs_tokenizer_load(tok_dir, &tok, &err)) || prompt_tokens(&o, tok, cfg.chat_template, &prompt, &n_prompt, &err) ||
        qs_generation_config_load(cfg.model_dir, &gc, &err) ||
        qs_sampling_defaults_resolve(cfg.generation_config, cfg.model_dir, cfg.override_generation_config, &defaults,
                                     &err) ||
        qs_model_load(&cfg, &model, &err)) {
        fprintf(stderr, "error: %s\n", err.msg);
        goto done;
    }
    if (qs_kv_setup_resolve(&cfg, qs_model_get_config(model), qs_model_device(model)->platform, &kvs, &err)) {
        fprintf(stderr, "error: %s\n", err.msg);
        goto done;
    }
    qs_generate_request req = {0};
    req.kv_dtype = (int)kvs.dtype;
    req.kv_k_scales = kvs.k_scales;
    req.kv_v_scales = kvs.v_scales;
    sampling_params(&o, &defaults, &req.params);
    req.prompt = prompt;
    req.n_prompt = (int)n_prompt;
    req.max_tokens = qs_sampling_defaults_max_tokens(&defaults, (int)o.max_tokens);
    req.ignore_eos = o.ignore_eos;
    req.stop_strings = o.stops;
    req.n_stop_strings = o.n_stops;
    req.engine_seed = (uint64_t)cfg.seed;
    /* EOS: generation_config.json's list, else config.json's, else the tokenizer's */
    if (gc.n_eos > 0) {
        memcpy(req.eos_ids, gc.eos_token_ids, sizeof(int) * (size_t)gc.n_eos);
        req.n_eos = gc.n_eos;
    } else if (qs_model_get_config(model)->n_eos > 0) {
        memcpy(req.eos_ids, qs_model_get_config(model)->eos_token_ids, sizeof(int) * (size_t)qs_model_get_config(model)->n_eos);
        req.n_eos = qs_model_get_config(model)->n_eos;
    } else if (tok && qs_tokenizer_eos_id(tok) >= 0) { /* --prompt-ids runs without a tokenizer */
        req.eos_ids[0] = qs_tokenizer_eos_id(tok);
        req.n_eos = 1;
    }
    if (tp_rank > 0) { /* the same load and prompt as rank 0, then rank 0's steps */
        if (qs_generate_tp_worker(model, &req, &err)) {
            fprintf(stderr, "error: %s\n", err.msg);
            goto done;
        }
        status = 0;
        goto done;
    }
    stream_ctx sc = {.print = !o.json};
    req.on_text = on_text;
    req.on_text_ctx = &sc;
    if (qs_generate(model, tok, &req, &gen, &err)) {
        if (!o.json)
            printf("\n");
        fprintf(stderr, "error: %s\n", err.msg);
        goto done;
    }
    if (o.json) {
        print_json(prompt, n_prompt, &gen);
    } else {
        for (int i = 0; !tok && i < gen.n_tokens; i++)
            printf(i ? " %d" : "%d", gen.tokens[i]);
        printf("\n");
        fflush(stdout);
    }
    fprintf(stderr, "prompt: %zu tokens in %.3f s; generated %d tokens in %.3f s (%.1f tokens/s)\n", n_prompt,
            gen.prefill_seconds, gen.n_tokens, gen.decode_seconds,
            gen.decode_seconds > 0 ? gen.n_tokens / gen.decode_seconds : 0.0);
    status = 0;
done:
    if (status != 0)
        qs_cli_tp_fail(&cfg, "generate failed on this rank"); /* the other ranks would wait for it */
    qs_kv_setup_free(&kvs);
    qs_generation_free(&gen);
    qs_model_free(model); /* rank 0: the other ranks leave their step loop */
    qs_cli_tp_finish();
    qs_tokenizer_free(tok);
    free(prompt);
    free(o.prompt_ids);
    free(rest);
    return status;
}
