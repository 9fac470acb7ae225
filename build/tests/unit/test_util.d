build/tests/unit/test_util.o: tests/unit/test_util.c src/cli/args.h \
 src/util/error.h src/util/fileio.h src/util/parallel.h
src/cli/args.h:
src/util/error.h:
src/util/fileio.h:
src/util/parallel.h:
