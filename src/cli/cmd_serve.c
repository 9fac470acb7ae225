/* cmd_serve.c — placeholder until its issue lands; replaced by the real command. */
#include <stdio.h>

#include "cli/commands.h"

int qs_cmd_serve(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "error: 'serve' is not built yet\n");
    return 2;
}
