build/src/cli/cmd_init_model.o: src/cli/cmd_init_model.c \
 src/cli/commands.h
src/cli/commands.h:
