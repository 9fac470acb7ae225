/* pretokenize.c — tokenizer.json pre-tokenizers: Split (the regex from the JSON, run by PCRE2 in
 * UTF + UCP mode with JIT), ByteLevel (optional prefix space and the GPT-2 regex; the byte to
 * unicode mapping itself is done by BPE on raw bytes) and Metaspace (' ' -> '▁', prepend scheme,
 * optional split). Each step turns the list of pieces into a finer one. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tokenizer_internal.h"

typedef struct {
    size_t start, len;
    bool at_origin; /* the piece begins at offset 0 of the original input */
} piece;

typedef struct {
    piece *p;
    size_t n, cap;
} piece_list;

static int push_piece(piece_list *l, size_t start, size_t len, bool at_origin)
{
    if (!len)
        return 0;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        piece *p = realloc(l->p, cap * sizeof *p);
        if (!p)
            return -1;
        l->p = p;
        l->cap = cap;
    }
    l->p[l->n++] = (piece){start, len, at_origin};
    return 0;
}

pcre2_code *qs_regex_compile(const char *pattern, const char *what, qs_err *err)
{
    int code;
    PCRE2_SIZE at;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP, &code, &at, NULL);
    if (!re) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(code, msg, sizeof msg);
        qs_errf(err, "%s: regex '%s' does not compile at offset %zu: %s", what, pattern, (size_t)at, (char *)msg);
        return NULL;
    }
    pcre2_jit_compile(re, PCRE2_JIT_COMPLETE); /* falls back to the interpreter if JIT is unavailable */
    return re;
}

typedef struct {
    size_t start, len;
    bool match;
} span;

/* Splits one piece by a regex according to behavior; appends to out. */
static int split_piece(const char *buf, const piece *pc, pcre2_code *re, qs_split_behavior behavior, bool invert,
                       pcre2_match_data *md, piece_list *out, qs_err *err)
{
    span *sp = NULL;
    size_t n_sp = 0, cap_sp = 0, pos = 0, last = 0;
    const char *s = buf + pc->start;
    int rc = 0;
#define ADD_SPAN(a, l, m)                                                                                              \
    do {                                                                                                               \
        if ((l) > 0) {                                                                                                 \
            if (n_sp == cap_sp) {                                                                                      \
                cap_sp = cap_sp ? cap_sp * 2 : 32;                                                                     \
                span *t = realloc(sp, cap_sp * sizeof *t);                                                             \
                if (!t) {                                                                                              \
                    rc = qs_errf(err, "pre-tokenizer: out of memory");                                                 \
                    goto done;                                                                                         \
                }                                                                                                      \
                sp = t;                                                                                                \
            }                                                                                                          \
            sp[n_sp++] = (span){(a), (l), (m) != invert};                                                              \
        }                                                                                                              \
    } while (0)
    while (pos <= pc->len) {
        int r = pcre2_match(re, (PCRE2_SPTR)s, pc->len, pos, PCRE2_NO_UTF_CHECK, md, NULL);
        if (r == PCRE2_ERROR_NOMATCH)
            break;
        if (r < 0) {
            PCRE2_UCHAR msg[256];
            pcre2_get_error_message(r, msg, sizeof msg);
            rc = qs_errf(err, "pre-tokenizer: regex match failed: %s", (char *)msg);
            goto done;
        }
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        size_t ms = ov[0], me = ov[1];
        if (me == ms) { /* empty match: step one character on */
            pos = ms + 1;
            while (pos < pc->len && ((unsigned char)s[pos] & 0xC0) == 0x80)
                pos++;
            if (ms >= pc->len)
                break;
            continue;
        }
        ADD_SPAN(last, ms - last, false);
        ADD_SPAN(ms, me - ms, true);
        last = pos = me;
    }
    ADD_SPAN(last, pc->len - last, false);

    for (size_t i = 0; i < n_sp; i++) {
        size_t a = sp[i].start, l = sp[i].len;
        switch (behavior) {
        case QS_SPLIT_ISOLATED: break;
        case QS_SPLIT_REMOVED:
            if (sp[i].match)
                continue;
            break;
        case QS_SPLIT_MERGED_PREV: /* a match closes the piece before it */
            if (!sp[i].match && i + 1 < n_sp && sp[i + 1].match) {
                l += sp[i + 1].len;
                i++;
            }
            break;
        case QS_SPLIT_MERGED_NEXT: /* a match opens the piece after it */
            if (sp[i].match && i + 1 < n_sp && !sp[i + 1].match) {
                l += sp[i + 1].len;
                i++;
            }
            break;
        case QS_SPLIT_CONTIGUOUS:
            while (sp[i].match && i + 1 < n_sp && sp[i + 1].match) {
                l += sp[i + 1].len;
                i++;
            }
            break;
        }
        if (push_piece(out, pc->start + a, l, pc->at_origin && a == 0)) {
            rc = qs_errf(err, "pre-tokenizer: out of memory");
            goto done;
        }
    }
done:
#undef ADD_SPAN
    free(sp);
    return rc;
}

