/* decode_stream.c — incremental detokenisation for streaming responses and stop strings. Like
 * HF's DecodeStream it decodes a small window twice, ids[prefix..read) and ids[prefix..), and
 * emits the difference once it no longer ends in U+FFFD (an incomplete UTF-8 character), so
 * decoders that treat the first token specially (Strip, Metaspace) behave as in a full decode
 * and the pieces concatenate to exactly the full decode. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tokenizer_internal.h"

struct qs_decode_stream {
    const qs_tokenizer *tok;
    bool skip_special;
    qs_tids ids;
    size_t prefix, read; /* window start, and end of what has been emitted */
    char *out;           /* last returned text */
};

qs_decode_stream *qs_decode_stream_new(const qs_tokenizer *tok, bool skip_special)
{
    qs_decode_stream *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->tok = tok;
    s->skip_special = skip_special;
    return s;
}

void qs_decode_stream_free(qs_decode_stream *s)
{
    if (!s)
        return;
    free(s->ids.data);
    free(s->out);
    free(s);
}

static bool ends_incomplete(const char *t, size_t n) { return n >= 3 && !memcmp(t + n - 3, "\xEF\xBF\xBD", 3); }

/* Decodes the window and sets s->out to the text after the already-emitted part. final: emit
 * even an incomplete tail. */
static int step(qs_decode_stream *s, bool final, const char **out, size_t *out_len, qs_err *err)
{
    char *before = NULL, *after = NULL;
    free(s->out);
    s->out = NULL;
    *out = "";
    *out_len = 0;
    size_t bl, al;
    if (qs_tokenizer_decode_n(s->tok, s->ids.data + s->prefix, s->read - s->prefix, s->skip_special, &before, &bl, err) ||
        qs_tokenizer_decode_n(s->tok, s->ids.data + s->prefix, s->ids.len - s->prefix, s->skip_special, &after, &al,
                              err)) {
        free(before);
        return -1;
    }
    if (al > bl && (final || !ends_incomplete(after, al)) && !memcmp(before, after, bl)) {
        memmove(after, after + bl, al - bl + 1);
        s->out = after;
        *out = after;
        *out_len = al - bl;
        after = NULL;
        s->prefix = s->read;
        s->read = s->ids.len;
    }
    free(before);
    free(after);
    return 0;
}

int qs_decode_stream_prime(qs_decode_stream *s, const int32_t *context, size_t n)
{
    size_t keep = n < QS_DECODE_CONTEXT ? n : QS_DECODE_CONTEXT;
    for (size_t i = n - keep; i < n; i++)
        if (qs_tids_push(&s->ids, context[i]))
            return -1;
    s->prefix = 0;
    s->read = s->ids.len;
    return 0;
}

int qs_decode_stream_push(qs_decode_stream *s, int32_t id, const char **out, size_t *out_len, qs_err *err)
{
    const qs_tokenizer *tok = s->tok;
    *out = "";
    *out_len = 0;
    if (id < 0 || (size_t)id >= tok->vocab.n_ids || !tok->vocab.str[id])
        return qs_errf(err, "decode: unknown token id %d (vocabulary has %zu ids)", id, tok->vocab.n_ids);
    if (qs_tids_push(&s->ids, id))
        return qs_errf(err, "decode: out of memory");
    return step(s, false, out, out_len, err);
}

int qs_decode_stream_flush(qs_decode_stream *s, const char **out, size_t *out_len)
{
    qs_err err;
    *out = "";
    *out_len = 0;
    if (s->read == s->ids.len)
        return 0;
    return step(s, true, out, out_len, &err);
}
