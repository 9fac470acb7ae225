/* model_config_load.h — reads config.json and generation_config.json into model_config.h's
 * structs. An unsupported architecture is an error listing the supported ones. */
#ifndef QS_MODEL_MODEL_CONFIG_LOAD_H
#define QS_MODEL_MODEL_CONFIG_LOAD_H

#include "model/model_config.h"
#include "util/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Reads MODEL_DIR/config.json. */
int qs_model_config_load(const char *model_dir, qs_model_config *cfg, qs_err *err);
/* Same, from JSON text (fname for messages). */
int qs_model_config_parse(const char *json, const char *fname, qs_model_config *cfg, qs_err *err);
/* MODEL_DIR/generation_config.json; absent file -> defaults (n_eos = 0), not an error. The one
 * reader of that file: serve and generate both refuse a malformed one, naming it. */
int qs_generation_config_load(const char *model_dir, qs_generation_config *gen, qs_err *err);
/* The same fields from JSON text (fname names it in messages: a path, or a flag). */
int qs_generation_config_parse(const char *json, const char *fname, qs_generation_config *gen, qs_err *err);

#ifdef __cplusplus
}
#endif

#endif
