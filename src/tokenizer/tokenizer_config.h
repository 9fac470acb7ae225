/* tokenizer_config.h — internal: reads tokenizer_config.json (bos/eos tokens, add_bos_token,
 * chat_template) and chat_template.jinja into an already loaded tokenizer. */
#ifndef QS_TOKENIZER_CONFIG_H
#define QS_TOKENIZER_CONFIG_H

#include "tokenizer/tokenizer_internal.h"

struct cJSON;

/* Special token `key` of a parsed tokenizer_config.json: a string, an AddedToken object
 * {"content": ...}, null or absent. Returns 0 with *text pointing into cfg (NULL when null or
 * absent), or -1 (nothing set) when the field is of another type; the caller words the error. */
int qs_tokenizer_config_token(const struct cJSON *cfg, const char *key, const char **text);

/* config_path may be NULL (then only chat_template.jinja beside json_path is looked for). */
int qs_tokenizer_load_config(qs_tokenizer *tok, const char *json_path, const char *config_path, qs_err *err);

#endif
