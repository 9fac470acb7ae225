/* jinja_str.c — the string transforms filters and methods share, with Python's semantics on
 * code points (libunistring for case mapping): strip with an optional character set, upper /
 * lower / capitalize / title, and replace with a count and the render's string-size limit. */
#include <stdint.h>
#include <string.h>
#include <unicase.h>
#include <unistr.h>

#include "jinja/jinja_str.h"

qs_jv *qs_jj_str_from_buf(qs_jj_arena *a, qs_jj_buf *b)
{
    qs_jv *v = qs_jv_str(a, b->data ? b->data : "", b->len);
    qs_jj_buf_free(b);
    return v;
}

static void put_cp(qs_jj_buf *b, unsigned cp)
{
    uint8_t o[6];
    int n = u8_uctomb(o, cp, (int)sizeof o);
    if (n > 0)
        qs_jj_buf_put(b, (const char *)o, (size_t)n);
}

static bool cp_in(unsigned cp, const qs_jv *chars)
{
    unsigned c;
    for (size_t i = 0; i < chars->str.len;) {
        i += qs_jj_utf8_decode(chars->str.s + i, chars->str.len - i, &c);
        if (c == cp)
            return true;
    }
    return false;
}

qs_jv *qs_jj_str_strip(qs_jj_arena *a, const qs_jv *s, const qs_jv *chars, bool left, bool right)
{
    bool use_chars = chars && chars->kind == QS_JV_STRING;
    const char *p = s->str.s;
    size_t b = 0, e = s->str.len;
    unsigned cp;
    if (left)
        while (b < e) {
            size_t k = qs_jj_utf8_decode(p + b, e - b, &cp);
            if (use_chars ? !cp_in(cp, chars) : !qs_jj_is_space_cp(cp))
                break;
            b += k;
        }
    if (right)
        while (e > b) {
            size_t start = e - 1;
            while (start > b && ((unsigned char)p[start] & 0xc0) == 0x80)
                start--;
            qs_jj_utf8_decode(p + start, e - start, &cp);
            if (use_chars ? !cp_in(cp, chars) : !qs_jj_is_space_cp(cp))
                break;
            e = start;
        }
    return qs_jv_str(a, p + b, e - b);
}

static bool is_cased(unsigned cp) { return uc_tolower(cp) != cp || uc_toupper(cp) != cp; }

static bool is_title_separator(unsigned cp)
{
    return cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<' || qs_jj_is_space_cp(cp);
}

qs_jv *qs_jj_str_case(qs_jj_arena *a, const qs_jv *s, char mode)
{
    if (mode == 'u' || mode == 'l') {
        size_t n = 0;
        uint8_t *r = (mode == 'u' ? u8_toupper : u8_tolower)((const uint8_t *)s->str.s, s->str.len, NULL, NULL, NULL, &n);
        if (!r)
            return qs_jv_str(a, s->str.s, s->str.len);
        qs_jv *v = qs_jv_str(a, (const char *)r, n);
        free(r);
        return v;
    }
    qs_jj_buf b = {0};
    bool start = true, prev_cased = false;
    unsigned cp;
    for (size_t i = 0; i < s->str.len;) {
        i += qs_jj_utf8_decode(s->str.s + i, s->str.len - i, &cp);
        if (mode == 'c') { /* str.capitalize: first upper, rest lower */
            put_cp(&b, start ? uc_totitle(cp) : uc_tolower(cp));
            start = false;
        } else if (mode == 't') { /* Jinja's title filter: capitalise after - ( { [ < and spaces */
            if (is_title_separator(cp)) {
                put_cp(&b, cp);
                start = true;
            } else {
                put_cp(&b, start ? uc_toupper(cp) : uc_tolower(cp));
                start = false;
            }
        } else { /* 'T': Python's str.title */
            put_cp(&b, prev_cased ? uc_tolower(cp) : uc_totitle(cp));
            prev_cased = is_cased(cp);
        }
    }
    return qs_jj_str_from_buf(a, &b);
}

qs_jv *qs_jj_str_replace(qs_jj_ctx *ctx, int line, const qs_jv *s, const qs_jv *old, const qs_jv *new_,
                         long long count)
{
    qs_jj_arena *a = ctx->arena;
    qs_jj_buf b = {0};
    const char *p = s->str.s, *end = p + s->str.len;
    if (old->str.len == 0) { /* Python inserts new_ between every character */
        unsigned cp;
        long long done = 0;
        if ((s->str.len + 1) * (new_->str.len + 1) > QS_JJ_MAX_STRING)
            return qs_jj_fail(ctx, line, "replace() result exceeds %zu MiB", QS_JJ_MAX_STRING >> 20);
        for (size_t i = 0; i <= s->str.len;) {
            if (count < 0 || done < count) {
                qs_jj_buf_put(&b, new_->str.s, new_->str.len);
                done++;
            }
            if (i == s->str.len)
                break;
            size_t k = qs_jj_utf8_decode(p + i, s->str.len - i, &cp);
            qs_jj_buf_put(&b, p + i, k);
            i += k;
        }
        return qs_jj_str_from_buf(a, &b);
    }
    long long done = 0;
    while (p < end) {
        if (b.len > QS_JJ_MAX_STRING) {
            qs_jj_buf_free(&b);
            return qs_jj_fail(ctx, line, "replace() result exceeds %zu MiB", QS_JJ_MAX_STRING >> 20);
        }
        const char *hit = (count < 0 || done < count) ? memmem(p, (size_t)(end - p), old->str.s, old->str.len) : NULL;
        if (!hit)
            break;
        qs_jj_buf_put(&b, p, (size_t)(hit - p));
        qs_jj_buf_put(&b, new_->str.s, new_->str.len);
        p = hit + old->str.len;
        done++;
    }
    qs_jj_buf_put(&b, p, (size_t)(end - p));
    return qs_jj_str_from_buf(a, &b);
}
