/* normalize.c — tokenizer.json normalizers applied to one text segment: Unicode normal forms
 * (libunistring), Replace (literal pattern), Prepend, Lowercase and Strip, in sequence. HF runs
 * them on each piece between added tokens, so Prepend("▁") marks every such piece. */
#include <stdlib.h>
#include <string.h>
#include <unicase.h>
#include <unistr.h>
#include <uninorm.h>

#include "tokenizer/tokenizer_internal.h"

static bool all_ascii(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] & 0x80)
            return false;
    return true;
}

static int normal_form(uninorm_t nf, qs_tbuf *cur, qs_err *err)
{
    if (all_ascii(cur->data, cur->len))
        return 0; /* ASCII is invariant under every normal form */
    size_t n = 0;
    uint8_t *r = u8_normalize(nf, (const uint8_t *)cur->data, cur->len, NULL, &n);
    if (!r)
        return qs_errf(err, "normalizer: Unicode normalisation failed");
    cur->len = 0;
    int rc = qs_tbuf_append(cur, r, n);
    free(r);
    return rc ? qs_errf(err, "normalizer: out of memory") : 0;
}

/* In place, so that a long prompt is never held twice: a longer replacement first moves the text to
 * the end of the grown buffer and writes from the start, which never overtakes the reading. */
static int replace_all(qs_tbuf *cur, const char *pat, const char *with, qs_err *err)
{
    size_t pl = strlen(pat), wl = strlen(with);
    if (!pl || !cur->len)
        return 0;
    size_t hits = 0;
    for (const char *q = cur->data; (q = memmem(q, (size_t)(cur->data + cur->len - q), pat, pl)); q += pl)
        hits++;
    if (!hits)
        return 0;
    size_t new_len = cur->len - hits * pl + hits * wl, shift = wl > pl ? new_len - cur->len : 0;
    if (shift) {
        if (qs_tbuf_reserve(cur, shift))
            return qs_errf(err, "normalizer: out of memory");
        memmove(cur->data + shift, cur->data, cur->len);
    }
    char *w = cur->data;
    const char *r = cur->data + shift, *end = cur->data + shift + cur->len;
    while (r < end) {
        const char *hit = memmem(r, (size_t)(end - r), pat, pl);
        size_t keep = hit ? (size_t)(hit - r) : (size_t)(end - r);
        memmove(w, r, keep);
        w += keep;
        r += keep;
        if (hit) {
            memcpy(w, with, wl);
            w += wl;
            r += pl;
        }
    }
    cur->len = new_len;
    cur->data[new_len] = '\0';
    return 0;
}

static bool is_ws_at(const char *s, size_t n, size_t *clen)
{
    /* Unicode White_Space, as Rust's char::is_whitespace. */
    ucs4_t c;
    int l = u8_mbtoucr(&c, (const uint8_t *)s, n);
    if (l <= 0)
        return false;
    *clen = (size_t)l;
    return (c >= 9 && c <= 13) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) ||
           c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

static void strip(qs_tbuf *cur, bool left, bool right)
{
    size_t b = 0, e = cur->len, cl;
    while (left && b < e && is_ws_at(cur->data + b, e - b, &cl))
        b += cl;
    while (right && e > b) {
        size_t s = e - 1;
        while (s > b && ((unsigned char)cur->data[s] & 0xC0) == 0x80)
            s--;
        if (!is_ws_at(cur->data + s, e - s, &cl))
            break;
        e = s;
    }
    memmove(cur->data, cur->data + b, e - b);
    cur->len = e - b;
    cur->data[cur->len] = '\0';
}

/* Room for what the Prepend and Replace steps can make of len bytes (at most 4 times len), taken
 * at once: a buffer grown later is copied and can leave the old one resident beside it, so a long
 * prompt would be held twice. */
static size_t room_for(const qs_tokenizer *tok, size_t len)
{
    size_t room = len;
    for (size_t i = 0; i < tok->n_norm; i++) {
        const qs_norm_step *st = &tok->norm[i];
        size_t pl = st->pattern ? strlen(st->pattern) : 0, wl = st->content ? strlen(st->content) : 0;
        if (st->kind == QS_NORM_PREPEND)
            room += wl;
        else if (st->kind == QS_NORM_REPLACE && pl && wl > pl)
            room += room / pl * (wl - pl);
        if (room > 4 * len + 64)
            return 4 * len + 64;
    }
    return room;
}

int qs_normalize(const qs_tokenizer *tok, const char *text, size_t len, char **out, size_t *out_len, qs_err *err)
{
    qs_tbuf cur = {0};
    if (qs_tbuf_reserve(&cur, room_for(tok, len)) || qs_tbuf_append(&cur, text, len))
        return qs_errf(err, "normalizer: out of memory");
    for (size_t i = 0; i < tok->n_norm; i++) {
        const qs_norm_step *st = &tok->norm[i];
        int rc = 0;
        switch (st->kind) {
        case QS_NORM_NFC: rc = normal_form(UNINORM_NFC, &cur, err); break;
        case QS_NORM_NFD: rc = normal_form(UNINORM_NFD, &cur, err); break;
        case QS_NORM_NFKC: rc = normal_form(UNINORM_NFKC, &cur, err); break;
        case QS_NORM_NFKD: rc = normal_form(UNINORM_NFKD, &cur, err); break;
        case QS_NORM_REPLACE: rc = replace_all(&cur, st->pattern, st->content, err); break;
        case QS_NORM_PREPEND:
            if (cur.len) {
                size_t cl = strlen(st->content); /* in place, in the room taken at the start */
                if (qs_tbuf_reserve(&cur, cl)) {
                    rc = qs_errf(err, "normalizer: out of memory");
                } else {
                    memmove(cur.data + cl, cur.data, cur.len + 1);
                    memcpy(cur.data, st->content, cl);
                    cur.len += cl;
                }
            }
            break;
        case QS_NORM_LOWERCASE:
            if (cur.len) {
                size_t n = 0;
                uint8_t *r = u8_tolower((const uint8_t *)cur.data, cur.len, NULL, NULL, NULL, &n);
                if (!r) {
                    rc = qs_errf(err, "normalizer: Lowercase failed");
                    break;
                }
                cur.len = 0;
                rc = qs_tbuf_append(&cur, r, n) ? qs_errf(err, "normalizer: out of memory") : 0;
                free(r);
            }
            break;
        case QS_NORM_STRIP: strip(&cur, st->strip_left, st->strip_right); break;
        }
        if (rc) {
            qs_tbuf_free(&cur);
            return -1;
        }
    }
    *out = cur.data;
    *out_len = cur.len;
    return 0;
}

void qs_norm_steps_free(qs_norm_step *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(s[i].pattern);
        free(s[i].content);
    }
    free(s);
}
