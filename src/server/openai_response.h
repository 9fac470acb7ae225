/* openai_response.h — the JSON shapes of OpenAI responses: completion / chat.completion
 * objects and their streaming chunks, usage, logprobs (completions: tokens / token_logprobs /
 * top_logprobs / text_offset; chat: content[{token, logprob, bytes, top_logprobs}]), and the SSE
 * framing `data: {...}\n\n`. */
#ifndef QS_SERVER_OPENAI_RESPONSE_H
#define QS_SERVER_OPENAI_RESPONSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cJSON.h>

#include "engine/engine.h"

typedef struct qs_tokenizer qs_tokenizer;

/* {"id", "object", "created", "model", "choices": []}; object is text_completion,
 * chat.completion or chat.completion.chunk. */
cJSON *qs_resp_base(bool chat, bool chunk, const char *id, int64_t created, const char *model);
/* usage, with prompt_tokens_details.cached_tokens: prompt tokens the prefix cache supplied. */
cJSON *qs_resp_usage(int prompt_tokens, int completion_tokens, int cached_tokens);
/* "stop" / "length" (abort and error pass through as "abort" / "error"); NULL for NONE. */
const char *qs_resp_finish_reason(qs_finish_reason r);
void qs_resp_add_finish_reason(cJSON *choice, qs_finish_reason r);

/* An empty logprobs object of the right shape. */
cJSON *qs_resp_logprobs_new(bool chat);
/* Appends one token: its text, logprob, top alternatives; text_offset is the byte offset of the
 * token's text in the choice's text (completions only). */
void qs_resp_logprobs_add(cJSON *lp, bool chat, const qs_tokenizer *tok, const qs_token_logprobs *l, int n_top,
                          size_t text_offset);

/* The same, with the tokens written "token_id:N" when as_ids (return_tokens_as_token_ids). */
void qs_resp_logprobs_add_as(cJSON *lp, bool chat, const qs_tokenizer *tok, const qs_token_logprobs *l, int n_top,
                             size_t text_offset, bool as_ids);
/* A token's text as it reads inside a sequence, or "token_id:N" when as_ids (malloc'd). */
char *qs_resp_token_text(const qs_tokenizer *tok, int32_t id, bool as_ids);

/* "data: <json>\n\n" (malloc'd); *len receives its length. */
char *qs_resp_sse(const cJSON *obj, size_t *len);

#endif
