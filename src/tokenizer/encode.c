/* encode.c — text to ids, in HF's order: check UTF-8, cut out added tokens matched on the raw
 * text, normalise each remaining piece, cut out added tokens matched on normalised text,
 * pre-tokenize, run BPE on every word, then let the post-processor add BOS/EOS. */
#include <stdlib.h>
#include <string.h>
#include <unistr.h>

#include "tokenizer/tokenizer_internal.h"

typedef struct {
    const qs_tokenizer *tok;
    qs_tids *ids;
    qs_tbuf pre_buf;
    qs_err *err;
} encode_ctx;

static int encode_words(encode_ctx *c, const char *text, size_t len, bool at_origin)
{
    if (!c->tok->n_pre) /* no pre-tokenizer: the text is one word; no copy of it */
        return qs_bpe_word(c->tok, text, len, c->ids, c->err);
    qs_word *words;
    size_t n;
    const char *base;
    if (qs_pretokenize(c->tok, text, len, at_origin, &c->pre_buf, &base, &words, &n, c->err))
        return -1;
    for (size_t i = 0; i < n; i++)
        if (qs_bpe_word(c->tok, base + words[i].start, words[i].len, c->ids, c->err)) {
            free(words);
            return -1;
        }
    free(words);
    return 0;
}

static int encode_piece(encode_ctx *c, const char *text, size_t len, bool at_origin)
{
    const qs_tokenizer *tok = c->tok;
    char *norm = NULL;
    size_t nlen = len;
    if (tok->n_norm) {
        if (qs_normalize(tok, text, len, &norm, &nlen, c->err))
            return -1;
        text = norm;
    }
    int rc = 0;
    if (!tok->added_norm.n) {
        rc = encode_words(c, text, nlen, at_origin);
    } else {
        qs_segment *segs = NULL;
        size_t n = 0, cap = 0;
        if (qs_added_split(&tok->added_norm, text, nlen, &segs, &n, &cap))
            rc = qs_errf(c->err, "out of memory");
        for (size_t i = 0; i < n && !rc; i++) {
            if (segs[i].id >= 0)
                rc = qs_tids_push(c->ids, segs[i].id) ? qs_errf(c->err, "out of memory") : 0;
            else
                rc = encode_words(c, text + segs[i].start, segs[i].len, at_origin && segs[i].start == 0);
        }
        free(segs);
    }
    free(norm);
    return rc;
}

int qs_tokenizer_encode(const qs_tokenizer *tok, const char *text, size_t len, bool add_special_tokens, int32_t **ids,
                        size_t *n_ids, qs_err *err)
{
    if (!text && len)
        return qs_errf(err, "encode: NULL text");
    if (!text)
        text = "";
    const uint8_t *bad = u8_check((const uint8_t *)text, len);
    if (bad)
        return qs_errf(err, "encode: invalid UTF-8 at byte offset %zu (byte 0x%02X)", (size_t)(bad - (const uint8_t *)text),
                       *bad);
    qs_tids out = {0};
    encode_ctx c = {tok, &out, {0}, err};
    /* Every token covers at least one byte, so this never grows: growing by doubling would hold
     * the old and the new array at once, 12 bytes a token at the last step instead of 4; and
     * pages of it that no id reaches are never touched. */
    int rc = qs_tids_reserve(&out, len + tok->n_post_prefix + tok->n_post_suffix + 1) ? qs_errf(err, "out of memory") : 0;
    if (add_special_tokens && qs_tids_append(&out, tok->post_prefix, tok->n_post_prefix))
        rc = qs_errf(err, "out of memory");
    qs_segment *segs = NULL;
    size_t n = 0, cap = 0;
    if (!rc && qs_added_split(&tok->added_raw, text, len, &segs, &n, &cap))
        rc = qs_errf(err, "out of memory");
    for (size_t i = 0; i < n && !rc; i++) {
        if (segs[i].id >= 0)
            rc = qs_tids_push(&out, segs[i].id) ? qs_errf(err, "out of memory") : 0;
        else
            rc = encode_piece(&c, text + segs[i].start, segs[i].len, segs[i].start == 0);
    }
    free(segs);
    qs_tbuf_free(&c.pre_buf);
    if (!rc && add_special_tokens && qs_tids_append(&out, tok->post_suffix, tok->n_post_suffix))
        rc = qs_errf(err, "out of memory");
    if (!rc && !out.data)
        out.data = malloc(sizeof(int32_t)); /* an empty result is still a freeable array */
    if (rc || !out.data) {
        free(out.data);
        return rc ? -1 : qs_errf(err, "out of memory");
    }
    if (out.cap > out.len + 64) { /* the bound was room, not need: give the rest back (in place) */
        int32_t *fit = realloc(out.data, (out.len ? out.len : 1) * sizeof *fit);
        if (fit)
            out.data = fit;
    }
    *ids = out.data;
    *n_ids = out.len;
    return 0;
}
