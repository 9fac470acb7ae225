build/src/cli/cmd_chat_template.o: src/cli/cmd_chat_template.c \
 src/cli/commands.h
src/cli/commands.h:
