/* cmd_tokenize.c — `qserve tokenize MODEL [--text TEXT] [--no-special-tokens]`: prints the
 * token ids of TEXT (or of all of stdin, byte for byte) as a JSON array on one line. */
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
    fprintf(out, "usage: qserve tokenize MODEL [--text TEXT] [--no-special-tokens]\n\n"
                 "Prints the token ids of TEXT as a JSON array on one line. Without --text the text is\n"
                 "all of stdin, byte for byte (a trailing newline is part of it).\n"
                 "MODEL holds tokenizer.json (and tokenizer_config.json).\n\n"
                 "  --text TEXT           the text to encode\n"
                 "  --no-special-tokens   do not let the post-processor add BOS/EOS (add_special_tokens=false)\n");
    qs_cli_hub_usage(out);
}

int qs_cmd_tokenize(int argc, char **argv)
{
    const char *model_dir = NULL, *text = NULL;
    bool no_special_tokens = false;
    qs_cli_hub_flags hub = {0};
    qs_cli_opt opts[2 + QS_CLI_HUB_N_OPTS] = {{"--text", &text, NULL}, {"--no-special-tokens", NULL, &no_special_tokens}};
    qs_cli_hub_opts(&hub, opts + 2);
    bool done;
    int status = qs_cli_parse("tokenize", argc, argv, opts, 2 + QS_CLI_HUB_N_OPTS, &model_dir, usage, &done);
    if (done)
        return status;
    bool add_special = !no_special_tokens;
    if (!model_dir) {
        fprintf(stderr, "error: tokenize: MODEL is required\n");
        usage(stderr);
        return 2;
    }
    qs_err err;
    qs_tokenizer *tok;
    char dir[4096];
    if (qs_cli_model_dir(model_dir, &hub, QS_HUB_FILES_TOKENIZER, dir, sizeof dir))
        return 1;
    if (qs_tokenizer_load(dir, &tok, &err)) {
        fprintf(stderr, "error: %s\n", err.msg);
        return 1;
    }
    char *input = NULL;
    size_t len;
    if (text) {
        len = strlen(text);
    } else if (qs_read_stdin(&input, &len, &err)) {
        fprintf(stderr, "error: %s\n", err.msg);
        qs_tokenizer_free(tok);
        return 1;
    }
    int32_t *ids;
    size_t n;
    int rc = 0;
    if (qs_tokenizer_encode(tok, text ? text : input, len, add_special, &ids, &n, &err)) {
        fprintf(stderr, "error: %s\n", err.msg);
        rc = 1;
    } else {
        putchar('[');
        for (size_t i = 0; i < n; i++)
            printf(i ? ", %d" : "%d", ids[i]);
        puts("]");
        free(ids);
    }
    free(input);
    qs_tokenizer_free(tok);
    return rc;
}
