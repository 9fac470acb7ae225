build/src/util/error.o: src/util/error.c src/util/error.h
src/util/error.h:
