/* model_config_llama4.h — Llama 4's part of config.json (model_config_llama4.c), called by the
 * config.json reader (model_config_load.c). */
#ifndef QS_MODEL_MODEL_CONFIG_LLAMA4_H
#define QS_MODEL_MODEL_CONFIG_LLAMA4_H

#include "model/model_config.h"
#include "util/error.h"

/* Llama 4's part of config.json (model_config_llama4.c): root is the text config (text_config of
 * Llama4ForConditionalGeneration); fname for messages. Fills the shape and Llama 4 fields. */
int qs_model_config_parse_llama4(const void *root_json, const char *fname, qs_model_config *cfg, qs_err *err);

#endif
