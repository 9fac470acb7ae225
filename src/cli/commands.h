/* commands.h — the qserve subcommands. Each lives in src/cli/cmd_<name>.c, parses its own flags
 * (see args.h) and returns the process exit status: 0 ok, 1 runtime failure, 2 usage error. */
#ifndef QS_CLI_COMMANDS_H
#define QS_CLI_COMMANDS_H

int qs_cmd_serve(int argc, char **argv);
int qs_cmd_generate(int argc, char **argv);
int qs_cmd_tokenize(int argc, char **argv);
int qs_cmd_detokenize(int argc, char **argv);
int qs_cmd_chat_template(int argc, char **argv);
int qs_cmd_backends(int argc, char **argv);
int qs_cmd_quantize(int argc, char **argv);
int qs_cmd_init_model(int argc, char **argv);
int qs_cmd_download(int argc, char **argv);

#endif
