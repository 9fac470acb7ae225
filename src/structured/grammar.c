/* grammar.c — the grammar builder and its finalisation (grammar.h): growing rules, interning
 * byte classes, repetition and literal helpers, UTF-8 code point classes as byte-class
 * sequences, and the checks a finished grammar must pass (every rule defined, no left
 * recursion, bounded size). */
#include "structured/grammar.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/grow.h"

void qs_gb_init(qs_gbuild *b) { memset(b, 0, sizeof *b); }

void qs_gseq_free(qs_gseq *s)
{
    free(s->e);
    memset(s, 0, sizeof *s);
}

void qs_gb_free(qs_gbuild *b)
{
    for (int r = 0; r < b->n_rules; r++) {
        for (int a = 0; a < b->rules[r].n_alts; a++)
            qs_gseq_free(&b->rules[r].alts[a]);
        free(b->rules[r].alts);
        free(b->rules[r].name);
    }
    free(b->rules);
    free(b->sets);
    memset(b, 0, sizeof *b);
}

static void seq_push(qs_gbuild *b, qs_gseq *s, qs_gelem el)
{
    if (b->oom)
        return;
    if (++b->total_elems > QS_GRAMMAR_MAX_ELEMS) {
        b->too_big = true;
        return;
    }
    qs_gelem *p = qs_grow(s->e, &s->cap, s->n + 1, 8, sizeof *p);
    if (!p) {
        b->oom = true;
        return;
    }
    s->e = p;
    s->e[s->n++] = el;
}

qs_gelem qs_gel_rule(int rule) { return (qs_gelem){.kind = QS_EL_RULE, .arg = (uint32_t)rule}; }

int qs_gb_rule(qs_gbuild *b, const char *name)
{
    if (b->oom || b->too_big)
        return 0;
    qs_grule_b *p = qs_grow(b->rules, &b->cap_rules, b->n_rules + 1, 16, sizeof *p);
    if (!p) {
        b->oom = true;
        return 0;
    }
    b->rules = p;
    if (++b->total_elems > QS_GRAMMAR_MAX_ELEMS) {
        b->too_big = true;
        return 0;
    }
    qs_grule_b *r = &b->rules[b->n_rules];
    memset(r, 0, sizeof *r);
    r->name = name ? strdup(name) : NULL;
    return b->n_rules++;
}

void qs_gb_add_alt(qs_gbuild *b, int rule, const qs_gseq *seq)
{
    if (b->oom || b->too_big)
        return;
    qs_grule_b *r = &b->rules[rule];
    r->defined = true;
    qs_gseq *p = qs_grow(r->alts, &r->cap_alts, r->n_alts + 1, 2, sizeof *p);
    if (!p) {
        b->oom = true;
        return;
    }
    r->alts = p;
    qs_gseq copy = {0};
    for (int i = 0; i < seq->n; i++)
        seq_push(b, &copy, seq->e[i]);
    seq_push(b, &copy, (qs_gelem){.kind = QS_EL_END});
    if (b->oom || b->too_big) {
        qs_gseq_free(&copy);
        return;
    }
    copy.n--; /* the END is only a count of its slot */
    r->alts[r->n_alts++] = copy;
}

void qs_gseq_rule(qs_gbuild *b, qs_gseq *s, int rule) { seq_push(b, s, qs_gel_rule(rule)); }

static int intern_set(qs_gbuild *b, const qs_byteset *set)
{
    for (int i = b->n_sets - 1; i >= 0 && i >= b->n_sets - 64; i--)
        if (!memcmp(&b->sets[i], set, sizeof *set))
            return i;
    qs_byteset *p = qs_grow(b->sets, &b->cap_sets, b->n_sets + 1, 32, sizeof *p);
    if (!p) {
        b->oom = true;
        return 0;
    }
    b->sets = p;
    b->sets[b->n_sets] = *set;
    return b->n_sets++;
}

void qs_gseq_set(qs_gbuild *b, qs_gseq *s, const qs_byteset *set)
{
    int i = intern_set(b, set);
    seq_push(b, s, (qs_gelem){.kind = QS_EL_BYTES, .arg = (uint32_t)i});
}

void qs_gseq_byte(qs_gbuild *b, qs_gseq *s, unsigned byte)
{
    qs_byteset set = {{0}};
    qs_byteset_add(&set, byte & 0xff);
    qs_gseq_set(b, s, &set);
}

