/* chat_template.h — a Jinja-subset interpreter for Hugging Face chat templates. It renders the
 * real templates (Qwen3 with tools and enable_thinking, Llama-3.x, Mistral, ChatML, Qwen2.5) over
 * cJSON values exactly as transformers' apply_chat_template does (trim_blocks, lstrip_blocks,
 * HF's tojson, raise_exception, strftime_now); an unsupported construct is an error naming it and
 * its line. docs/chat-templates.md lists what is supported. */
#ifndef QS_TOKENIZER_CHAT_TEMPLATE_H
#define QS_TOKENIZER_CHAT_TEMPLATE_H

#include <stdbool.h>

#include <cJSON.h>

#include "util/error.h"

typedef struct qs_chat_template qs_chat_template;

/* Parses template source once; name is used in messages ("tokenizer_config.json chat_template"). */
int qs_chat_template_compile(const char *source, const char *name, qs_chat_template **out, qs_err *err);
void qs_chat_template_free(qs_chat_template *t);

/* Reads MODEL_DIR/tokenizer_config.json: chat_template (a string, or a list of {name, template}
 * of which "default" is used), bos_token and eos_token (strings or {"content": ...} objects), and
 * compiles the template. Without a chat_template there, MODEL_DIR/chat_template.jinja or
 * MODEL_DIR/chat_template.json ({"chat_template": ...}) is used, as newer checkpoints ship it. */
int qs_chat_template_load_from_dir(const char *model_dir, qs_chat_template **out, qs_err *err);
/* The special tokens read by qs_chat_template_load_from_dir (NULL when absent or after compile). */
const char *qs_chat_template_bos_token(const qs_chat_template *t);
const char *qs_chat_template_eos_token(const qs_chat_template *t);

/* Renders with the variables HF passes: messages (array), tools (array or NULL → none),
 * documents (none), add_generation_prompt, bos_token, eos_token (left undefined when NULL), plus
 * every key of extra_kwargs (object or NULL, e.g. {"enable_thinking": false}; it may not set
 * messages, tools, documents or add_generation_prompt). *out is malloc'd.
 * A template's raise_exception("msg") fails with a message containing "raise_exception: msg". */
int qs_chat_template_render(const qs_chat_template *t, const cJSON *messages, const cJSON *tools,
                            bool add_generation_prompt, const char *bos_token, const char *eos_token,
                            const cJSON *extra_kwargs, char **out, qs_err *err);
/* The same, with the rendered length: strings of the JSON values may hold NUL bytes
 * (util/json_strings.h), and so may the text. */
int qs_chat_template_render_n(const qs_chat_template *t, const cJSON *messages, const cJSON *tools,
                              bool add_generation_prompt, const char *bos_token, const char *eos_token,
                              const cJSON *extra_kwargs, char **out, size_t *out_len, qs_err *err);

#endif
