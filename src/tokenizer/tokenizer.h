/* tokenizer.h — Hugging Face tokenizer.json (BPE: byte-level as Llama-3 / Qwen2/3, and
 * Metaspace + byte_fallback as Llama-2 / Mistral) plus tokenizer_config.json (bos/eos, chat
 * template). Added and special tokens are matched before BPE; the post-processor adds BOS as
 * TemplateProcessing says. */
#ifndef QS_TOKENIZER_TOKENIZER_H
#define QS_TOKENIZER_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

typedef struct qs_tokenizer qs_tokenizer;

/* Loads MODEL_DIR/tokenizer.json and, if present, MODEL_DIR/tokenizer_config.json. */
int qs_tokenizer_load(const char *model_dir, qs_tokenizer **out, qs_err *err);
/* Loads from explicit paths (config_path may be NULL). */
int qs_tokenizer_load_files(const char *tokenizer_json_path, const char *config_path, qs_tokenizer **out, qs_err *err);
void qs_tokenizer_free(qs_tokenizer *tok);

/* Encodes UTF-8 text (invalid UTF-8 is an error naming the byte offset). add_special_tokens
 * applies the post-processor (e.g. BOS). *ids is malloc'd. */
int qs_tokenizer_encode(const qs_tokenizer *tok, const char *text, size_t len, bool add_special_tokens,
                        int32_t **ids, size_t *n_ids, qs_err *err);
/* Decodes ids to a malloc'd NUL-terminated string (as HF decode with
 * clean_up_tokenization_spaces=false). skip_special drops special/added-special tokens. Unknown
 * ids are an error naming the id. */
int qs_tokenizer_decode(const qs_tokenizer *tok, const int32_t *ids, size_t n_ids, bool skip_special,
                        char **text, qs_err *err);
/* The same, also giving the length: decoded text may contain NUL bytes (token "<0x00>", byte 0). */
int qs_tokenizer_decode_n(const qs_tokenizer *tok, const int32_t *ids, size_t n_ids, bool skip_special,
                          char **text, size_t *len, qs_err *err);

/* Streaming detokenisation: the text of ids[0..n) is a prefix of the text of ids[0..n+1) once
 * complete UTF-8 is formed. qs_decode_stream keeps the state; push returns the newly completed
 * bytes (possibly empty while a multi-byte character is still split across tokens). */
typedef struct qs_decode_stream qs_decode_stream;
qs_decode_stream *qs_decode_stream_new(const qs_tokenizer *tok, bool skip_special);
/* Appends token id; *out points to the new text (valid until the next call), *out_len its length. */
int qs_decode_stream_push(qs_decode_stream *s, int32_t id, const char **out, size_t *out_len, qs_err *err);
/* Remaining bytes (an incomplete UTF-8 tail is emitted as U+FFFD). */
int qs_decode_stream_flush(qs_decode_stream *s, const char **out, size_t *out_len);
void qs_decode_stream_free(qs_decode_stream *s);

size_t qs_tokenizer_vocab_size(const qs_tokenizer *tok);  /* incl. added tokens (max id + 1) */
/* Token string as stored in the vocab ("Ġhello", "▁the", "<|im_end|>"), or NULL. */
const char *qs_tokenizer_id_to_token(const qs_tokenizer *tok, int32_t id);
int32_t qs_tokenizer_token_to_id(const qs_tokenizer *tok, const char *token); /* -1 if absent */
bool qs_tokenizer_is_special(const qs_tokenizer *tok, int32_t id);
/* The bytes token id adds in the middle of a text (token_bytes.c): *out is malloc'd (NULL when
 * empty). -1 for an unknown id or when out of memory. */
int qs_tokenizer_token_bytes(const qs_tokenizer *tok, int32_t id, uint8_t **out, size_t *out_len);
int32_t qs_tokenizer_bos_id(const qs_tokenizer *tok);   /* -1 if none */
int32_t qs_tokenizer_eos_id(const qs_tokenizer *tok);   /* -1 if none */
const char *qs_tokenizer_bos_token(const qs_tokenizer *tok); /* string or NULL */
const char *qs_tokenizer_eos_token(const qs_tokenizer *tok);
/* chat_template from tokenizer_config.json (or chat_template.jinja beside it), or NULL. */
const char *qs_tokenizer_chat_template(const qs_tokenizer *tok);
/* add_bos_token from tokenizer_config.json / the post-processor. */
bool qs_tokenizer_adds_bos(const qs_tokenizer *tok);

#endif
