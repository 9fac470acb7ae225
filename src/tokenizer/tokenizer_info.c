/* tokenizer_info.c — read-only accessors over a loaded tokenizer (vocab lookups, special
 * tokens, BOS/EOS, chat template) for the engine, server and CLI. */
#include <string.h>

#include "tokenizer/tokenizer_internal.h"

size_t qs_tokenizer_vocab_size(const qs_tokenizer *tok) { return tok->vocab.n_ids; }

const char *qs_tokenizer_id_to_token(const qs_tokenizer *tok, int32_t id)
{
    return id >= 0 && (size_t)id < tok->vocab.n_ids ? tok->vocab.str[id] : NULL;
}

int32_t qs_tokenizer_token_to_id(const qs_tokenizer *tok, const char *token)
{
    return token ? qs_vocab_find(&tok->vocab, token, strlen(token)) : -1;
}

bool qs_tokenizer_is_special(const qs_tokenizer *tok, int32_t id)
{
    return id >= 0 && (size_t)id < tok->vocab.n_ids && tok->is_special[id];
}

int32_t qs_tokenizer_bos_id(const qs_tokenizer *tok) { return tok->bos_id; }
int32_t qs_tokenizer_eos_id(const qs_tokenizer *tok) { return tok->eos_id; }
const char *qs_tokenizer_bos_token(const qs_tokenizer *tok) { return tok->bos_token; }
const char *qs_tokenizer_eos_token(const qs_tokenizer *tok) { return tok->eos_token; }
const char *qs_tokenizer_chat_template(const qs_tokenizer *tok) { return tok->chat_template; }
bool qs_tokenizer_adds_bos(const qs_tokenizer *tok) { return tok->adds_bos; }
