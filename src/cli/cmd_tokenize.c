/* cmd_tokenize.c — placeholder until its issue lands; replaced by the real command. */
#include <stdio.h>

#include "cli/commands.h"

int qs_cmd_tokenize(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "error: 'tokenize' is not built yet\n");
    return 2;
}
