/* fuzz_tokenizer.c — libFuzzer target for the tokenizer's encode, decode and streaming decode:
 * a small committed Metaspace/byte-fallback tokenizer (tests/data/tokenizer/llama2_style of the
 * source tree the target was built from, so it runs from any directory, or
 * $QS_FUZZ_TOKENIZER_DIR) is loaded once; each input is encoded as text (invalid UTF-8 must be a
 * clean error) and, read as little int32 ids, decoded in one go and through qs_decode_stream
 * (unknown ids must be clean errors). Prompts and client-sent token ids are untrusted input.
 * Built only by `make fuzz` (clang -fsanitize=fuzzer -DQS_FUZZING). */
#ifdef QS_FUZZING
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tokenizer.h"

#ifndef QS_SOURCE_DIR
#define QS_SOURCE_DIR "." /* the Makefile passes the source tree's absolute path */
#endif

static qs_tokenizer *tok;

static void free_tokenizer(void)
{
    qs_tokenizer_free(tok);
    tok = NULL;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *dir = getenv("QS_FUZZ_TOKENIZER_DIR");
    if (!dir)
        dir = QS_SOURCE_DIR "/tests/data/tokenizer/llama2_style";
    qs_err err;
    if (qs_tokenizer_load(dir, &tok, &err) != 0) {
        fprintf(stderr, "fuzz_tokenizer: %s\n", err.msg);
        exit(1);
    }
    atexit(free_tokenizer);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    qs_err err;
    volatile size_t sink = 0;

    /* encode: a private, non-NUL-terminated copy of exactly `size` bytes */
    char *text = malloc(size ? size : 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    for (int special = 0; special < 2; special++) {
        int32_t *ids = NULL;
        size_t n_ids = 0;
        err.msg[0] = 0;
        if (qs_tokenizer_encode(tok, text, size, special, &ids, &n_ids, &err) == 0) {
            size_t vocab = qs_tokenizer_vocab_size(tok);
            for (size_t i = 0; i < n_ids; i++)
                if (ids[i] < 0 || (size_t)ids[i] >= vocab)
                    abort();
            free(ids);
        } else if (!err.msg[0]) {
            abort();
        }
    }
    free(text);

    /* decode: the bytes as int32 ids */
    size_t n = size / sizeof(int32_t);
    int32_t *ids = malloc(n ? n * sizeof(int32_t) : 1);
    if (!ids)
        return 0;
    memcpy(ids, data, n * sizeof(int32_t));
    for (int skip = 0; skip < 2; skip++) {
        char *out = NULL;
        size_t len = 0;
        err.msg[0] = 0;
        if (qs_tokenizer_decode_n(tok, ids, n, skip, &out, &len, &err) == 0) {
            for (size_t i = 0; i < len; i++)
                sink += (uint8_t)out[i];
            free(out);
        } else if (!err.msg[0]) {
            abort();
        }
    }

    /* streaming decode over the same ids: unknown ids are errors, the stream stays usable */
    qs_decode_stream *s = qs_decode_stream_new(tok, size & 1);
    if (s) {
        for (size_t i = 0; i < n; i++) {
            const char *piece = NULL;
            size_t plen = 0;
            err.msg[0] = 0;
            if (qs_decode_stream_push(s, ids[i], &piece, &plen, &err) == 0) {
                for (size_t k = 0; k < plen; k++)
                    sink += (uint8_t)piece[k];
            } else if (!err.msg[0]) {
                abort();
            }
        }
        const char *rest = NULL;
        size_t rlen = 0;
        if (qs_decode_stream_flush(s, &rest, &rlen) == 0)
            for (size_t k = 0; k < rlen; k++)
                sink += (uint8_t)rest[k];
        qs_decode_stream_free(s);
    }
    free(ids);
    (void)sink;
    return 0;
}
#endif
