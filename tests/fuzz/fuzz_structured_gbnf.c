/* fuzz_structured_gbnf.c — libFuzzer target for the structured-output compiler of a GBNF grammar
 * (src/structured): any input must compile or fail cleanly, and a grammar that compiles must
 * drive a matcher whose masked tokens are always accepted (tests/fuzz/structured_fuzz.h).
 * Requests carry these specifications, so they are untrusted input.
 * Built only by `make fuzz` (clang -fsanitize=fuzzer -DQS_FUZZING). */
#ifdef QS_FUZZING
#include "structured_fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return fuzz_structured(QS_SO_GBNF, data, size); }
#endif
