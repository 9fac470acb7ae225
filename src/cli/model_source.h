/* model_source.h — the hub flags every command that takes a model accepts (--revision,
 * --download-dir, --offline) and the call that turns MODEL (a folder or a Hugging Face repo id
 * ORG/NAME) into a folder through src/hub, printing the error when that fails. */
#ifndef QS_CLI_MODEL_SOURCE_H
#define QS_CLI_MODEL_SOURCE_H

#include <stdbool.h>
#include <stddef.h>

#include "cli/args.h"
#include "config/config.h"
#include "hub/hub.h"

typedef struct qs_cli_hub_flags {
    const char *revision, *download_dir;
    bool offline;
} qs_cli_hub_flags;

#define QS_CLI_HUB_N_OPTS 3
/* Fills opts[0..2] with --revision, --download-dir and --offline bound to f, for qs_cli_parse. */
void qs_cli_hub_opts(qs_cli_hub_flags *f, qs_cli_opt *opts);
/* If argv[*i] is one of the hub flags, stores it in f and returns 1 (*i moved past a value),
 * -1 when its value is missing (nothing printed), else 0. For commands with their own parsers. */
int qs_cli_hub_arg(int argc, char **argv, int *i, qs_cli_hub_flags *f);
/* The usage lines of the hub flags. */
void qs_cli_hub_usage(FILE *out);

/* Resolves name into out (a folder); prints "error: ..." and returns -1 on failure. */
int qs_cli_model_dir(const char *name, const qs_cli_hub_flags *f, qs_hub_fileset set, char *out, size_t cap);
/* For serve and generate: resolves cfg->model_dir in place (the model's files) and the tokenizer
 * folder (cfg->tokenizer at cfg->tokenizer_revision, else the model folder) into tok_dir. */
int qs_cli_resolve_config(qs_config *cfg, char *tok_dir, size_t cap, qs_err *err);

#endif
