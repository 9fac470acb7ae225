build/src/util/fileio.o: src/util/fileio.c src/util/fileio.h \
 src/util/error.h
src/util/fileio.h:
src/util/error.h:
