/* request_policy.h — what the server's flags add to a parsed request before it runs, as vLLM's
 * server does: the sampling defaults of --generation-config / --override-generation-config for
 * the parameters a request leaves out, the --max-logprobs limit, the chat response role of
 * --response-role, and the request log of --enable-log-requests. */
#ifndef QS_SERVER_REQUEST_POLICY_H
#define QS_SERVER_REQUEST_POLICY_H

#include <stdbool.h>
#include <stdint.h>

#include "server/api_error.h"
#include "server/openai_request.h"
#include "server/server_internal.h"

/* Applies the sampling defaults to the fields the body does not set (absent or null) and checks
 * the logprobs limit (400 naming logprobs / top_logprobs). */
int qs_request_apply_policy(const qs_server *s, qs_openai_request *r, qs_api_error *e);
/* A sequence's max_tokens: what the request asked (<= 0: what the context leaves), capped by the
 * default max_new_tokens as vLLM caps it. */
int qs_request_max_tokens(const qs_server *s, int requested, int context_left);
/* The role of chat responses: --response-role with add_generation_prompt, else the role of the
 * last message (as vLLM). Points into s or r. */
const char *qs_request_response_role(const qs_server *s, const qs_openai_request *r);
/* With --enable-log-requests: one line naming the request, its parameters and the start of its
 * prompt (decoded from the first prompt's ids, at most QS_LOG_PROMPT_CHARS characters). */
#define QS_LOG_PROMPT_CHARS 256
void qs_request_log(const qs_server *s, const char *id, const qs_openai_request *r, const qs_tokenizer *tok,
                    const int32_t *ids, int n_ids, int n_prompts);

#endif
