/* cmd_chat_template.c — placeholder until its issue lands; replaced by the real command. */
#include <stdio.h>

#include "cli/commands.h"

int qs_cmd_chat_template(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "error: 'chat_template' is not built yet\n");
    return 2;
}