void qs_gseq_lit(qs_gbuild *b, qs_gseq *s, const char *bytes, size_t len)
{
    for (size_t i = 0; i < len; i++)
        qs_gseq_byte(b, s, (unsigned char)bytes[i]);
}

void qs_gseq_append(qs_gbuild *b, qs_gseq *s, const qs_gseq *t)
{
    for (int i = 0; i < t->n; i++)
        seq_push(b, s, t->e[i]);
}

int qs_gb_literal(qs_gbuild *b, const char *bytes, size_t len)
{
    int r = qs_gb_rule(b, NULL);
    qs_gseq s = {0};
    qs_gseq_lit(b, &s, bytes, len);
    qs_gb_add_alt(b, r, &s);
    qs_gseq_free(&s);
    return r;
}

/* star ::= el star | ε ; opt_k ::= el opt_{k-1} | ε ; result ::= el^min (star | opt_{max-min}) */
int qs_gb_repeat(qs_gbuild *b, qs_gelem el, int min, int max)
{
    int tail = -1;
    qs_gseq s = {0}, empty = {0};
    if (max < 0) {
        tail = qs_gb_rule(b, NULL);
        qs_gseq_free(&s);
        s.n = 0;
        seq_push(b, &s, el);
        qs_gseq_rule(b, &s, tail);
        qs_gb_add_alt(b, tail, &s);
        qs_gb_add_alt(b, tail, &empty);
    } else {
        for (int k = 0; k < max - min && !b->oom && !b->too_big; k++) {
            int r = qs_gb_rule(b, NULL);
            s.n = 0;
            seq_push(b, &s, el);
            if (tail >= 0)
                qs_gseq_rule(b, &s, tail);
            qs_gb_add_alt(b, r, &s);
            qs_gb_add_alt(b, r, &empty);
            tail = r;
        }
    }
    int out = qs_gb_rule(b, NULL);
    s.n = 0;
    for (int k = 0; k < min && !b->oom && !b->too_big; k++)
        seq_push(b, &s, el);
    if (tail >= 0)
        qs_gseq_rule(b, &s, tail);
    qs_gb_add_alt(b, out, &s);
    qs_gseq_free(&s);
    return out;
}

/* ---- UTF-8 classes ---- */

