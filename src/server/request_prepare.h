/* request_prepare.h — the parts of turning a request into engine sequences that vLLM's extra
 * fields add (request_fields.h): the chat prompt with a request-level chat_template and
 * continue_final_message, chat echo's text, bad_words as token sequences, allowed_token_ids
 * checked against the vocabulary, and truncate_prompt_tokens. */
#ifndef QS_SERVER_REQUEST_PREPARE_H
#define QS_SERVER_REQUEST_PREPARE_H

#include <stdint.h>

#include "server/api_error.h"
#include "server/openai_request.h"
#include "server/server.h"

/* Renders r's messages with r's chat_template (else the model's), tools, kwargs,
 * add_generation_prompt, and cuts the text after the final message's content when
 * continue_final_message is set (as transformers' apply_chat_template does). *text malloc'd,
 * *text_len its bytes. */
int qs_render_chat_request(const qs_server_model *m, const qs_openai_request *r, char **text, size_t *text_len,
                           qs_api_error *e);

/* Chat echo: the last message's content when its role is "assistant" (vLLM's rule), else "";
 * points into r. */
const char *qs_chat_echo_content(const qs_openai_request *r);

/* Token sequences of r's bad words, laid end to end (*ids, *lens malloc'd; *n words). Each word
 * is encoded as is and, when that gives a different first token of the same length, with a
 * leading space as well (vLLM's rule, for words inside a text). */
int qs_encode_bad_words(const qs_server_model *m, const qs_openai_request *r, int32_t **ids, int **lens, int *n,
                        qs_api_error *e);

/* allowed_token_ids must name ids of the vocabulary (400 naming the field). */
int qs_check_allowed_token_ids(const qs_server_model *m, const qs_openai_request *r, qs_api_error *e);

/* truncate_prompt_tokens: keeps the last k of ids[0..*n) in place. */
void qs_truncate_prompt(const qs_openai_request *r, int32_t *ids, int *n);

#endif
