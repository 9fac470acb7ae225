/* bpe_compact.c — BPE merging of a long word in about 4.5 bytes an input symbol, for the words that
 * bpe_pieces.c cannot cut (a run of one letter merges with itself everywhere, so no boundary is
 * safe). bpe.c's heap loop costs 12 bytes a symbol plus a heap that holds every candidate pair
 * (8 bytes each, doubling): 20 to 30 bytes an input byte. Here:
 *
 * - the symbols are one int32 each, in place: a live symbol covering [i, i + L) holds its id at
 *   i, and -L at i + 1 and at i + L - 1 (L >= 2), so its right neighbour is at i + L and its left
 *   neighbour's start is read from the tag just before i; interior positions are negative;
 * - instead of a heap of candidates, the symbols are grouped in blocks of BLOCK positions and a
 *   segment tree over the blocks holds each block's best pair (rank, position); after a merge
 *   only the (at most three) blocks whose pairs changed are scanned again;
 * - the final ids are compacted in place and the array becomes the output's where that copies
 *   less, so the ids of a word that is most of the prompt are never held twice.
 *
 * The order of merges is HF tokenizers' exactly: its heap, with stale entries skipped, always
 * takes the pair of lowest (rank, position) among the current pairs, because a stale entry never
 * passes its check again when every merge makes the concatenation of its two sides (a pair's
 * text only grows, so it cannot make the same token twice). qs_bpe_compact_build checks that
 * property at load; without it, words stay on bpe.c's heap loop. Nothing packaged does this:
 * HF tokenizers and tiktoken merge a word in memory proportional to it with larger records. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tokenizer_internal.h"

enum { BLOCK = 32 };

#define NO_PAIR UINT64_MAX

void qs_bpe_compact_build(qs_tokenizer *tok)
{
    tok->compact_merges = tok->merges.n_entries > 0;
    for (size_t j = 0; j < tok->merges.n_slots && tok->compact_merges; j++) {
        uint64_t k = tok->merges.keys[j];
        if (!k)
            continue;
        int32_t left = (int32_t)((k - 1) >> 32), right = (int32_t)(uint32_t)(k - 1), made = tok->merges.merged[j];
        const qs_vocab *v = &tok->vocab;
        bool known = left >= 0 && right >= 0 && made >= 0 && (size_t)left < v->n_ids && (size_t)right < v->n_ids &&
                     (size_t)made < v->n_ids && v->str[left] && v->str[right] && v->str[made];
        tok->compact_merges = known && v->len[made] == v->len[left] + v->len[right] &&
                              !memcmp(v->str[made], v->str[left], v->len[left]) &&
                              !memcmp(v->str[made] + v->len[left], v->str[right], v->len[right]);
    }
}

typedef struct {
    int32_t *sym; /* the layout in the file comment */
    size_t n;
    uint64_t *tree; /* [2 * n_blocks]: leaves at n_blocks + b; (rank << 32 | position), NO_PAIR */
    size_t n_blocks;
    const qs_merges *merges;
} word_state;

static size_t next_of(const word_state *w, size_t i)
{
    return i + 1 < w->n && w->sym[i + 1] < 0 ? i + (size_t)-w->sym[i + 1] : i + 1;
}

static size_t prev_of(const word_state *w, size_t i)
{
    return w->sym[i - 1] >= 0 ? i - 1 : i - (size_t)-w->sym[i - 1];
}

/* Best pair whose left symbol starts in block b, then the path up to the root. */
static void rescan_block(word_state *w, size_t b)
{
    uint64_t best = NO_PAIR;
    size_t end = (b + 1) * BLOCK < w->n ? (b + 1) * BLOCK : w->n;
    for (size_t i = b * BLOCK; i < end; i++) {
        if (w->sym[i] < 0)
            continue;
        size_t r = next_of(w, i);
        int32_t rank, merged;
        if (r < w->n && qs_merges_find(w->merges, w->sym[i], w->sym[r], &rank, &merged)) {
            uint64_t key = (uint64_t)(uint32_t)rank << 32 | i;
            if (key < best)
                best = key;
        }
    }
    size_t node = w->n_blocks + b;
    w->tree[node] = best;
    for (node /= 2; node >= 1; node /= 2) {
        uint64_t l = w->tree[2 * node], r = w->tree[2 * node + 1];
        w->tree[node] = l < r ? l : r;
    }
}

/* Appends the k final ids, compacted at the front of sym, to out, and frees sym or makes it out's
 * array: a word that is most of the input then never has its ids in memory twice. */
static int hand_over(int32_t *sym, size_t k, qs_tids *out)
{
    if (out->len > k) { /* out holds more already: copy the fewer ids */
        int rc = qs_tids_append(out, sym, k);
        free(sym);
        return rc;
    }
    int32_t *d = realloc(sym, (out->len + k ? out->len + k : 1) * sizeof *d);
    if (!d) {
        free(sym);
        return -1;
    }
    memmove(d + out->len, d, k * sizeof *d);
    if (out->len)
        memcpy(d, out->data, out->len * sizeof *d);
    free(out->data);
    out->data = d;
    out->len += k;
    out->cap = out->len;
    return 0;
}

int qs_bpe_merge_compact(const qs_tokenizer *tok, int32_t *sym, size_t n, qs_tids *out, qs_err *err)
{
    if (n >= INT32_MAX) {
        free(sym);
        return qs_errf(err, "BPE: a word of %zu symbols is too long", n);
    }
    word_state w = {sym, n, NULL, (n + BLOCK - 1) / BLOCK, &tok->merges};
    if (n >= 2) {
        w.tree = malloc(2 * w.n_blocks * sizeof *w.tree);
        if (!w.tree) {
            free(sym);
            return qs_errf(err, "BPE: out of memory");
        }
        memset(w.tree, 0xff, 2 * w.n_blocks * sizeof *w.tree); /* NO_PAIR everywhere */
        for (size_t b = 0; b < w.n_blocks; b++)
            rescan_block(&w, b);
    }
    while (w.tree && w.tree[1] != NO_PAIR) {
        size_t i = (size_t)(w.tree[1] & 0xffffffffu), j = next_of(&w, i), end = next_of(&w, j);
        int32_t made = tok->merges.merged_by_rank[w.tree[1] >> 32];
        int32_t span = (int32_t)(end - i);
        sym[j] = -1; /* interior now, unless a tag below lands on it */
        sym[i] = made;
        sym[i + 1] = -span;
        sym[end - 1] = -span;
        size_t bi = i / BLOCK, bj = j / BLOCK;
        rescan_block(&w, bi);
        if (bj != bi)
            rescan_block(&w, bj);
        if (i > 0) {
            size_t bp = prev_of(&w, i) / BLOCK;
            if (bp != bi && bp != bj)
                rescan_block(&w, bp);
        }
    }
    free(w.tree);
    size_t k = 0;
    for (size_t i = 0; i < n; i = next_of(&w, i)) /* writes land at or before i, reads after it */
        sym[k++] = sym[i];
    if (hand_over(sym, k, out))
        return qs_errf(err, "BPE: out of memory");
    return 0;
}
