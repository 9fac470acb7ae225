/* vocab_trie.c — builds the per-tokenizer vocabulary byte trie (vocab_trie.h) once; every
 * matcher of every request shares it read-only. Tokens are sorted by their bytes, so the
 * preorder layout falls out of one pass over the sorted list. */
#include "structured/vocab_trie.h"

#include <stdlib.h>
#include <string.h>

#include "tokenizer/tokenizer.h"

typedef struct tok_ref {
    const uint8_t *p;
    int len;
    int32_t id;
} tok_ref;

static int cmp_tok(const void *x, const void *y)
{
    const tok_ref *a = x, *b = y;
    int n = a->len < b->len ? a->len : b->len;
    int c = memcmp(a->p, b->p, (size_t)n);
    if (c)
        return c;
    if (a->len != b->len)
        return a->len < b->len ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id;
}

void qs_vocab_trie_free(qs_vocab_trie *t)
{
    if (!t)
        return;
    free(t->nodes);
    free(t->ids);
    free(t->end_ids);
    free(t->bytes);
    free(t->bytes_off);
    free(t);
}

int qs_vocab_trie_size(const qs_vocab_trie *t) { return t->vocab_size; }
size_t qs_mask_words(const qs_vocab_trie *t) { return ((size_t)t->vocab_size + 31) / 32; }

qs_vocab_trie *qs_vocab_trie_new(int vocab_size, const uint8_t *const *token_bytes, const int *token_len,
                                 const int32_t *end_ids, int n_end, qs_err *err)
{
    if (vocab_size <= 0) {
        qs_errf(err, "vocabulary trie: empty vocabulary");
        return NULL;
    }
    tok_ref *refs = malloc(sizeof *refs * (size_t)vocab_size);
    qs_vocab_trie *t = calloc(1, sizeof *t);
    int n = 0;
    long total = 0;
    if (!refs || !t)
        goto oom;
    for (int i = 0; i < vocab_size; i++)
        if (token_len[i] > 0 && token_len[i] < 65535) {
            refs[n++] = (tok_ref){token_bytes[i], token_len[i], i};
            total += token_len[i];
        }
    t->bytes = malloc((size_t)total + 1);
    t->bytes_off = malloc(sizeof *t->bytes_off * ((size_t)vocab_size + 1));
    if (!t->bytes || !t->bytes_off)
        goto oom;
    t->bytes_off[0] = 0;
    for (int i = 0; i < vocab_size; i++) {
        int l = token_len[i] > 0 && token_len[i] < 65535 ? token_len[i] : 0;
        if (l)
            memcpy(t->bytes + t->bytes_off[i], token_bytes[i], (size_t)l);
        t->bytes_off[i + 1] = t->bytes_off[i] + l;
    }
    qsort(refs, (size_t)n, sizeof *refs, cmp_tok);
    t->vocab_size = vocab_size;
    /* at most one node per byte of every token */
    size_t cap = (size_t)total + 1;
    t->nodes = calloc(cap + 1, sizeof *t->nodes);
    int32_t *count = calloc(cap + 1, sizeof *count); /* tokens ending at each node */
    t->ids = malloc(sizeof *t->ids * (size_t)(n ? n : 1));
    int32_t *path = malloc(sizeof *path * 65536);
    t->end_ids = malloc(sizeof *t->end_ids * (size_t)(n_end ? n_end : 1));
    if (!t->nodes || !count || !t->ids || !path || !t->end_ids) {
        free(path);
        free(count);
        goto oom;
    }
    if (n_end)
        memcpy(t->end_ids, end_ids, sizeof *end_ids * (size_t)n_end);
    t->n_end = n_end;
    /* path[d] = node at depth d+1 along the previous token; tok_first counts per node first */
    int depth = 0, nodes = 0;
    for (int k = 0; k < n; k++) {
        const tok_ref *r = &refs[k];
        int lcp = 0;
        if (k) {
            const tok_ref *q = &refs[k - 1];
            while (lcp < depth && lcp < r->len && q->p[lcp] == r->p[lcp])
                lcp++;
        }
        for (int d = depth - 1; d >= lcp; d--)
            t->nodes[path[d]].subtree_end = nodes;
        for (int d = lcp; d < r->len; d++) {
            t->nodes[nodes].byte = r->p[d];
            t->nodes[nodes].depth = (uint16_t)(d + 1);
            path[d] = nodes++;
        }
        depth = r->len;
        if (depth > t->max_depth)
            t->max_depth = depth;
        count[path[depth - 1]]++;
    }
    for (int d = depth - 1; d >= 0; d--)
        t->nodes[path[d]].subtree_end = nodes;
    free(path);
    t->n_nodes = nodes;
    for (int i = 0; i < nodes; i++)
        t->nodes[i + 1].tok_first = t->nodes[i].tok_first + count[i];
    free(count);
    /* ids in node order: tokens are sorted, so they arrive in preorder of their end nodes */
    for (int k = 0; k < n; k++)
        t->ids[k] = refs[k].id;
    free(refs);
    return t;
oom:
    free(refs);
    qs_vocab_trie_free(t);
    qs_errf(err, "out of memory building the vocabulary trie");
    return NULL;
}

qs_vocab_trie *qs_vocab_trie_from_tokenizer(const qs_tokenizer *tok, int vocab_size, const int32_t *end_ids,
                                            int n_end, qs_err *err)
{
    uint8_t **bytes = calloc((size_t)vocab_size, sizeof *bytes);
    int *lens = calloc((size_t)vocab_size, sizeof *lens);
    qs_vocab_trie *t = NULL;
    if (!bytes || !lens) {
        qs_errf(err, "out of memory building the vocabulary trie");
        goto out;
    }
    int n_tok = (int)qs_tokenizer_vocab_size(tok);
    for (int i = 0; i < vocab_size && i < n_tok; i++) {
        if (qs_tokenizer_is_special(tok, i))
            continue;
        size_t len = 0;
        if (qs_tokenizer_token_bytes(tok, i, &bytes[i], &len))
            continue;
        lens[i] = (int)len;
    }
    t = qs_vocab_trie_new(vocab_size, (const uint8_t *const *)bytes, lens, end_ids, n_end, err);
out:
    for (int i = 0; bytes && i < vocab_size; i++)
        free(bytes[i]);
    free(bytes);
    free(lens);
    return t;
}
