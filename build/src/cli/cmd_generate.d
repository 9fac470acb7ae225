build/src/cli/cmd_generate.o: src/cli/cmd_generate.c src/cli/commands.h
src/cli/commands.h:
