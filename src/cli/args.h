/* args.h — small helpers every subcommand uses to read `--flag VALUE` / `--flag=VALUE` options.
 * A flag missing its value is a usage error that names the flag. */
#ifndef QS_CLI_ARGS_H
#define QS_CLI_ARGS_H

#include <stdbool.h>

/* If argv[*i] is `flag` or `flag=...`, stores the value in *value, advances *i past what it used
 * and returns 1. Returns 0 if argv[*i] is another argument, -1 (after printing an error) if the
 * flag has no value. */
int qs_arg_value(int argc, char **argv, int *i, const char *flag, const char **value);
/* True if argv[i] is exactly `flag`. */
bool qs_arg_is(const char *arg, const char *flag);
/* Parses a base-10 integer / float argument, printing "FLAG: expected ..." on failure. */
int qs_arg_int(const char *flag, const char *value, long *out);
int qs_arg_double(const char *flag, const char *value, double *out);
/* Parses "1,2,3" into a malloc'd int array. */
int qs_arg_int_list(const char *flag, const char *value, int **out, int *n);

#endif
