/* tokenizer_internal.h — the in-memory form of a loaded tokenizer.json, shared by the files of
 * src/tokenizer (loading, normalising, pre-tokenising, BPE, decoding). Nothing outside the
 * tokenizer folder includes it: the public contract is tokenizer.h. */
#ifndef QS_TOKENIZER_INTERNAL_H
#define QS_TOKENIZER_INTERNAL_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tokenizer/tokenizer.h"

/* ---- growable byte buffer and id list (tok_buf.c) ---- */
typedef struct {
    char *data;
    size_t len, cap;
} qs_tbuf;
int qs_tbuf_reserve(qs_tbuf *b, size_t extra);
int qs_tbuf_append(qs_tbuf *b, const void *p, size_t n);
void qs_tbuf_free(qs_tbuf *b);

typedef struct {
    int32_t *data;
    size_t len, cap;
} qs_tids;
int qs_tids_push(qs_tids *v, int32_t id);
int qs_tids_reserve(qs_tids *v, size_t n); /* room for n ids in all */
int qs_tids_append(qs_tids *v, const int32_t *ids, size_t n);

/* ---- vocabulary: id <-> string with an open-addressing hash map (vocab.c) ---- */
typedef struct {
    char **str;       /* str[id]: NUL-terminated token string, NULL for holes */
    uint32_t *len;    /* len[id] */
    size_t n_ids;     /* max id + 1 */
    size_t id_cap;    /* allocated length of str/len */
    int32_t *slots;   /* hash slots holding ids, -1 empty */
    size_t n_slots;   /* power of two */
    size_t n_entries;
    char **chunks; /* string storage */
    size_t n_chunks, chunk_used, chunk_cap;
} qs_vocab;
uint64_t qs_hash_bytes(const void *p, size_t n);
/* Sets the string of id (copied). A second string for the same id, or a second id for the same
 * string, is an error naming both. */
int qs_vocab_set(qs_vocab *v, int32_t id, const char *s, size_t n, qs_err *err);
int32_t qs_vocab_find(const qs_vocab *v, const char *s, size_t n); /* -1 if absent */
int qs_vocab_reserve(qs_vocab *v, size_t n_tokens); /* pre-sizes for n_tokens entries */
void qs_vocab_free(qs_vocab *v);

/* ---- merges: (left id, right id) -> (rank, merged id) (vocab.c) ---- */
typedef struct {
    uint64_t *keys; /* (left << 32 | right) + 1; 0 = empty */
    int32_t *rank, *merged;
    size_t n_slots, n_entries;
    int32_t *merged_by_rank; /* [n_ranks]: what the merge of that rank makes (-1: none) */
    size_t n_ranks;
} qs_merges;
int qs_merges_reserve(qs_merges *m, size_t n);
int qs_merges_add(qs_merges *m, int32_t left, int32_t right, int32_t rank, int32_t merged);
/* Returns true and fills rank/merged if the pair merges. */
static inline bool qs_merges_find(const qs_merges *m, int32_t left, int32_t right, int32_t *rank, int32_t *merged)
{
    uint64_t key = (((uint64_t)(uint32_t)left << 32) | (uint32_t)right) + 1;
    uint64_t h = key * 0x9E3779B97F4A7C15ull;
    size_t mask = m->n_slots - 1, i = (size_t)(h >> 20) & mask;
    if (!m->n_slots)
        return false;
    for (;;) {
        uint64_t k = m->keys[i];
        if (k == key) {
            *rank = m->rank[i];
            *merged = m->merged[i];
            return true;
        }
        if (!k)
            return false;
        i = (i + 1) & mask;
    }
}
void qs_merges_free(qs_merges *m);

/* ---- normalizer steps (normalize.c) ---- */
typedef enum { QS_NORM_NFC, QS_NORM_NFD, QS_NORM_NFKC, QS_NORM_NFKD, QS_NORM_REPLACE, QS_NORM_PREPEND,
               QS_NORM_LOWERCASE, QS_NORM_STRIP } qs_norm_kind;
