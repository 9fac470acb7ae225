/* bpe_pieces.c — where a long pre-tokenized word may be cut so that BPE can merge it piece by
 * piece with exactly the whole word's result, which bounds the merge loop's memory by a piece
 * instead of by the word (a prompt to a Llama-2-style tokenizer, which has no pre-tokenizer, is
 * one word however long it is).
 *
 * A merge joins two adjacent symbols; the merged token then holds the last input symbol of its
 * left side next to the first input symbol of its right side. So the pairs (last input symbol of
 * a merge's left side, first input symbol of its right side), over all merges, are the only
 * adjacent input symbols that any merge ever joins. Between two input symbols that form none of
 * those pairs no merge can happen, whatever order merges run in: the pieces on either side
 * evolve independently and in the same relative order as in the whole word. Input symbols are
 * bytes for byte-level BPE and characters otherwise; a merge whose side is a byte-fallback or the
 * unknown token, or a character outside the vocabulary, is treated as joining anything, so such
 * tokenizers and characters are never cut. HF tokenizers has no such cut (it merges any word
 * whole); the result is the same, only the memory differs. */
#include <stdlib.h>
#include <string.h>
#include <unistr.h>

#include "tokenizer/tokenizer_internal.h"

/* First and last code point of a token string; false if it is not valid UTF-8. */
static bool end_code_points(const char *s, size_t n, ucs4_t *first, ucs4_t *last)
{
    if (!n || u8_mbtoucr(first, (const uint8_t *)s, n) <= 0)
        return false;
    size_t i = n - 1;
    while (i > 0 && ((uint8_t)s[i] & 0xC0) == 0x80)
        i--;
    return u8_mbtoucr(last, (const uint8_t *)s + i, n - i) == (int)(n - i);
}

/* The input symbol a merge side starts (at_end false) or ends with: a byte (byte-level) or a code
 * point; -1 when it cannot be told, which makes the tokenizer unsplittable. */
static int64_t side_symbol(const qs_tokenizer *tok, const bool *opaque, int32_t id, bool at_end)
{
    if (id < 0 || (size_t)id >= tok->vocab.n_ids || !tok->vocab.str[id] || opaque[id])
        return -1;
    ucs4_t first, last;
    if (!end_code_points(tok->vocab.str[id], tok->vocab.len[id], &first, &last))
        return -1;
    ucs4_t cp = at_end ? last : first;
    return tok->byte_level ? qs_byte_level_byte(cp) : (int64_t)cp;
}

int qs_bpe_pieces_build(qs_tokenizer *tok, qs_err *err)
{
    tok->max_token_len = 0;
    for (size_t id = 0; id < tok->vocab.n_ids; id++)
        if (tok->vocab.str[id] && tok->vocab.len[id] > tok->max_token_len)
            tok->max_token_len = tok->vocab.len[id];
    tok->piecewise = false;
    if (!tok->merges.n_entries)
        return 0;
    /* byte-fallback tokens and unk: their strings are not the text they stand for */
    bool *opaque = calloc(tok->vocab.n_ids ? tok->vocab.n_ids : 1, sizeof *opaque);
    if (!opaque)
        return qs_errf(err, "tokenizer: out of memory");
    if (!tok->byte_level)
        for (int b = 0; b < 256; b++)
            if (tok->byte_ids[b] >= 0 && (size_t)tok->byte_ids[b] < tok->vocab.n_ids)
                opaque[tok->byte_ids[b]] = true;
    if (tok->unk_id >= 0 && (size_t)tok->unk_id < tok->vocab.n_ids)
        opaque[tok->unk_id] = true;
    bool splittable = true;
    for (size_t j = 0; j < tok->merges.n_slots && splittable; j++) {
        uint64_t k = tok->merges.keys[j];
        if (!k)
            continue;
        int32_t left = (int32_t)((k - 1) >> 32), right = (int32_t)(uint32_t)(k - 1);
        int64_t a = side_symbol(tok, opaque, left, true), b = side_symbol(tok, opaque, right, false);
        if (a < 0 || b < 0 || a > INT32_MAX || b > INT32_MAX) {
            splittable = false;
            break;
        }
        if (qs_merges_add(&tok->inner_pairs, (int32_t)a, (int32_t)b, 0, 0)) {
            free(opaque);
            return qs_errf(err, "tokenizer: out of memory");
        }
    }
    free(opaque);
    tok->piecewise = splittable;
    return 0;
}

static bool joined(const qs_tokenizer *tok, int32_t a, int32_t b)
{
    int32_t rank, merged;
    return qs_merges_find(&tok->inner_pairs, a, b, &rank, &merged);
}

size_t qs_bpe_next_cut(const qs_tokenizer *tok, const char *w, size_t start, size_t len, size_t min_piece)
{
    if (!tok->piecewise || len - start <= min_piece)
        return len;
    if (tok->byte_level) {
        for (size_t i = start + min_piece; i < len; i++)
            if (!joined(tok, (uint8_t)w[i - 1], (uint8_t)w[i]))
                return i;
        return len;
    }
    /* characters as initial_symbols (bpe.c) steps over them: u8_mblen, an invalid byte alone */
    ucs4_t prev = 0;
    bool prev_known = false;
    for (size_t i = start; i < len;) {
        int cl = u8_mblen((const uint8_t *)w + i, len - i);
        if (cl <= 0)
            cl = 1;
        ucs4_t cp = 0;
        bool known = u8_mbtoucr(&cp, (const uint8_t *)w + i, (size_t)cl) == cl &&
                     qs_vocab_find(&tok->vocab, w + i, (size_t)cl) >= 0;
        if (i >= start + min_piece && prev_known && known && !joined(tok, (int32_t)prev, (int32_t)cp))
            return i;
        prev = cp;
        prev_known = known;
        i += (size_t)cl;
    }
    return len;
}
