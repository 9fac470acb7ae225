/* model_source.c — the hub flags of the commands and their model resolution (model_source.h). */
#include "cli/model_source.h"

#include <stdio.h>
#include <string.h>

void qs_cli_hub_opts(qs_cli_hub_flags *f, qs_cli_opt *opts)
{
    opts[0] = (qs_cli_opt){"--revision", &f->revision, NULL};
    opts[1] = (qs_cli_opt){"--download-dir", &f->download_dir, NULL};
    opts[2] = (qs_cli_opt){"--offline", NULL, &f->offline};
}

/* `flag VALUE` or `flag=VALUE`: 1 with *value set, 0 if argv[*i] is something else, -1 without a value. */
static int flag_value(int argc, char **argv, int *i, const char *flag, const char **value)
{
    size_t n = strlen(flag);
    if (strncmp(argv[*i], flag, n))
        return 0;
    if (argv[*i][n] == '=') {
        *value = argv[*i] + n + 1;
        return 1;
    }
    if (argv[*i][n])
        return 0;
    if (*i + 1 >= argc)
        return -1;
    *value = argv[++*i];
    return 1;
}

int qs_cli_hub_arg(int argc, char **argv, int *i, qs_cli_hub_flags *f)
{
    int r;
    if ((r = flag_value(argc, argv, i, "--revision", &f->revision)) != 0)
        return r;
    if ((r = flag_value(argc, argv, i, "--download-dir", &f->download_dir)) != 0)
        return r;
    if (qs_arg_is(argv[*i], "--offline")) {
        f->offline = true;
        return 1;
    }
    return 0;
}

void qs_cli_hub_usage(FILE *out)
{
    fprintf(out, "  MODEL is a folder or a Hugging Face repo id ORG/NAME (from the cache, downloaded if missing):\n"
                 "  --revision REV       branch, tag or commit of the repo (default main)\n"
                 "  --download-dir DIR   Hugging Face cache folder (default $HF_HUB_CACHE, $HF_HOME/hub,\n"
                 "                       ~/.cache/huggingface/hub)\n"
                 "  --offline            cache only, no network (or HF_HUB_OFFLINE=1)\n");
}

int qs_cli_model_dir(const char *name, const qs_cli_hub_flags *f, qs_hub_fileset set, char *out, size_t cap)
{
    qs_hub_options o = {.revision = f->revision, .cache_dir = f->download_dir, .offline = f->offline, .files = set};
    qs_err err;
    if (qs_hub_resolve(name, &o, out, cap, &err)) {
        fprintf(stderr, "error: %s\n", err.msg);
        return -1;
    }
    return 0;
}

int qs_cli_resolve_config(qs_config *cfg, char *tok_dir, size_t cap, qs_err *err)
{
    qs_hub_options o = {.revision = cfg->revision, .cache_dir = cfg->download_dir, .offline = cfg->offline,
                        .files = QS_HUB_FILES_MODEL};
    char typed[sizeof cfg->model_dir], dir[sizeof cfg->model_dir];
    snprintf(typed, sizeof typed, "%s", cfg->model_dir);
    if (qs_hub_resolve(typed, &o, dir, sizeof dir, err))
        return -1;
    snprintf(cfg->model_dir, sizeof cfg->model_dir, "%s", dir);
    if (!cfg->tokenizer[0] && !cfg->tokenizer_revision[0]) {
        snprintf(tok_dir, cap, "%s", cfg->model_dir);
        return 0;
    }
    /* as vLLM: --tokenizer-revision alone picks another revision of the model's own repo */
    o.revision = cfg->tokenizer_revision;
    o.files = QS_HUB_FILES_TOKENIZER;
    const char *name = cfg->tokenizer[0] ? cfg->tokenizer : typed;
    if (qs_hub_resolve(name, &o, tok_dir, cap, err)) {
        qs_err_prefix(err, "%s: ", cfg->tokenizer[0] ? "--tokenizer" : "--tokenizer-revision");
        return -1;
    }
    return 0;
}