typedef struct {
    qs_norm_kind kind;
    char *pattern, *content; /* REPLACE: pattern -> content; PREPEND: content */
    bool strip_left, strip_right;
} qs_norm_step;

/* ---- pre-tokenizer steps (pretokenize.c) ---- */
typedef enum { QS_PRE_SPLIT, QS_PRE_BYTE_LEVEL, QS_PRE_METASPACE } qs_pre_kind;
typedef enum { QS_SPLIT_ISOLATED, QS_SPLIT_REMOVED, QS_SPLIT_MERGED_PREV, QS_SPLIT_MERGED_NEXT,
               QS_SPLIT_CONTIGUOUS } qs_split_behavior;
typedef enum { QS_PREPEND_ALWAYS, QS_PREPEND_FIRST, QS_PREPEND_NEVER } qs_prepend_scheme;
typedef struct {
    qs_pre_kind kind;
    pcre2_code *re;        /* SPLIT, or BYTE_LEVEL with use_regex */
    qs_split_behavior behavior;
    bool invert;
    bool add_prefix_space; /* BYTE_LEVEL */
    char replacement[8];   /* METASPACE: UTF-8 of the replacement char */
    qs_prepend_scheme prepend;
    bool split;            /* METASPACE */
} qs_pre_step;

/* ---- decoder steps (decode.c) ---- */
typedef enum { QS_DEC_BYTE_LEVEL, QS_DEC_REPLACE, QS_DEC_BYTE_FALLBACK, QS_DEC_FUSE, QS_DEC_STRIP,
               QS_DEC_METASPACE } qs_dec_kind;
typedef struct {
    qs_dec_kind kind;
    char *pattern, *content; /* REPLACE; STRIP: content (one char) */
    int start, stop;         /* STRIP */
    char replacement[8];     /* METASPACE */
    bool strip_first;        /* METASPACE: prepend_scheme != never */
} qs_dec_step;

/* ---- added tokens (added_tokens.c) ---- */
typedef struct {
    char *content;
    size_t len;
    int32_t id;
    bool special, lstrip, rstrip, normalized, single_word;
} qs_added_token;

typedef struct {
    qs_added_token *tok; /* sorted by length, longest first */
    size_t n;
    /* first_byte[b]: indices into tok whose content starts with byte b, terminated by -1 */
    int32_t *by_first[256];
} qs_added_set;

/* A piece of text to tokenise or an added token found in it. */
typedef struct {
    size_t start, len; /* into the text the split ran over */
    int32_t id;        /* >= 0: an added token; -1: text */
} qs_segment;
/* Splits text into segments around the tokens of set (leftmost, then longest), honouring
 * lstrip/rstrip/single_word. Appends to *segs. */
int qs_added_split(const qs_added_set *set, const char *text, size_t len, qs_segment **segs, size_t *n,
                   size_t *cap);
int qs_added_set_build(qs_added_set *set, const qs_added_token *toks, size_t n, bool normalized);
void qs_added_set_free(qs_added_set *set);

/* ---- word cache: pre-token bytes -> ids (bpe.c) ---- */
typedef struct qs_word_cache qs_word_cache;

struct qs_tokenizer {
    qs_vocab vocab;
    qs_merges merges;
    bool byte_level;          /* BPE input symbols are bytes mapped through the GPT-2 table */
    int32_t byte_ids[256];    /* byte_level: id of each byte's symbol; fallback: id of <0xNN> or -1 */
    bool byte_fallback, fuse_unk, ignore_merges;
    int32_t unk_id;

    qs_norm_step *norm;
    size_t n_norm;
    qs_pre_step *pre;
    size_t n_pre;
    qs_dec_step *dec;
    size_t n_dec;
    bool has_decoder;

