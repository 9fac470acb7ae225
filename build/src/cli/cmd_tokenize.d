build/src/cli/cmd_tokenize.o: src/cli/cmd_tokenize.c src/cli/commands.h
src/cli/commands.h:
