build/src/cli/cmd_serve.o: src/cli/cmd_serve.c src/cli/commands.h
src/cli/commands.h:
