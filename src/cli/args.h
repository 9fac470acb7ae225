/* args.h — small helpers every subcommand uses to read `--flag VALUE` / `--flag=VALUE` options.
 * A flag missing its value is a usage error that names the flag. */
#ifndef QS_CLI_ARGS_H
#define QS_CLI_ARGS_H

#include <stdbool.h>
#include <stdio.h>

/* If argv[*i] is `flag=VALUE`, stores VALUE in *value and returns 1 with *i unchanged; if it is
 * `flag` alone, stores argv[*i + 1] in *value, moves *i onto that value (the caller's loop
 * increment then steps past it) and returns 1. Returns 0 if argv[*i] is another argument, -1
 * (after printing an error) if the flag has no value. */
int qs_arg_value(int argc, char **argv, int *i, const char *flag, const char **value);
/* True if argv[i] is exactly `flag`. */
bool qs_arg_is(const char *arg, const char *flag);
/* Parses a base-10 integer / float argument, printing "FLAG: expected ..." on failure. */
int qs_arg_int(const char *flag, const char *value, long *out);
int qs_arg_double(const char *flag, const char *value, double *out);
/* Parses the value of --shard-size (gigabytes, must be positive), printing an error on failure. */
int qs_arg_shard_size(const char *value, double *gb);
/* Parses "1,2,3" into a malloc'd int array. */
int qs_arg_int_list(const char *flag, const char *value, int **out, int *n);

/* One option of a small command: a flag with a value (value != NULL) or a switch (set != NULL). */
typedef struct qs_cli_opt {
    const char *flag;
    const char **value;
    bool *set;
} qs_cli_opt;

/* Parses argv[1..] of command `cmd` against opts plus --help/-h and one positional argument
 * (stored in *positional, which may stay NULL when none is given). Returns 0 to go on,
 * or the exit status to return at once: 0 after printing help, 2 after a usage error (unknown
 * option, missing value, extra argument), each message naming the culprit. */
int qs_cli_parse(const char *cmd, int argc, char **argv, const qs_cli_opt *opts, int n_opts, const char **positional,
                 void (*usage)(FILE *out), bool *done);

#endif
