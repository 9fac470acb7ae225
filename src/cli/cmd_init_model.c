/* cmd_init_model.c — placeholder until its issue lands; replaced by the real command. */
#include <stdio.h>

#include "cli/commands.h"

int qs_cmd_init_model(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "error: 'init_model' is not built yet\n");
    return 2;
}
