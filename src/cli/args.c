/* args.c — option parsing helpers shared by the subcommands (see args.h). */
#include "cli/args.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool qs_arg_is(const char *arg, const char *flag) { return strcmp(arg, flag) == 0; }

int qs_arg_value(int argc, char **argv, int *i, const char *flag, const char **value)
{
    const char *a = argv[*i];
    size_t fl = strlen(flag);
    if (strncmp(a, flag, fl) != 0)
        return 0;
    if (a[fl] == '=') {
        *value = a + fl + 1;
        return 1;
    }
    if (a[fl] != '\0')
        return 0;
    if (*i + 1 >= argc) {
        fprintf(stderr, "error: %s needs a value\n", flag);
        return -1;
    }
    *value = argv[++*i];
    return 1;
}

int qs_arg_int(const char *flag, const char *value, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(value, &end, 10);
    if (errno || end == value || *end) {
        fprintf(stderr, "error: %s: expected an integer, got '%s'\n", flag, value);
        return -1;
    }
    *out = v;
    return 0;
}

int qs_arg_double(const char *flag, const char *value, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(value, &end);
    if (errno || end == value || *end) {
        fprintf(stderr, "error: %s: expected a number, got '%s'\n", flag, value);
        return -1;
    }
    *out = v;
    return 0;
}

int qs_arg_shard_size(const char *value, double *gb)
{
    if (qs_arg_double("--shard-size", value, gb))
        return -1;
    if (*gb <= 0) {
        fprintf(stderr, "error: --shard-size must be positive (GB)\n");
        return -1;
    }
    return 0;
}

int qs_arg_int_list(const char *flag, const char *value, int **out, int *n)
{
    int cap = 16, cnt = 0;
    int *ids = malloc(sizeof *ids * cap);
    const char *p = value;
    while (ids && *p) {
        while (*p == ' ' || *p == ',')
            p++;
        if (!*p)
            break;
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (errno || end == p || v < -2147483647L || v > 2147483647L) {
            fprintf(stderr, "error: %s: expected comma-separated integers, got '%s'\n", flag, value);
            free(ids);
            return -1;
        }
        if (cnt == cap) {
            int *bigger = realloc(ids, sizeof *ids * (cap *= 2));
            if (!bigger)
                break;
            ids = bigger;
        }
        ids[cnt++] = (int)v;
        p = end;
    }
    if (!ids) {
        fprintf(stderr, "error: out of memory\n");
        return -1;
    }
    *out = ids;
    *n = cnt;
    return 0;
}

int qs_cli_parse(const char *cmd, int argc, char **argv, const qs_cli_opt *opts, int n_opts, const char **positional,
                 void (*usage)(FILE *out), bool *done)
{
    *done = false;
    for (int i = 1; i < argc; i++) {
        int matched = 0;
        for (int o = 0; o < n_opts && !matched; o++) {
            if (opts[o].value) {
                matched = qs_arg_value(argc, argv, &i, opts[o].flag, opts[o].value);
                if (matched < 0)
                    return *done = true, 2;
            } else if (qs_arg_is(argv[i], opts[o].flag)) {
                *opts[o].set = true;
                matched = 1;
            }
        }
        if (matched)
            continue;
        if (qs_arg_is(argv[i], "--help") || qs_arg_is(argv[i], "-h")) {
            usage(stdout);
            return *done = true, 0;
        }
        if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "error: %s: unknown option '%s'\n", cmd, argv[i]);
            usage(stderr);
            return *done = true, 2;
        }
        if (*positional) {
            fprintf(stderr, "error: %s: unexpected argument '%s'\n", cmd, argv[i]);
            return *done = true, 2;
        }
        *positional = argv[i];
    }
    return 0;
}
