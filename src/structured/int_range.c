/* int_range.c — integer bounds (JSON Schema minimum / maximum on "integer") as a regular
 * expression over decimal digits, by the classic split into equal-length digit ranges. Integers
 * are written without leading zeros and with at most QS_INT_MAX_DIGITS digits (larger ones lose
 * precision in most JSON readers anyway), which also keeps a weak model from emitting digits
 * forever. */
#include "structured/int_range.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/grow.h"

typedef struct sbuf {
    char *p;
    int n, cap;
    bool oom;
} sbuf;

static void put(sbuf *s, const char *t)
{
    int l = (int)strlen(t);
    if (s->oom)
        return;
    char *q = qs_grow(s->p, &s->cap, s->n + l + 1, 128, 1);
    if (!q) {
        s->oom = true;
        return;
    }
    s->p = q;
    memcpy(s->p + s->n, t, (size_t)l + 1);
    s->n += l;
}

static void putc1(sbuf *s, char c) { put(s, (char[]){c, 0}); }

static int ndigits(long long v)
{
    int n = 1;
    while (v >= 10) {
        v /= 10;
        n++;
    }
    return n;
}

static long long pow10ll(int n)
{
    long long v = 1;
    while (n-- > 0)
        v *= 10;
    return v;
}

/* lo, hi: digit strings of equal length (lo <= hi); emits an alternation-free-at-top group. */
static void same_len(sbuf *s, const char *lo, const char *hi, int len)
{
    int p = 0;
    while (p < len && lo[p] == hi[p])
        p++;
    for (int i = 0; i < p; i++)
        putc1(s, lo[i]);
    if (p == len)
        return;
    int rest = len - p - 1;
    char x = lo[p], y = hi[p];
    bool lo_zeros = true, hi_nines = true;
    for (int i = p + 1; i < len; i++) {
        lo_zeros &= lo[i] == '0';
        hi_nines &= hi[i] == '9';
    }
    char buf[64];
    if (rest == 0 || (lo_zeros && hi_nines)) {
        snprintf(buf, sizeof buf, "[%c-%c]", x, y);
        put(s, buf);
        if (rest) {
            snprintf(buf, sizeof buf, "[0-9]{%d}", rest);
            put(s, buf);
        }
        return;
    }
    put(s, "(?:");
    bool first = true;
    char mid_lo = x, mid_hi = y;
    if (!lo_zeros) {
        char nines[32];
        memset(nines, '9', (size_t)rest);
        putc1(s, x);
        same_len(s, lo + p + 1, nines, rest);
        first = false;
        mid_lo = (char)(x + 1);
    }
    if (!hi_nines)
        mid_hi = (char)(y - 1);
    if (mid_lo <= mid_hi) {
        if (!first)
            putc1(s, '|');
        snprintf(buf, sizeof buf, "[%c-%c][0-9]{%d}", mid_lo, mid_hi, rest);
        put(s, buf);
        first = false;
    }
    if (!hi_nines) {
        char zeros[32];
        memset(zeros, '0', (size_t)rest);
        if (!first)
            putc1(s, '|');
        putc1(s, y);
        same_len(s, zeros, hi + p + 1, rest);
    }
    putc1(s, ')');
}

/* Non-negative [a, b] (b < 0: unbounded above, up to the digit limit). */
static void nonneg(sbuf *s, long long a, long long b)
{
    int la = ndigits(a), lb = b < 0 ? QS_INT_MAX_DIGITS : ndigits(b);
    bool first = true;
    put(s, "(?:");
    for (int len = la; len <= lb; len++) {
        long long lo = len == la ? a : pow10ll(len - 1);
        long long hi = (b >= 0 && len == lb) ? b : pow10ll(len) - 1;
        if (len == 1 && lo > 0 && a == 0)
            lo = 0;
        char los[32], his[32];
        snprintf(los, sizeof los, "%0*lld", len, lo);
        snprintf(his, sizeof his, "%0*lld", len, hi);
        if (!first)
            putc1(s, '|');
        first = false;
        same_len(s, los, his, len);
    }
    putc1(s, ')');
}

char *qs_int_range_regex(bool has_lo, long long lo, bool has_hi, long long hi)
{
    const long long limit = pow10ll(QS_INT_MAX_DIGITS) - 1;
    if (has_lo && lo < -limit)
        has_lo = false;
    if (has_hi && hi > limit)
        has_hi = false;
    if (has_lo && has_hi && lo > hi)
        return NULL;
    sbuf s = {0};
    put(&s, "(?:");
    bool first = true;
    /* negative part: -[max(1,-hi) .. -lo] */
    if (!has_lo || lo < 0) {
        long long nlo = has_hi && hi < 0 ? -hi : 1;
        long long nhi = has_lo ? -lo : -1;
        put(&s, "-");
        nonneg(&s, nlo, nhi);
        first = false;
    }
    if (!has_hi || hi >= 0) {
        long long plo = has_lo && lo > 0 ? lo : 0;
        long long phi = has_hi ? hi : -1;
        if (!first)
            putc1(&s, '|');
        nonneg(&s, plo, phi);
    }
    putc1(&s, ')');
    if (s.oom) {
        free(s.p);
        return NULL;
    }
    return s.p;
}
