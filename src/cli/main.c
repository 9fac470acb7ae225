/* main.c — qserve's entry point: dispatches to a subcommand, or serves MODEL like vLLM
 * (`qserve MODEL [flags]` is `qserve serve MODEL [flags]`). */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/tp_launch.h"

typedef struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} qs_command;

static const qs_command COMMANDS[] = {
    {"serve", qs_cmd_serve, "serve MODEL over an OpenAI-compatible HTTP API (default)"},
    {"generate", qs_cmd_generate, "generate text from a prompt on the command line"},
    {"tokenize", qs_cmd_tokenize, "print the token ids of a text as a JSON array"},
    {"detokenize", qs_cmd_detokenize, "print the text of comma-separated token ids"},
    {"chat-template", qs_cmd_chat_template, "render a checkpoint's chat template for messages"},
    {"backends", qs_cmd_backends, "show the kernel registry and the kernel chosen per layer type"},
    {"quantize", qs_cmd_quantize, "quantize a BF16/F32 checkpoint to FP8 or NVFP4"},
    {"init-model", qs_cmd_init_model, "write a random-initialised checkpoint of a real shape"},
    {"download", qs_cmd_download, "download a Hugging Face repo's files into the cache (ORG/NAME)"},
};
#define N_COMMANDS (sizeof COMMANDS / sizeof COMMANDS[0])

static void usage(FILE *out)
{
    fprintf(out, "qserve — an inference server for quantized LLMs (FP8, NVFP4)\n\n"
                 "usage: qserve MODEL [serve flags]      (MODEL: a folder or a Hugging Face repo id ORG/NAME)\n"
                 "       qserve COMMAND [args]   (qserve COMMAND --help for its flags)\n\n"
                 "commands:\n");
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(out, "  %-14s %s\n", COMMANDS[i].name, COMMANDS[i].summary);
    fprintf(out, "\nserve flags (vLLM-style): --host, --port, --served-model-name, --max-model-len,\n"
                 "  --max-num-seqs, --linear-backend, --moe-backend, --kernel-config, --config FILE.yaml, ...\n"
                 "  see `qserve serve --help` and docs/cli.md.\n");
}

int main(int argc, char **argv)
{
    qs_cli_save_argv(argc, argv); /* --tensor-parallel-size re-executes it under mpirun */
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *first = argv[1];
    if (!strcmp(first, "--help") || !strcmp(first, "-h") || !strcmp(first, "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(first, "--version")) {
        printf("qserve 0.1.0\n");
        return 0;
    }
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (!strcmp(first, COMMANDS[i].name))
            return COMMANDS[i].run(argc - 1, argv + 1);
    if (first[0] == '-') {
        fprintf(stderr, "error: unknown option '%s' (expected a command or MODEL)\n", first);
        usage(stderr);
        return 2;
    }
    /* `qserve MODEL ...` serves, like `vllm serve MODEL`. argv[0] stands in for "serve". */
    return qs_cmd_serve(argc, argv);
}
