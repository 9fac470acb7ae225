/* cmd_detokenize.c — `qserve detokenize MODEL [--ids 1,2,3] [--skip-special-tokens]`: prints
 * the text of the ids exactly (no newline added). Without --ids they come from stdin, separated
 * by commas or whitespace, optionally inside [ ] (so tokenize's output pipes straight in). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/model_source.h"
#include "cli/commands.h"
#include "tokenizer/tokenizer.h"
#include "util/fileio.h"

static void usage(FILE *out)
{
    fprintf(out, "usage: qserve detokenize MODEL [--ids 1,2,3] [--skip-special-tokens]\n\n"
                 "Prints the text of the token ids, with no newline added. Without --ids the ids are read\n"
                 "from stdin (commas or whitespace between them, optional [ ]).\n"
                 "MODEL holds tokenizer.json (and tokenizer_config.json).\n\n"
                 "  --ids LIST              comma-separated token ids\n"
                 "  --skip-special-tokens   leave special tokens out of the text\n");
    qs_cli_hub_usage(out);
}

int qs_cmd_detokenize(int argc, char **argv)
{
    const char *model_dir = NULL, *ids_arg = NULL;
    bool skip_special = false;
    qs_cli_hub_flags hub = {0};
    qs_cli_opt opts[2 + QS_CLI_HUB_N_OPTS] = {{"--ids", &ids_arg, NULL}, {"--skip-special-tokens", NULL, &skip_special}};
    qs_cli_hub_opts(&hub, opts + 2);
    bool done;
    int status = qs_cli_parse("detokenize", argc, argv, opts, 2 + QS_CLI_HUB_N_OPTS, &model_dir, usage, &done);
    if (done)
        return status;
    if (!model_dir) {
        fprintf(stderr, "error: detokenize: MODEL is required\n");
        usage(stderr);
        return 2;
    }
    qs_err err;
    char *input = NULL;
    if (!ids_arg) {
        if (qs_read_stdin(&input, NULL, &err)) {
            fprintf(stderr, "error: %s\n", err.msg);
            return 1;
        }
        for (char *p = input; *p; p++)
            if (*p == '[' || *p == ']' || *p == '\n' || *p == '\r' || *p == '\t')
                *p = ' ';
        ids_arg = input;
    }
    int *ids, n;
    if (qs_arg_int_list("--ids", ids_arg, &ids, &n)) {
        free(input);
        return 2;
    }
    free(input);
    qs_tokenizer *tok;
    char dir[4096];
    if (qs_cli_model_dir(model_dir, &hub, QS_HUB_FILES_TOKENIZER, dir, sizeof dir)) {
        free(ids);
        return 1;
    }
    if (qs_tokenizer_load(dir, &tok, &err)) {
        fprintf(stderr, "error: %s\n", err.msg);
        free(ids);
        return 1;
    }
    int32_t *ids32 = malloc(((size_t)n + 1) * sizeof *ids32);
    char *text = NULL;
    size_t text_len = 0;
    int rc = 0;
    for (int i = 0; ids32 && i < n; i++)
        ids32[i] = ids[i];
    if (!ids32) {
        fprintf(stderr, "error: out of memory\n");
        rc = 1;
    } else if (qs_tokenizer_decode_n(tok, ids32, (size_t)n, skip_special, &text, &text_len, &err)) {
        fprintf(stderr, "error: %s\n", err.msg);
        rc = 1;
    } else {
        fwrite(text, 1, text_len, stdout);
    }
    free(text);
    free(ids32);
    free(ids);
    qs_tokenizer_free(tok);
    return rc;
}
