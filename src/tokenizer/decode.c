/* decode.c — ids to text with HF semantics (clean_up_tokenization_spaces=false): token strings
 * go through the decoder chain (ByteLevel, Replace, ByteFallback, Fuse, Strip, Metaspace) as a
 * list, then are concatenated. Invalid UTF-8 that byte-level tokens produce becomes U+FFFD per
 * maximal invalid subpart, as Rust's from_utf8_lossy and the WHATWG decoder do. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tokenizer_internal.h"

static const char REPLACEMENT_CHAR[] = "\xEF\xBF\xBD";

int qs_utf8_lossy_append(qs_tbuf *out, const uint8_t *p, size_t n)
{
    size_t i = 0;
    while (i < n) {
        uint8_t b = p[i];
        size_t need;
        uint8_t lo = 0x80, hi = 0xBF;
        if (b < 0x80)
            need = 0;
        else if (b >= 0xC2 && b <= 0xDF)
            need = 1;
        else if (b >= 0xE0 && b <= 0xEF) {
            need = 2;
            if (b == 0xE0)
                lo = 0xA0;
            if (b == 0xED)
                hi = 0x9F;
        } else if (b >= 0xF0 && b <= 0xF4) {
            need = 3;
            if (b == 0xF0)
                lo = 0x90;
            if (b == 0xF4)
                hi = 0x8F;
        } else {
            if (qs_tbuf_append(out, REPLACEMENT_CHAR, 3))
                return -1;
            i++;
            continue;
        }
        size_t k = 1;
        for (; k <= need && i + k < n; k++) {
            uint8_t c = p[i + k];
            if (c < lo || c > hi)
                break;
            lo = 0x80;
            hi = 0xBF;
        }
        if (k == need + 1) {
            if (qs_tbuf_append(out, p + i, k))
                return -1;
        } else if (qs_tbuf_append(out, REPLACEMENT_CHAR, 3)) {
            return -1;
        }
        i += k;
    }
    return 0;
}

typedef struct {
    qs_tbuf *s;    /* token strings */
    int32_t *id;   /* id each string came from, -1 once steps have merged them */
    size_t n;
} tok_list;

static void list_free(tok_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        qs_tbuf_free(&l->s[i]);
    free(l->s);
    free(l->id);
    memset(l, 0, sizeof *l);
}

static int list_push(tok_list *l, const void *p, size_t n, int32_t id)
{
    qs_tbuf *s = realloc(l->s, (l->n + 1) * sizeof *s);
    if (!s)
        return -1;
    l->s = s;
    int32_t *ids = realloc(l->id, (l->n + 1) * sizeof *ids);
    if (!ids)
        return -1;
    l->id = ids;
    l->s[l->n] = (qs_tbuf){0};
    l->id[l->n] = id;
    return qs_tbuf_append(&l->s[l->n++], p, n);
}

/* Next UTF-8 char length at p (n bytes left). */
static size_t clen(const char *p, size_t n)
{
    uint8_t b = (uint8_t)*p;
    size_t l = b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
    return l > n ? n : l;
}

static int byte_level(const qs_tokenizer *tok, tok_list *in, tok_list *out)
{
    qs_tbuf bytes = {0};
    int rc = 0;
    for (size_t i = 0; i <= in->n && !rc; i++) {
        bool verbatim = i < in->n && in->id[i] >= 0 && tok->is_added[in->id[i]];
        if (i == in->n || verbatim) { /* flush the run of byte-level tokens */
            if (bytes.len) {
                qs_tbuf t = {0};
                rc = qs_utf8_lossy_append(&t, (const uint8_t *)bytes.data, bytes.len) ||
                     list_push(out, t.data, t.len, -1);
                qs_tbuf_free(&t);
                bytes.len = 0;
            }
            if (i < in->n && !rc)
                rc = list_push(out, in->s[i].data, in->s[i].len, in->id[i]);
            continue;
        }
        const char *p = in->s[i].data;
        size_t n = in->s[i].len, start = bytes.len;
        for (size_t j = 0; j < n && !rc;) {
            size_t l = clen(p + j, n - j);
            uint32_t cp = l == 1 ? (uint8_t)p[j] : l == 2 ? (((uint32_t)p[j] & 0x1F) << 6) | ((uint8_t)p[j + 1] & 0x3F) : 0xFFFFFFFF;
            int b = qs_byte_level_byte(cp);
            if (b < 0) { /* not a byte-level token: its own bytes */
                bytes.len = start;
                rc = qs_tbuf_append(&bytes, p, n);
                break;
            }
            uint8_t c = (uint8_t)b;
            rc = qs_tbuf_append(&bytes, &c, 1);
            j += l;
        }
    }
    qs_tbuf_free(&bytes);
    return rc;
}

