/* prompt_build.h — turns what a request says (text, token ids, chat messages) into the token ids
 * the engine runs: completions text is encoded with the tokenizer's special tokens (BOS), chat
 * messages are rendered with the checkpoint's chat template and encoded without adding more.
 * Failures are 400s naming the parameter. */
#ifndef QS_SERVER_PROMPT_BUILD_H
#define QS_SERVER_PROMPT_BUILD_H

#include <stdbool.h>
#include <stdint.h>

#include <cJSON.h>

#include "server/api_error.h"
#include "server/openai_request.h"
#include "server/server.h"
#include "tokenizer/chat_template.h"

/* Renders messages (content parts joined, tool-call arguments parsed: chat_messages.h) with
 * template t; a render error is a 400 naming param. *text malloc'd, *text_len bytes (NULs
 * included). */
int qs_render_chat_with(const qs_server_model *m, const qs_chat_template *t, const char *param, const cJSON *messages,
                        const cJSON *tools, bool add_generation_prompt, const cJSON *kwargs, char **text,
                        size_t *text_len, qs_api_error *e);
/* The same with the model's template (a 400 when it has none). */
int qs_render_chat(const qs_server_model *m, const cJSON *messages, const cJSON *tools, bool add_generation_prompt,
                   const cJSON *kwargs, char **text, size_t *text_len, qs_api_error *e);
/* Encodes text[0..len) (NUL bytes included); *ids malloc'd. Text longer than m->max_prompt_bytes
 * is refused untokenized. */
int qs_encode_text(const qs_server_model *m, const char *text, size_t len, bool add_special_tokens, int32_t **ids,
                   int *n, qs_api_error *e);
/* Checks ids against the vocabulary. */
int qs_check_token_ids(const qs_server_model *m, const int32_t *ids, int n, const char *param, qs_api_error *e);

/* logit_bias keys must be ids of the model's vocabulary (400 naming the key). */
int qs_check_logit_bias(const qs_server_model *m, const qs_openai_request *r, qs_api_error *e);

#endif
