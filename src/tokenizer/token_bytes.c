/* token_bytes.c — the bytes one token adds to a text when it is in the middle of it, as the
 * decoder chain would produce them: byte-level symbols mapped back to bytes (GPT-2 table),
 * "<0xNN>" byte-fallback tokens as their byte, Replace steps applied (Metaspace "▁" → " "),
 * added tokens verbatim. Leading-space stripping (Strip, Metaspace's first token) is left out
 * because it only touches the start of the whole text. The constraint engine (src/structured)
 * builds its vocabulary trie from these. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tokenizer_internal.h"

static int append(uint8_t **buf, size_t *len, size_t *cap, const void *p, size_t n)
{
    if (*len + n > *cap) {
        size_t c = (*cap ? *cap * 2 : 32) + n;
        uint8_t *q = realloc(*buf, c);
        if (!q)
            return -1;
        *buf = q;
        *cap = c;
    }
    memcpy(*buf + *len, p, n);
    *len += n;
    return 0;
}

static int hexv(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

int qs_tokenizer_token_bytes(const qs_tokenizer *tok, int32_t id, uint8_t **out, size_t *out_len)
{
    *out = NULL;
    *out_len = 0;
    const char *s = qs_tokenizer_id_to_token(tok, id);
    if (!s)
        return -1;
    size_t n = strlen(s), len = 0, cap = 0;
    uint8_t *buf = NULL;
    bool added = tok->is_added && tok->is_added[id];
    if (added || !tok->has_decoder) {
        if (append(&buf, &len, &cap, s, n))
            return -1;
    } else if (tok->byte_level) {
        for (size_t j = 0; j < n;) {
            uint8_t b0 = (uint8_t)s[j];
            size_t l = b0 < 0x80 ? 1 : b0 < 0xE0 ? 2 : b0 < 0xF0 ? 3 : 4;
            if (j + l > n)
                l = n - j;
            uint32_t cp = l == 1 ? b0 : l == 2 ? (((uint32_t)b0 & 0x1F) << 6) | ((uint8_t)s[j + 1] & 0x3F) : 0xFFFFFFFF;
            int b = qs_byte_level_byte(cp);
            if (b < 0) { /* not a byte-level symbol: the token's own bytes */
                len = 0;
                if (append(&buf, &len, &cap, s, n))
                    return -1;
                break;
            }
            uint8_t c = (uint8_t)b;
            if (append(&buf, &len, &cap, &c, 1)) {
                free(buf);
                return -1;
            }
            j += l;
        }
    } else if (tok->byte_fallback && n == 6 && !memcmp(s, "<0x", 3) && s[5] == '>' && hexv(s[3]) >= 0 &&
               hexv(s[4]) >= 0) {
        uint8_t c = (uint8_t)(hexv(s[3]) * 16 + hexv(s[4]));
        if (append(&buf, &len, &cap, &c, 1))
            return -1;
    } else {
        /* Replace / Metaspace steps in order over the token string */
        if (append(&buf, &len, &cap, s, n))
            return -1;
        for (size_t k = 0; k < tok->n_dec; k++) {
            const qs_dec_step *st = &tok->dec[k];
            const char *pat = st->kind == QS_DEC_REPLACE ? st->pattern : st->kind == QS_DEC_METASPACE ? st->replacement : NULL;
            const char *rep = st->kind == QS_DEC_REPLACE ? st->content : " ";
            if (!pat || !*pat)
                continue;
            size_t pl = strlen(pat), rl = strlen(rep), nl = 0, ncap = 0;
            uint8_t *nb = NULL;
            for (size_t j = 0; j < len;) {
                if (len - j >= pl && !memcmp(buf + j, pat, pl)) {
                    if (append(&nb, &nl, &ncap, rep, rl))
                        goto oom;
                    j += pl;
                } else {
                    if (append(&nb, &nl, &ncap, buf + j, 1))
                        goto oom;
                    j++;
                }
                continue;
            oom:
                free(nb);
                free(buf);
                return -1;
            }
            free(buf);
            buf = nb;
            len = nl;
            cap = ncap;
        }
    }
    *out = buf;
    *out_len = len;
    return 0;
}
