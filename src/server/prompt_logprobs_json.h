/* prompt_logprobs_json.h — the JSON of prompt log-probabilities: vLLM's `prompt_logprobs`
 * (a list, null for the first token, then {"<id>": {"logprob", "rank", "decoded_token"}} for the
 * prompt token and its top alternatives) and, for completions with echo and logprobs, the prompt
 * tokens placed ahead of the generated ones in the OpenAI logprobs object (first entry null). */
#ifndef QS_SERVER_PROMPT_LOGPROBS_JSON_H
#define QS_SERVER_PROMPT_LOGPROBS_JSON_H

#include <stdbool.h>
#include <stddef.h>

#include <cJSON.h>

#include "engine/prompt_logprobs.h"

typedef struct qs_tokenizer qs_tokenizer;

cJSON *qs_resp_prompt_logprobs(const qs_tokenizer *tok, const qs_prompt_logprob *lp, int n, bool as_ids);
/* Appends the prompt tokens to a completions logprobs object (tokens, token_logprobs,
 * top_logprobs with n_top alternatives, text_offset); returns the text length they cover, the
 * offset where the generated tokens start. */
size_t qs_resp_echo_logprobs(cJSON *logprobs, const qs_tokenizer *tok, const qs_prompt_logprob *lp, int n, int n_top,
                             bool as_ids);

#endif
