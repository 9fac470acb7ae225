/* cmd_download.c — `qserve download ORG/NAME [--revision REV] [--download-dir DIR] [--tokenizer-only]
 * [--max-workers N] [--offline] [--quiet]`: fetch what qserve reads of a hub repo into the Hugging
 * Face cache without serving (as `huggingface-cli download`), then print the snapshot folder. */
#include <stdio.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/model_source.h"
#include "hub/hub.h"

static void usage(FILE *out)
{
    fprintf(out, "usage: qserve download ORG/NAME [--revision REV] [--download-dir DIR] [--tokenizer-only]\n"
                 "                        [--max-workers N] [--offline] [--quiet]\n\n"
                 "Downloads the files qserve reads (configs, tokenizer, chat template, safetensors index and\n"
                 "shards) of a Hugging Face repo into the cache and prints the snapshot folder.\n\n"
                 "  --revision REV       branch, tag or commit (default main)\n"
                 "  --download-dir DIR   cache folder (default $HF_HUB_CACHE, $HF_HOME/hub, ~/.cache/huggingface/hub)\n"
                 "  --tokenizer-only     only the config, tokenizer and chat template files\n"
                 "  --max-workers N      files downloaded at once (default 8)\n"
                 "  --offline            download nothing: check that the cache holds the revision (or HF_HUB_OFFLINE=1)\n"
                 "  --quiet              no progress output\n"
                 "Environment: HF_ENDPOINT, HF_TOKEN (or the token file of huggingface-cli login), HF_HUB_OFFLINE.\n");
}

int qs_cmd_download(int argc, char **argv)
{
    const char *repo = NULL, *workers_arg = NULL;
    bool tokenizer_only = false, quiet = false;
    qs_cli_hub_flags hub = {0};
    qs_cli_opt opts[3 + QS_CLI_HUB_N_OPTS] = {{"--tokenizer-only", NULL, &tokenizer_only},
                                              {"--max-workers", &workers_arg, NULL},
                                              {"--quiet", NULL, &quiet}};
    qs_cli_hub_opts(&hub, opts + 3);
    bool done;
    int status = qs_cli_parse("download", argc, argv, opts, 3 + QS_CLI_HUB_N_OPTS, &repo, usage, &done);
    if (done)
        return status;
    if (!repo) {
        fprintf(stderr, "error: download: ORG/NAME is required\n");
        usage(stderr);
        return 2;
    }
    long workers = 8;
    if (workers_arg && qs_arg_int("--max-workers", workers_arg, &workers))
        return 2;
    if (workers < 1 || workers > 64) {
        fprintf(stderr, "error: --max-workers must be in 1..64, got %ld\n", workers);
        return 2;
    }
    qs_hub_options o = {.revision = hub.revision,
                        .cache_dir = hub.download_dir,
                        .offline = hub.offline,
                        .files = tokenizer_only ? QS_HUB_FILES_TOKENIZER : QS_HUB_FILES_MODEL,
                        .max_workers = (int)workers,
                        .quiet = quiet};
    char dir[4096];
    qs_err err;
    if (qs_hub_download(repo, &o, dir, sizeof dir, &err)) {
        fprintf(stderr, "error: %s\n", err.msg);
        return 1;
    }
    printf("%s\n", dir);
    return 0;
}
