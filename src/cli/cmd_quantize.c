/* cmd_quantize.c — placeholder until its issue lands; replaced by the real command. */
#include <stdio.h>

#include "cli/commands.h"

int qs_cmd_quantize(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "error: 'quantize' is not built yet\n");
    return 2;
}
