build/src/cli/cmd_detokenize.o: src/cli/cmd_detokenize.c \
 src/cli/commands.h
src/cli/commands.h:
