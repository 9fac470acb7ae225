build/src/cli/cmd_quantize.o: src/cli/cmd_quantize.c src/cli/commands.h
src/cli/commands.h:
