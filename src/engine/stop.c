/* stop.c — the stop-string matcher (stop.h). Text is appended to a pending buffer; the earliest
 * occurrence of any stop string in it ends the generation. Otherwise everything but the longest
 * suffix that is a proper prefix of some stop string is released. Because that suffix is always
 * held back, a stop string can only ever be found whole inside the pending buffer. */
#include "engine/stop.h"

#include <stdlib.h>
#include <string.h>

struct qs_stop_matcher {
    char **strings;
    size_t *lens;
    int n_strings;
    int32_t *ids;
    int n_ids;
    char *pending;
    size_t pending_len, pending_cap;
    char *out;
    size_t out_cap;
    int matched;    /* index of the stop string that matched, or -1 */
};

qs_stop_matcher *qs_stop_new(const char *const *stop_strings, int n_strings, const int32_t *stop_ids, int n_ids)
{
    return qs_stop_new_n(stop_strings, NULL, n_strings, stop_ids, n_ids);
}

qs_stop_matcher *qs_stop_new_n(const char *const *stop_strings, const size_t *lens, int n_strings,
                               const int32_t *stop_ids, int n_ids)
{
    qs_stop_matcher *m = calloc(1, sizeof(*m));
    if (!m)
        return NULL;
    m->matched = -1;
    m->strings = calloc((size_t)(n_strings > 0 ? n_strings : 1), sizeof(char *));
    m->lens = calloc((size_t)(n_strings > 0 ? n_strings : 1), sizeof(size_t));
    m->ids = malloc(sizeof(int32_t) * (size_t)(n_ids > 0 ? n_ids : 1));
    if (!m->strings || !m->lens || !m->ids) {
        qs_stop_free(m);
        return NULL;
    }
    for (int i = 0; i < n_strings; i++) {
        size_t len = !stop_strings[i] ? 0 : lens ? lens[i] : strlen(stop_strings[i]);
        if (!len)
            continue;
        m->strings[m->n_strings] = malloc(len + 1);
        if (!m->strings[m->n_strings]) {
            qs_stop_free(m);
            return NULL;
        }
        memcpy(m->strings[m->n_strings], stop_strings[i], len);
        m->strings[m->n_strings][len] = '\0';
        m->lens[m->n_strings++] = len;
    }
    for (int i = 0; i < n_ids; i++)
        m->ids[m->n_ids++] = stop_ids[i];
    return m;
}

void qs_stop_free(qs_stop_matcher *m)
{
    if (!m)
        return;
    for (int i = 0; i < m->n_strings; i++)
        free(m->strings[i]);
    free(m->strings);
    free(m->lens);
    free(m->ids);
    free(m->pending);
    free(m->out);
    free(m);
}

bool qs_stop_is_stop_token(const qs_stop_matcher *m, int32_t id)
{
    for (int i = 0; i < m->n_ids; i++)
        if (m->ids[i] == id)
            return true;
    return false;
}

bool qs_stop_matched(const qs_stop_matcher *m) { return m->matched >= 0; }
int qs_stop_matched_index(const qs_stop_matcher *m) { return m->matched; }

static bool reserve(char **buf, size_t *cap, size_t need)
{
    if (need <= *cap)
        return true;
    size_t c = *cap ? *cap : 64;
    while (c < need)
        c *= 2;
    char *nb = realloc(*buf, c);
    if (!nb)
        return false;
    *buf = nb;
    *cap = c;
    return true;
}

/* Moves pending[0..n) to the out buffer and shifts the rest down. */
static void release(qs_stop_matcher *m, size_t n, const char **out, size_t *out_len)
{
    if (!reserve(&m->out, &m->out_cap, n + 1)) {
        n = 0; /* out of memory: release nothing now, the flush retries */
    } else {
        memcpy(m->out, m->pending, n);
        m->out[n] = 0;
    }
    memmove(m->pending, m->pending + n, m->pending_len - n);
    m->pending_len -= n;
    *out = m->out ? m->out : "";
    *out_len = n;
}

/* Length of the longest suffix of pending that is a proper prefix of some stop string. */
static size_t held_suffix(const qs_stop_matcher *m)
{
    size_t best = 0;
    for (int i = 0; i < m->n_strings; i++) {
        size_t max = m->lens[i] - 1 < m->pending_len ? m->lens[i] - 1 : m->pending_len;
        for (size_t k = max; k > best; k--)
            if (!memcmp(m->pending + m->pending_len - k, m->strings[i], k)) {
                best = k;
                break;
            }
    }
    return best;
}

static const char *find_bytes(const char *hay, size_t hay_len, const char *needle, size_t n)
{
    if (n > hay_len)
        return NULL;
    for (size_t i = 0; i + n <= hay_len; i++)
        if (hay[i] == needle[0] && !memcmp(hay + i, needle, n))
            return hay + i;
    return NULL;
}

bool qs_stop_feed(qs_stop_matcher *m, const char *text, size_t len, const char **out, size_t *out_len)
{
    *out = "";
    *out_len = 0;
    if (m->matched >= 0)
        return true;
    if (!reserve(&m->pending, &m->pending_cap, m->pending_len + len + 1)) {
        /* cannot buffer: release what is held and this text is lost to matching only */
        release(m, m->pending_len, out, out_len);
        return false;
    }
    memcpy(m->pending + m->pending_len, text, len);
    m->pending_len += len;
    const char *first = NULL;
    for (int i = 0; i < m->n_strings; i++) {
        const char *hit = find_bytes(m->pending, m->pending_len, m->strings[i], m->lens[i]);
        if (hit && (!first || hit < first)) {
            first = hit;
            m->matched = i;
        }
    }
    if (first) {
        size_t keep = (size_t)(first - m->pending);
        release(m, keep, out, out_len);
        m->pending_len = 0;
        return true;
    }
    release(m, m->pending_len - held_suffix(m), out, out_len);
    return false;
}

void qs_stop_flush(qs_stop_matcher *m, const char **out, size_t *out_len)
{
    *out = "";
    *out_len = 0;
    if (m->matched >= 0 || m->pending_len == 0)
        return;
    release(m, m->pending_len, out, out_len);
}
