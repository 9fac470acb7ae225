build/src/cli/cmd_backends.o: src/cli/cmd_backends.c src/cli/commands.h
src/cli/commands.h:
