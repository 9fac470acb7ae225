/* structured_fuzz.h — shared body of the structured-output fuzz targets
 * (fuzz_structured_{schema,regex,gbnf}.c): compile the input as the given kind (errors must be
 * clean), and when it compiles, drive a matcher over a small byte vocabulary: masks, accepting
 * masked tokens, and feeding the input's own bytes. */
#ifndef QS_FUZZ_STRUCTURED_H
#define QS_FUZZ_STRUCTURED_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "structured/structured.h"

static qs_vocab_trie *fuzz_trie;

static void fuzz_free_trie(void) { qs_vocab_trie_free(fuzz_trie); }

/* 256 single bytes, some multi-byte pieces, one end token. */
static void fuzz_make_trie(void)
{
    static const char *pieces[] = {"{\"", "\":", "\",", "true", "null", "ab", "12", "\xc3\xa9", "\\u00", "},"};
    enum { N = 256 + 10 + 1 };
    static uint8_t store[256];
    const uint8_t *bytes[N];
    int lens[N];
    for (int i = 0; i < 256; i++) {
        store[i] = (uint8_t)i;
        bytes[i] = &store[i];
        lens[i] = 1;
    }
    for (int i = 0; i < 10; i++) {
        bytes[256 + i] = (const uint8_t *)pieces[i];
        lens[256 + i] = (int)strlen(pieces[i]);
    }
    bytes[N - 1] = NULL;
    lens[N - 1] = 0;
    int32_t end = N - 1;
    qs_err err;
    fuzz_trie = qs_vocab_trie_new(N, bytes, lens, &end, 1, &err);
    if (!fuzz_trie)
        abort();
    atexit(fuzz_free_trie);
}

static int fuzz_structured(qs_so_kind kind, const uint8_t *data, size_t size)
{
    if (!fuzz_trie)
        fuzz_make_trie();
    qs_so_options opt = {.uncached = true};
    qs_err err;
    qs_grammar *g = qs_grammar_compile(kind, (const char *)data, size, &opt, &err);
    if (!g)
        return 0;
    qs_matcher *m = qs_matcher_new(g, fuzz_trie);
    if (!m) {
        qs_grammar_release(g);
        return 0;
    }
    uint32_t mask[(256 + 11 + 31) / 32];
    uint32_t pick = 2166136261u;
    for (size_t i = 0; i < size; i++)
        pick = (pick ^ data[i]) * 16777619u;
    for (int step = 0; step < 24; step++) {
        int n = qs_matcher_fill_mask(m, mask);
        if (n <= 0)
            break;
        int k = (int)(pick % (uint32_t)n);
        pick = pick * 1103515245u + 12345u;
        int id = -1;
        for (int i = 0; i < qs_vocab_trie_size(fuzz_trie) && id < 0; i++)
            if ((mask[i >> 5] >> (i & 31) & 1) && k-- == 0)
                id = i;
        if (id < 0 || !qs_matcher_accept_token(m, id))
            abort(); /* a masked token must be accepted */
        if (qs_matcher_ended(m) || qs_matcher_is_terminated(m))
            break;
    }
    qs_matcher_free(m);
    (void)qs_grammar_matches(g, data, size); /* the input's own bytes as an output */
    qs_grammar_release(g);
    return 0;
}

#endif