static int replace(const qs_dec_step *st, tok_list *in, tok_list *out)
{
    size_t pl = strlen(st->pattern), cl = strlen(st->content);
    for (size_t i = 0; i < in->n; i++) {
        qs_tbuf t = {0};
        const char *p = in->s[i].data, *end = p + in->s[i].len;
        int rc = qs_tbuf_append(&t, "", 0);
        while (!rc && p < end) {
            const char *hit = pl ? memmem(p, (size_t)(end - p), st->pattern, pl) : NULL;
            size_t keep = hit ? (size_t)(hit - p) : (size_t)(end - p);
            rc = qs_tbuf_append(&t, p, keep) || (hit && qs_tbuf_append(&t, st->content, cl));
            p += keep + (hit ? pl : 0);
        }
        rc = rc || list_push(out, t.data, t.len, in->id[i]);
        qs_tbuf_free(&t);
        if (rc)
            return -1;
    }
    return 0;
}

static int byte_of_token(const qs_tbuf *s)
{
    /* "<0xNN>" with uppercase or lowercase hex */
    if (s->len != 6 || memcmp(s->data, "<0x", 3) || s->data[5] != '>')
        return -1;
    int v = 0;
    for (int k = 3; k < 5; k++) {
        char c = s->data[k];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0)
            return -1;
        v = v * 16 + d;
    }
    return v;
}

static int byte_fallback(tok_list *in, tok_list *out)
{
    qs_tbuf bytes = {0};
    int rc = 0;
    for (size_t i = 0; i <= in->n && !rc; i++) {
        int b = i < in->n ? byte_of_token(&in->s[i]) : -1;
        if (b >= 0) {
            uint8_t c = (uint8_t)b;
            rc = qs_tbuf_append(&bytes, &c, 1);
            continue;
        }
        if (bytes.len) {
            bool valid = true;
            qs_tbuf t = {0};
            rc = qs_utf8_lossy_append(&t, (const uint8_t *)bytes.data, bytes.len);
            valid = !rc && t.len == bytes.len && !memcmp(t.data, bytes.data, bytes.len);
            if (valid)
                rc = list_push(out, bytes.data, bytes.len, -1);
            else /* HF: one U+FFFD per byte of an invalid run */
                for (size_t k = 0; k < bytes.len && !rc; k++)
                    rc = list_push(out, REPLACEMENT_CHAR, 3, -1);
            qs_tbuf_free(&t);
            bytes.len = 0;
        }
        if (i < in->n && !rc)
            rc = list_push(out, in->s[i].data, in->s[i].len, in->id[i]);
    }
    qs_tbuf_free(&bytes);
    return rc;
}

static int fuse(tok_list *in, tok_list *out)
{
    qs_tbuf t = {0};
    int rc = qs_tbuf_append(&t, "", 0);
    for (size_t i = 0; i < in->n && !rc; i++)
        rc = qs_tbuf_append(&t, in->s[i].data, in->s[i].len);
    rc = rc || list_push(out, t.data, t.len, -1);
    qs_tbuf_free(&t);
    return rc;
}

