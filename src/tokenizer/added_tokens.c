/* added_tokens.c — finds tokenizer.json "added_tokens" (special or not) in text before BPE sees
 * it: leftmost match wins, the longest token at that position first; single_word tokens only
 * match between non-word characters; lstrip / rstrip swallow the whitespace beside the token. */
#include <stdlib.h>
#include <string.h>
#include <unictype.h>
#include <unistr.h>

#include "tokenizer/tokenizer_internal.h"

static int by_len_desc(const void *a, const void *b)
{
    const qs_added_token *x = a, *y = b;
    if (x->len != y->len)
        return x->len < y->len ? 1 : -1;
    return x->id - y->id;
}

int qs_added_set_build(qs_added_set *set, const qs_added_token *toks, size_t n, bool normalized)
{
    memset(set, 0, sizeof *set);
    set->tok = malloc((n ? n : 1) * sizeof *set->tok);
    if (!set->tok)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (toks[i].normalized == normalized && toks[i].len)
            set->tok[set->n++] = toks[i]; /* shallow: content stays owned by the tokenizer */
    qsort(set->tok, set->n, sizeof *set->tok, by_len_desc);
    size_t count[256] = {0};
    for (size_t i = 0; i < set->n; i++)
        count[(uint8_t)set->tok[i].content[0]]++;
    for (int b = 0; b < 256; b++) {
        if (!count[b])
            continue;
        set->by_first[b] = malloc((count[b] + 1) * sizeof(int32_t));
        if (!set->by_first[b])
            return -1;
        size_t k = 0;
        for (size_t i = 0; i < set->n; i++)
            if ((uint8_t)set->tok[i].content[0] == b)
                set->by_first[b][k++] = (int32_t)i;
        set->by_first[b][k] = -1;
    }
    return 0;
}

void qs_added_set_free(qs_added_set *set)
{
    for (int b = 0; b < 256; b++)
        free(set->by_first[b]);
    free(set->tok);
    memset(set, 0, sizeof *set);
}

static bool is_word_char(ucs4_t c) { return c == '_' || uc_is_alnum(c); }

static bool is_space(ucs4_t c)
{
    return (c >= 9 && c <= 13) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) ||
           c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

/* The character that ends just before text + at (at > 0). */
static ucs4_t char_before(const char *text, size_t at, size_t *clen)
{
    size_t s = at - 1;
    while (s > 0 && ((unsigned char)text[s] & 0xC0) == 0x80)
        s--;
    ucs4_t c = 0xFFFD;
    u8_mbtouc(&c, (const uint8_t *)text + s, at - s);
    *clen = at - s;
    return c;
}

static ucs4_t char_at(const char *text, size_t at, size_t len, size_t *clen)
{
    ucs4_t c = 0xFFFD;
    int l = u8_mbtouc(&c, (const uint8_t *)text + at, len - at);
    *clen = l > 0 ? (size_t)l : 1;
    return c;
}

static int push_seg(qs_segment **segs, size_t *n, size_t *cap, size_t start, size_t len, int32_t id)
{
    if (id < 0 && !len)
        return 0;
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 16;
        qs_segment *s = realloc(*segs, *cap * sizeof *s);
        if (!s)
            return -1;
        *segs = s;
    }
    (*segs)[(*n)++] = (qs_segment){start, len, id};
    return 0;
}

int qs_added_split(const qs_added_set *set, const char *text, size_t len, qs_segment **segs, size_t *n, size_t *cap)
{
    size_t done = 0; /* text before this offset is already in segments */
    for (size_t i = 0; i < len; i++) {
        const int32_t *cands = set->by_first[(uint8_t)text[i]];
        if (!cands)
            continue;
        const qs_added_token *hit = NULL;
        for (; *cands >= 0; cands++) {
            const qs_added_token *t = &set->tok[*cands];
            if (t->len > len - i || memcmp(text + i, t->content, t->len))
                continue;
            if (t->single_word) {
                size_t cl;
                if (i > 0 && is_word_char(char_before(text, i, &cl)))
                    continue;
                if (i + t->len < len && is_word_char(char_at(text, i + t->len, len, &cl)))
                    continue;
            }
            hit = t;
            break;
        }
        if (!hit)
            continue;
        size_t start = i, stop = i + hit->len, cl;
        if (hit->lstrip)
            while (start > done && is_space(char_before(text, start, &cl)))
                start -= cl;
        if (hit->rstrip)
            while (stop < len && is_space(char_at(text, stop, len, &cl)))
                stop += cl;
        if (push_seg(segs, n, cap, done, start - done, -1) || push_seg(segs, n, cap, start, stop - start, hit->id))
            return -1;
        done = stop;
        i = stop - 1;
    }
    return push_seg(segs, n, cap, done, len - done, -1);
}