static int utf8_encode(uint32_t cp, uint8_t out[4])
{
    if (cp < 0x80) {
        out[0] = (uint8_t)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (uint8_t)(0xC0 | (cp >> 6));
        out[1] = (uint8_t)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (uint8_t)(0xE0 | (cp >> 12));
        out[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (uint8_t)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (uint8_t)(0xF0 | (cp >> 18));
    out[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (uint8_t)(0x80 | (cp & 0x3F));
    return 4;
}

/* Splits [lo, hi] until each piece is a product of per-byte ranges (as regex-syntax's
 * Utf8Sequences does), adding one alternative per piece to rule. */
static void utf8_pieces(qs_gbuild *b, int rule, uint32_t lo, uint32_t hi)
{
    static const uint32_t bounds[] = {0x7F, 0x7FF, 0xFFFF};
    if (lo > hi)
        return;
    for (int i = 0; i < 3; i++)
        if (lo <= bounds[i] && hi > bounds[i]) {
            utf8_pieces(b, rule, lo, bounds[i]);
            utf8_pieces(b, rule, bounds[i] + 1, hi);
            return;
        }
    for (int i = 1; i < 4; i++) {
        uint32_t m = (1u << (6 * i)) - 1;
        if ((lo & ~m) != (hi & ~m)) {
            if ((lo & m) != 0) {
                utf8_pieces(b, rule, lo, lo | m);
                utf8_pieces(b, rule, (lo | m) + 1, hi);
                return;
            }
            if ((hi & m) != m) {
                utf8_pieces(b, rule, lo, (hi & ~m) - 1);
                utf8_pieces(b, rule, hi & ~m, hi);
                return;
            }
        }
    }
    uint8_t a[4], z[4];
    int n = utf8_encode(lo, a);
    utf8_encode(hi, z);
    qs_gseq s = {0};
    for (int k = 0; k < n; k++) {
        qs_byteset set = {{0}};
        qs_byteset_add_range(&set, a[k], z[k]);
        qs_gseq_set(b, &s, &set);
    }
    qs_gb_add_alt(b, rule, &s);
    qs_gseq_free(&s);
}

static int cmp_range(const void *x, const void *y)
{
    const qs_cprange *a = x, *c = y;
    return a->lo < c->lo ? -1 : a->lo > c->lo;
}

qs_gelem qs_gb_codepoints(qs_gbuild *b, const qs_cprange *in, int n, bool negated, const qs_byteset *excluded)
{
    /* normalise: sorted, merged, clipped to Unicode, then complemented if negated */
    qs_cprange *r = malloc(sizeof *r * (size_t)(n + 3));
    int m = 0;
    if (!r) {
        b->oom = true;
        return qs_gel_rule(0);
    }
    for (int i = 0; i < n; i++)
        if (in[i].lo <= in[i].hi && in[i].lo <= 0x10FFFF)
            r[m++] = (qs_cprange){in[i].lo, in[i].hi > 0x10FFFF ? 0x10FFFF : in[i].hi};
    qsort(r, (size_t)m, sizeof *r, cmp_range);
    int k = 0;
    for (int i = 0; i < m; i++) {
        if (k && r[i].lo <= r[k - 1].hi + 1) {
            if (r[i].hi > r[k - 1].hi)
                r[k - 1].hi = r[i].hi;
        } else {
            r[k++] = r[i];
        }
    }
    m = k;
    if (negated) {
        qs_cprange *c = malloc(sizeof *c * (size_t)(m + 1));
        int j = 0;
        uint32_t next = 0;
        if (!c) {
            free(r);
            b->oom = true;
            return qs_gel_rule(0);
        }
        for (int i = 0; i < m; i++) {
            if (r[i].lo > next)
                c[j++] = (qs_cprange){next, r[i].lo - 1};
            next = r[i].hi + 1;
        }
        if (next <= 0x10FFFF)
            c[j++] = (qs_cprange){next, 0x10FFFF};
        free(r);
        r = c;
        m = j;
    }
    /* one-byte part as a single class; the rest as UTF-8 pieces (surrogates cut out) */
    qs_byteset ascii = {{0}};
    bool any_ascii = false, any_multi = false;
    int rule = -1;
    for (int i = 0; i < m; i++) {
        uint32_t lo = r[i].lo, hi = r[i].hi;
        if (lo < 0x80) {
            for (uint32_t c = lo; c <= hi && c < 0x80; c++)
                if (!excluded || !qs_byteset_has(excluded, c)) {
                    qs_byteset_add(&ascii, c);
                    any_ascii = true;
                }
            lo = 0x80;
        }
        if (lo > hi)
            continue;
        if (rule < 0)
            rule = qs_gb_rule(b, NULL);
        any_multi = true;
        if (lo < 0xD800 && hi >= 0xD800) {
            utf8_pieces(b, rule, lo, 0xD7FF);
            lo = 0xE000;
        } else if (lo >= 0xD800 && lo <= 0xDFFF) {
            lo = 0xE000;
        }
        utf8_pieces(b, rule, lo, hi);
    }
    free(r);
    if (!any_multi) {
        qs_gseq s = {0};
        qs_gseq_set(b, &s, &ascii); /* may be empty: matches nothing */
        qs_gelem el = s.n ? s.e[0] : qs_gel_rule(0);
        qs_gseq_free(&s);
        return el;
    }
    if (any_ascii) {
        qs_gseq s = {0};
        qs_gseq_set(b, &s, &ascii);
        qs_gb_add_alt(b, rule, &s);
        qs_gseq_free(&s);
    }
    return qs_gel_rule(rule);
}

/* ---- finish ---- */

static const char *rule_label(const qs_gbuild *b, int r, char *buf, size_t n)
{
    if (b->rules[r].name)
        return b->rules[r].name;
    snprintf(buf, n, "#%d", r);
    return buf;
}

/* Refuses left recursion: a cycle of rule references, each at a position preceded only by
 * nullable elements, that contains a reference which is not the last element of its alternative
 * (such a cycle grows the parse stack forever). Cycles made only of references in tail position,
 * as a repetition of something that may be empty produces ("(a*)*"), keep the stack as it is and
 * the matcher stops repeating them; they are allowed. Edges are gathered, then Kosaraju's two
 * passes find the strongly connected components, and a non-tail edge inside one is refused. */
typedef struct lr_edge {
    int from, to;
    bool tail;
} lr_edge;

static int check_left_recursion(const qs_gbuild *b, qs_err *err)
{
    int n = b->n_rules, rc = 0;
    bool *nullable = calloc((size_t)n + 1, 1);
    lr_edge *edges = NULL;
    int n_edges = 0, cap_edges = 0;
    int *first = NULL, *next = NULL, *rfirst = NULL, *rnext = NULL, *order = NULL, *comp = NULL, *stack = NULL, *it = NULL;
    if (!nullable)
        return qs_errf(err, "out of memory checking the grammar");
    for (bool changed = true; changed;) {
        changed = false;
        for (int r = 0; r < n; r++) {
            if (nullable[r])
                continue;
            for (int a = 0; a < b->rules[r].n_alts && !nullable[r]; a++) {
                const qs_gseq *s = &b->rules[r].alts[a];
                bool all = true;
                for (int i = 0; i < s->n && all; i++)
                    all = s->e[i].kind == QS_EL_RULE && nullable[s->e[i].arg];
                if (all) {
                    nullable[r] = true;
                    changed = true;
                }
            }
        }
    }
    for (int r = 0; r < n; r++)
        for (int a = 0; a < b->rules[r].n_alts; a++) {
            const qs_gseq *s = &b->rules[r].alts[a];
            for (int i = 0; i < s->n && s->e[i].kind == QS_EL_RULE; i++) {
                lr_edge *p = qs_grow(edges, &cap_edges, n_edges + 1, 64, sizeof *p);
                if (!p) {
                    rc = qs_errf(err, "out of memory checking the grammar");
                    goto out;
                }
                edges = p;
                edges[n_edges++] = (lr_edge){r, (int)s->e[i].arg, i == s->n - 1};
                if (!nullable[s->e[i].arg])
                    break;
            }
        }
    first = malloc(sizeof(int) * (size_t)(n + 1));
    rfirst = malloc(sizeof(int) * (size_t)(n + 1));
    next = malloc(sizeof(int) * (size_t)(n_edges + 1));
    rnext = malloc(sizeof(int) * (size_t)(n_edges + 1));
    order = malloc(sizeof(int) * (size_t)(n + 1));
    comp = malloc(sizeof(int) * (size_t)(n + 1));
    stack = malloc(sizeof(int) * (size_t)(n + 1));
    it = malloc(sizeof(int) * (size_t)(n + 1));
    if (!first || !rfirst || !next || !rnext || !order || !comp || !stack || !it) {
        rc = qs_errf(err, "out of memory checking the grammar");
        goto out;
    }
    for (int r = 0; r < n; r++)
        first[r] = rfirst[r] = -1, comp[r] = -1;
    for (int e = 0; e < n_edges; e++) {
        next[e] = first[edges[e].from];
        first[edges[e].from] = e;
        rnext[e] = rfirst[edges[e].to];
        rfirst[edges[e].to] = e;
    }
    /* pass 1: finishing order */
    int n_order = 0;
    bool *seen = nullable; /* reuse as visited flags */
    memset(seen, 0, (size_t)n);
    for (int s0 = 0; s0 < n; s0++) {
        if (seen[s0])
            continue;
        int top = 0;
        stack[0] = s0;
        it[0] = first[s0];
        seen[s0] = true;
        while (top >= 0) {
            int e = it[top];
            if (e < 0) {
                order[n_order++] = stack[top--];
                continue;
            }
            it[top] = next[e];
            int v = edges[e].to;
            if (!seen[v]) {
                seen[v] = true;
                stack[++top] = v;
                it[top] = first[v];
            }
        }
    }
    /* pass 2: components on the reversed graph, in reverse finishing order */
    int n_comp = 0;
    for (int k = n_order - 1; k >= 0; k--) {
        int s0 = order[k];
        if (comp[s0] >= 0)
            continue;
        int top = 0;
        stack[0] = s0;
        comp[s0] = n_comp;
        while (top >= 0) {
            int u = stack[top--];
            for (int e = rfirst[u]; e >= 0; e = rnext[e]) {
                int v = edges[e].from;
                if (comp[v] < 0) {
                    comp[v] = n_comp;
                    stack[++top] = v;
                }
            }
        }
        n_comp++;
    }
    for (int e = 0; e < n_edges && !rc; e++)
        if (!edges[e].tail && comp[edges[e].from] == comp[edges[e].to]) {
            char buf[32];
            rc = qs_errf(err, "the grammar is left-recursive at rule '%s' (not supported)",
                         rule_label(b, edges[e].to, buf, sizeof buf));
        }
out:
    free(nullable);
    free(edges);
    free(first);
    free(next);
    free(rfirst);
    free(rnext);
    free(order);
    free(comp);
    free(stack);
    free(it);
    return rc;
}

qs_grammar *qs_gb_finish(qs_gbuild *b, int root, qs_err *err)
{
    qs_grammar *g = NULL;
    if (b->oom) {
        qs_errf(err, "out of memory compiling the grammar");
        goto out;
    }
    if (b->too_big) {
        qs_errf(err, "the grammar is too large (more than %d elements once repetitions are expanded)",
                QS_GRAMMAR_MAX_ELEMS);
        goto out;
    }
    for (int r = 0; r < b->n_rules; r++)
        if (!b->rules[r].defined) {
            char buf[32];
            qs_errf(err, "grammar rule '%s' is used but never defined", rule_label(b, r, buf, sizeof buf));
            goto out;
        }
    if (check_left_recursion(b, err))
        goto out;
    g = calloc(1, sizeof *g);
    if (!g) {
        qs_errf(err, "out of memory");
        goto out;
    }
    g->refs = 1;
    pthread_mutex_init(&g->ref_mu, NULL);
    g->n_rules = b->n_rules;
    g->root = root;
    int n_alts = 0, n_elems = 0;
    for (int r = 0; r < b->n_rules; r++) {
        n_alts += b->rules[r].n_alts;
        for (int a = 0; a < b->rules[r].n_alts; a++)
            n_elems += b->rules[r].alts[a].n + 1;
    }
    g->rule_alts = malloc(sizeof(int) * (size_t)(b->n_rules + 1));
    g->alts = malloc(sizeof(int) * (size_t)(n_alts ? n_alts : 1));
    g->elems = malloc(sizeof(qs_gelem) * (size_t)(n_elems ? n_elems : 1));
    g->sets = malloc(sizeof(qs_byteset) * (size_t)(b->n_sets ? b->n_sets : 1));
    if (!g->rule_alts || !g->alts || !g->elems || !g->sets) {
        qs_errf(err, "out of memory");
        qs_grammar_release(g);
        g = NULL;
        goto out;
    }
    if (b->n_sets)
        memcpy(g->sets, b->sets, sizeof(qs_byteset) * (size_t)b->n_sets);
    g->n_sets = b->n_sets;
    int ai = 0, ei = 0;
    for (int r = 0; r < b->n_rules; r++) {
        g->rule_alts[r] = ai;
        for (int a = 0; a < b->rules[r].n_alts; a++) {
            g->alts[ai++] = ei;
            const qs_gseq *s = &b->rules[r].alts[a];
            if (s->n)
                memcpy(g->elems + ei, s->e, sizeof(qs_gelem) * (size_t)s->n);
            ei += s->n;
            g->elems[ei++] = (qs_gelem){.kind = QS_EL_END};
        }
    }
    g->rule_alts[b->n_rules] = ai;
    g->n_elems = ei;
out:
    qs_gb_free(b);
    return g;
}

qs_grammar *qs_gb_finish_opts(qs_gbuild *b, int root, const qs_so_options *opt, qs_err *err)
{
    if (opt && ((opt->prefix && *opt->prefix) || (opt->suffix && *opt->suffix))) {
        int wrapped = qs_gb_rule(b, "root");
        qs_gseq s = {0};
        if (opt->prefix)
            qs_gseq_lit(b, &s, opt->prefix, strlen(opt->prefix));
        qs_gseq_rule(b, &s, root);
        if (opt->suffix)
            qs_gseq_lit(b, &s, opt->suffix, strlen(opt->suffix));
        qs_gb_add_alt(b, wrapped, &s);
        qs_gseq_free(&s);
        root = wrapped;
    }
    return qs_gb_finish(b, root, err);
}

void qs_grammar_retain(qs_grammar *g)
{
    pthread_mutex_lock(&g->ref_mu);
    g->refs++;
    pthread_mutex_unlock(&g->ref_mu);
}

void qs_grammar_release(qs_grammar *g)
{
    if (!g)
        return;
    pthread_mutex_lock(&g->ref_mu);
    int left = --g->refs;
    pthread_mutex_unlock(&g->ref_mu);
    if (left > 0)
        return;
    pthread_mutex_destroy(&g->ref_mu);
    if (g->cache)
        g->free_cache(g->cache);
    free(g->elems);
    free(g->sets);
    free(g->rule_alts);
    free(g->alts);
    free(g);
}