    qs_added_token *added;
    size_t n_added;
    qs_added_set added_raw;  /* normalized == false: matched on the raw text */
    qs_added_set added_norm; /* normalized == true: matched after normalisation */
    bool *is_special;        /* [n_ids] */
    bool *is_added;          /* [n_ids]: an added token (decoded verbatim by ByteLevel) */

    int32_t *post_prefix, *post_suffix; /* ids the post-processor puts around a single sequence */
    size_t n_post_prefix, n_post_suffix;

    char *bos_token, *eos_token, *chat_template;
    int32_t bos_id, eos_id;
    bool adds_bos;

    qs_word_cache *cache;

    /* bpe_pieces.c: where a long word may be cut (see there) */
    qs_merges inner_pairs; /* (last input symbol of a merge's left side, first of its right side) */
    bool piecewise;        /* false: some merge cannot be told apart, never cut */
    size_t max_token_len;  /* bytes of the longest vocab string */
    bool compact_merges;   /* every merge makes the concatenation of its sides (bpe_compact.c) */
};

/* Fills inner_pairs, piecewise and max_token_len once the vocab, merges and byte tables are
 * loaded (bpe_pieces.c). */
int qs_bpe_pieces_build(qs_tokenizer *tok, qs_err *err);
/* End of the piece of word w that starts at start: the first boundary at or after
 * start + min_piece that no merge can cross, or len. */
size_t qs_bpe_next_cut(const qs_tokenizer *tok, const char *w, size_t start, size_t len, size_t min_piece);

/* Sets compact_merges once the vocab and merges are loaded (bpe_compact.c). */
void qs_bpe_compact_build(qs_tokenizer *tok);
/* Merges the n initial symbol ids of a word (a malloc'd array it takes over: freed, or made out's
 * array) in about 5 bytes a symbol, with HF's result, and appends the final ids to out
 * (bpe_compact.c). */
int qs_bpe_merge_compact(const qs_tokenizer *tok, int32_t *ids, size_t n, qs_tids *out, qs_err *err);

/* GPT-2 byte <-> unicode table (byte_level.c). */
/* UTF-8 of the code point that stands for byte b (1 or 2 bytes); returns its length. */
int qs_byte_level_char(uint8_t b, char out[2]);
/* Byte that code point cp stands for, or -1. */
int qs_byte_level_byte(uint32_t cp);

/* Normalisation of one segment (normalize.c); *out is malloc'd. */
int qs_normalize(const qs_tokenizer *tok, const char *text, size_t len, char **out, size_t *out_len, qs_err *err);
void qs_norm_steps_free(qs_norm_step *s, size_t n);

/* Pre-tokenisation (pretokenize.c): splits text into words, which index into *base: text itself,
 * or *buf (which the caller frees) where a step rewrites the text (Metaspace, a ByteLevel prefix
 * space). at_origin: the text starts the input. */
typedef struct {
    size_t start, len;
} qs_word;
int qs_pretokenize(const qs_tokenizer *tok, const char *text, size_t len, bool at_origin, qs_tbuf *buf,
                   const char **base, qs_word **words, size_t *n_words, qs_err *err);
pcre2_code *qs_regex_compile(const char *pattern, const char *what, qs_err *err);
void qs_pre_steps_free(qs_pre_step *s, size_t n);

/* BPE over one word (bpe.c): appends its ids. */
int qs_bpe_word(const qs_tokenizer *tok, const char *word, size_t len, qs_tids *out, qs_err *err);
qs_word_cache *qs_word_cache_new(void);
void qs_word_cache_free(qs_word_cache *c);

/* Decoding of token strings (decode.c). */
void qs_dec_steps_free(qs_dec_step *s, size_t n);
/* Appends the UTF-8 of bytes with invalid sequences replaced by U+FFFD (maximal subparts). */
int qs_utf8_lossy_append(qs_tbuf *out, const uint8_t *p, size_t n);

#endif