static int run_split(const char *buf, piece_list *pieces, pcre2_code *re, qs_split_behavior behavior, bool invert,
                     qs_err *err)
{
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
    if (!md)
        return qs_errf(err, "pre-tokenizer: out of memory");
    piece_list out = {0};
    int rc = 0;
    for (size_t i = 0; i < pieces->n && !rc; i++)
        rc = split_piece(buf, &pieces->p[i], re, behavior, invert, md, &out, err);
    pcre2_match_data_free(md);
    free(pieces->p);
    *pieces = out;
    return rc;
}

/* Rewrites every piece of *src into a new buffer, which becomes buf and *src: prefix (if
 * want_prefix says so) then the piece with ' ' replaced by rep (rep NULL: unchanged). */
static int rewrite(const char **src, qs_tbuf *buf, piece_list *pieces, const char *prefix, int prefix_mode,
                   const char *rep, qs_err *err)
{
    qs_tbuf nb = {0};
    size_t pl = strlen(prefix), rl = rep ? strlen(rep) : 0;
    int rc = 0;
    for (size_t i = 0; i < pieces->n && !rc; i++) {
        piece *pc = &pieces->p[i];
        const char *s = *src + pc->start;
        size_t start = nb.len;
        /* prefix_mode: 0 never, 1 always, 2 only at the origin; skipped if the piece already
         * starts with the prefix (or with a space that becomes it). */
        bool starts = (pc->len >= pl && !memcmp(s, prefix, pl)) || (rep && s[0] == ' ');
        bool want = prefix_mode == 1 || (prefix_mode == 2 && pc->at_origin);
        if (want && !starts && qs_tbuf_append(&nb, prefix, pl))
            rc = -1;
        for (size_t j = 0; j < pc->len && !rc; j++) {
            if (rep && s[j] == ' ')
                rc = qs_tbuf_append(&nb, rep, rl);
            else
                rc = qs_tbuf_append(&nb, s + j, 1);
        }
        pc->start = start;
        pc->len = nb.len - start;
    }
    if (rc) {
        qs_tbuf_free(&nb);
        return qs_errf(err, "pre-tokenizer: out of memory");
    }
    qs_tbuf_free(buf);
    *buf = nb;
    *src = buf->data ? buf->data : "";
    return 0;
}

/* Metaspace split: a new piece starts at every replacement char (MergedWithNext). */
static int split_on_replacement(const char *src, piece_list *pieces, const char *rep, qs_err *err)
{
    piece_list out = {0};
    size_t rl = strlen(rep);
    for (size_t i = 0; i < pieces->n; i++) {
        const piece *pc = &pieces->p[i];
        const char *s = src + pc->start;
        size_t last = 0;
        for (size_t j = 1; j + rl <= pc->len; j++) {
            if (!memcmp(s + j, rep, rl)) {
                if (push_piece(&out, pc->start + last, j - last, pc->at_origin && last == 0))
                    goto oom;
                last = j;
            }
        }
        if (push_piece(&out, pc->start + last, pc->len - last, pc->at_origin && last == 0))
            goto oom;
    }
    free(pieces->p);
    *pieces = out;
    return 0;
oom:
    free(out.p);
    return qs_errf(err, "pre-tokenizer: out of memory");
}

int qs_pretokenize(const qs_tokenizer *tok, const char *text, size_t len, bool at_origin, qs_tbuf *buf,
                   const char **base, qs_word **words, size_t *n_words, qs_err *err)
{
    piece_list pieces = {0};
    const char *src = text; /* copied only where a step rewrites it: a long prompt is held once */
    buf->len = 0;
    if (push_piece(&pieces, 0, len, at_origin))
        return qs_errf(err, "pre-tokenizer: out of memory");
    int rc = 0;
    for (size_t i = 0; i < tok->n_pre && !rc; i++) {
        const qs_pre_step *st = &tok->pre[i];
        switch (st->kind) {
        case QS_PRE_SPLIT: rc = run_split(src, &pieces, st->re, st->behavior, st->invert, err); break;
        case QS_PRE_BYTE_LEVEL:
            if (st->add_prefix_space)
                rc = rewrite(&src, buf, &pieces, " ", 1, NULL, err);
            if (!rc && st->re)
                rc = run_split(src, &pieces, st->re, QS_SPLIT_ISOLATED, false, err);
            break;
        case QS_PRE_METASPACE:
            rc = rewrite(&src, buf, &pieces, st->replacement,
                         st->prepend == QS_PREPEND_ALWAYS ? 1 : st->prepend == QS_PREPEND_FIRST ? 2 : 0, st->replacement,
                         err);
            if (!rc && st->split)
                rc = split_on_replacement(src, &pieces, st->replacement, err);
            break;
        }
    }
    *base = src;
    if (rc) {
        free(pieces.p);
        return -1;
    }
    qs_word *w = malloc((pieces.n ? pieces.n : 1) * sizeof *w);
    if (!w) {
        free(pieces.p);
        return qs_errf(err, "pre-tokenizer: out of memory");
    }
    for (size_t i = 0; i < pieces.n; i++)
        w[i] = (qs_word){pieces.p[i].start, pieces.p[i].len};
    free(pieces.p);
    *words = w;
    *n_words = pieces.n;
    return 0;
}

void qs_pre_steps_free(qs_pre_step *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        pcre2_code_free(s[i].re);
    free(s);
}
