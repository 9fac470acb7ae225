/* structured.h — the structured-output constraint engine: JSON Schema, "any JSON object", regular
 * expressions, choice lists and GBNF grammars compile into one grammar (a context-free grammar
 * whose terminals are byte classes); a matcher walks a per-tokenizer vocabulary byte trie with
 * the grammar state to say which tokens may come next (a bitmask over the vocabulary), and is
 * advanced by the token the sampler drew. EOS is allowed only where the output is complete.
 *
 * Threading: a qs_grammar is immutable once compiled except for its mask cache, which has its own
 * lock, so one grammar may serve many matchers on many threads; a matcher belongs to one thread.
 * A qs_vocab_trie is immutable and shared by every request of a tokenizer. */
#ifndef QS_STRUCTURED_STRUCTURED_H
#define QS_STRUCTURED_STRUCTURED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

typedef struct cJSON cJSON;
typedef struct qs_tokenizer qs_tokenizer;

typedef enum {
    QS_SO_JSON_SCHEMA, /* text is a JSON Schema document */
    QS_SO_JSON_OBJECT, /* any JSON object; text is ignored (may be NULL) */
    QS_SO_REGEX,       /* the whole output matches text (anchors implicit) */
    QS_SO_GBNF,        /* llama.cpp's GBNF; the start rule is "root" */
} qs_so_kind;

typedef struct qs_so_options {
    /* Regex for the whitespace allowed between JSON tokens; NULL = the bounded default
     * (at most two spaces, or one newline followed by at most 16 spaces). */
    const char *whitespace_pattern;
    /* Literal bytes the output must start / end with around the compiled structure (NULL = none):
     * lets a caller wrap a schema in markup such as "<tool_call>\n" ... "\n</tool_call>". */
    const char *prefix;
    const char *suffix;
    /* Compile afresh and keep nothing: compiled grammars are otherwise shared by identical
     * specifications (the last 8), together with the masks they have cached. */
    bool uncached;
} qs_so_options;

typedef struct qs_grammar qs_grammar;

/* Compiles a specification. NULL on error, with err naming the unsupported keyword / construct
 * (e.g. "unsupported JSON Schema keyword 'patternProperties'"). opt may be NULL. */
qs_grammar *qs_grammar_compile(qs_so_kind kind, const char *text, size_t len, const qs_so_options *opt, qs_err *err);
/* The same from a parsed JSON Schema (tool parameter schemas, response_format.json_schema). */
qs_grammar *qs_grammar_from_schema(const cJSON *schema, const qs_so_options *opt, qs_err *err);
/* Output must be exactly one of the strings (at least one; empty strings allowed). */
qs_grammar *qs_grammar_from_choices(const char *const *choices, int n, const qs_so_options *opt, qs_err *err);
void qs_grammar_retain(qs_grammar *g);
void qs_grammar_release(qs_grammar *g); /* NULL is fine */

/* The vocabulary as bytes: token_bytes[i] / token_len[i] are token i's bytes when it is in the
 * middle of a text; a token with length 0 (special tokens, unused ids) is never allowed by a
 * mask. end_ids are the tokens allowed exactly where the structure is complete (EOS). */
typedef struct qs_vocab_trie qs_vocab_trie;
qs_vocab_trie *qs_vocab_trie_new(int vocab_size, const uint8_t *const *token_bytes, const int *token_len,
                                 const int32_t *end_ids, int n_end, qs_err *err);
/* From a loaded tokenizer: special tokens get no bytes. vocab_size may exceed the tokenizer's
 * (padded model vocabularies); the extra ids are never allowed. */
qs_vocab_trie *qs_vocab_trie_from_tokenizer(const qs_tokenizer *tok, int vocab_size, const int32_t *end_ids,
                                            int n_end, qs_err *err);
void qs_vocab_trie_free(qs_vocab_trie *t);
int qs_vocab_trie_size(const qs_vocab_trie *t);
/* uint32 words of a mask over the trie's vocabulary. */
size_t qs_mask_words(const qs_vocab_trie *t);

typedef struct qs_matcher qs_matcher;
/* Retains g; t must outlive the matcher. NULL when out of memory. */
qs_matcher *qs_matcher_new(qs_grammar *g, const qs_vocab_trie *t);
void qs_matcher_free(qs_matcher *m);
/* Sets bit i of mask (qs_mask_words words) iff token i may come next; end ids are set iff the
 * output is complete. Returns the number of allowed tokens (0: nothing can follow). */
int qs_matcher_fill_mask(qs_matcher *m, uint32_t *mask);
/* Computes the mask for the current state into the matcher (as fill_mask), so that several
 * matchers' masks can be computed on several threads before their logits are masked. */
int qs_matcher_prepare_mask(qs_matcher *m);
/* Sets every disallowed token's logit to -inf, using the prepared mask when the state has not
 * moved since, else computing it. Returns the number allowed. */
int qs_matcher_mask_logits(qs_matcher *m, float *logits, int n_logits);
/* Advances by a token (an end id is accepted iff complete). False (state unchanged) if refused. */
bool qs_matcher_accept_token(qs_matcher *m, int32_t id);
/* Advances by raw bytes; false (state unchanged) if they cannot extend toward a valid output. */
bool qs_matcher_accept_bytes(qs_matcher *m, const void *bytes, size_t len);
/* The output so far is a complete match (EOS allowed). */
bool qs_matcher_is_complete(const qs_matcher *m);
/* Complete and no byte can follow: the generation is over. */
bool qs_matcher_is_terminated(const qs_matcher *m);
/* An end token has been accepted. */
bool qs_matcher_ended(const qs_matcher *m);

/* Whole-string check (tests, validation): does the grammar accept exactly these bytes? */
bool qs_grammar_matches(qs_grammar *g, const void *bytes, size_t len);

#endif