static int strip(const qs_dec_step *st, tok_list *in, tok_list *out)
{
    size_t cl = strlen(st->content);
    for (size_t i = 0; i < in->n; i++) {
        const char *p = in->s[i].data;
        size_t b = 0, e = in->s[i].len;
        for (int k = 0; k < st->start && cl && e - b >= cl && !memcmp(p + b, st->content, cl); k++)
            b += cl;
        for (int k = 0; k < st->stop && cl && e - b >= cl && !memcmp(p + e - cl, st->content, cl); k++)
            e -= cl;
        if (list_push(out, p + b, e - b, in->id[i]))
            return -1;
    }
    return 0;
}

static int metaspace(const qs_dec_step *st, tok_list *in, tok_list *out)
{
    size_t rl = strlen(st->replacement);
    for (size_t i = 0; i < in->n; i++) {
        qs_tbuf t = {0};
        const char *p = in->s[i].data;
        size_t n = in->s[i].len;
        int rc = qs_tbuf_append(&t, "", 0);
        for (size_t j = 0; j < n && !rc;) {
            if (n - j >= rl && !memcmp(p + j, st->replacement, rl)) {
                if (!(i == 0 && st->strip_first))
                    rc = qs_tbuf_append(&t, " ", 1);
                j += rl;
            } else {
                rc = qs_tbuf_append(&t, p + j, 1);
                j++;
            }
        }
        rc = rc || list_push(out, t.data, t.len, in->id[i]);
        qs_tbuf_free(&t);
        if (rc)
            return -1;
    }
    return 0;
}

int qs_tokenizer_decode(const qs_tokenizer *tok, const int32_t *ids, size_t n_ids, bool skip_special, char **text,
                        qs_err *err)
{
    size_t len;
    return qs_tokenizer_decode_n(tok, ids, n_ids, skip_special, text, &len, err);
}

int qs_tokenizer_decode_n(const qs_tokenizer *tok, const int32_t *ids, size_t n_ids, bool skip_special, char **text,
                          size_t *len, qs_err *err)
{
    tok_list cur = {0};
    for (size_t i = 0; i < n_ids; i++) {
        int32_t id = ids[i];
        if (id < 0 || (size_t)id >= tok->vocab.n_ids || !tok->vocab.str[id]) {
            list_free(&cur);
            return qs_errf(err, "decode: unknown token id %d at position %zu (vocabulary has %zu ids)", id, i,
                           tok->vocab.n_ids);
        }
        if (skip_special && tok->is_special[id])
            continue;
        if (list_push(&cur, tok->vocab.str[id], tok->vocab.len[id], id)) {
            list_free(&cur);
            return qs_errf(err, "decode: out of memory");
        }
    }
    for (size_t k = 0; k < tok->n_dec; k++) {
        const qs_dec_step *st = &tok->dec[k];
        tok_list next = {0};
        int rc = 0;
        switch (st->kind) {
        case QS_DEC_BYTE_LEVEL: rc = byte_level(tok, &cur, &next); break;
        case QS_DEC_REPLACE: rc = replace(st, &cur, &next); break;
        case QS_DEC_BYTE_FALLBACK: rc = byte_fallback(&cur, &next); break;
        case QS_DEC_FUSE: rc = fuse(&cur, &next); break;
        case QS_DEC_STRIP: rc = strip(st, &cur, &next); break;
        case QS_DEC_METASPACE: rc = metaspace(st, &cur, &next); break;
        }
        list_free(&cur);
        cur = next;
        if (rc) {
            list_free(&cur);
            return qs_errf(err, "decode: out of memory");
        }
    }
    qs_tbuf out = {0};
    int rc = qs_tbuf_append(&out, "", 0);
    for (size_t i = 0; i < cur.n && !rc; i++) {
        if (!tok->has_decoder && i > 0) /* HF joins undecoded tokens with spaces */
            rc = qs_tbuf_append(&out, " ", 1);
        rc = rc || qs_tbuf_append(&out, cur.s[i].data, cur.s[i].len);
    }
    list_free(&cur);
    if (rc) {
        qs_tbuf_free(&out);
        return qs_errf(err, "decode: out of memory");
    }
    *text = out.data;
    *len = out.len;
    return 0;
}

void qs_dec_steps_free(qs_dec_step *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(s[i].pattern);
        free(s[i].content);
    }
    free(s);
}
