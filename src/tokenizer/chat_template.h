/* chat_template.h — a Jinja-subset interpreter for Hugging Face chat templates. It renders the
 * real templates (Qwen3 with tools and enable_thinking, Llama-3.x) over cJSON values; an
 * unsupported construct is an error naming it and its line. */
#ifndef QS_TOKENIZER_CHAT_TEMPLATE_H
#define QS_TOKENIZER_CHAT_TEMPLATE_H

#include <stdbool.h>

#include <cJSON.h>

#include "util/error.h"

typedef struct qs_chat_template qs_chat_template;

/* Parses template source once; name is used in messages ("tokenizer_config.json chat_template"). */
int qs_chat_template_compile(const char *source, const char *name, qs_chat_template **out, qs_err *err);
void qs_chat_template_free(qs_chat_template *t);

/* Renders with the variables HF passes: messages (array), tools (array or NULL),
 * add_generation_prompt, bos_token, eos_token, plus every key of extra_kwargs (object or NULL,
 * e.g. {"enable_thinking": false}). *out is malloc'd. */
int qs_chat_template_render(const qs_chat_template *t, const cJSON *messages, const cJSON *tools,
                            bool add_generation_prompt, const char *bos_token, const char *eos_token,
                            const cJSON *extra_kwargs, char **out, qs_err *err);

#endif
