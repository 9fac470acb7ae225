/* model_config_json.h — the typed config.json field readers shared by model_config_load.c and
 * model_config_llama4.c. Each returns 1 found, 0 absent (and not required), -1 error with the
 * message naming the file and the field. JSON null counts as absent. */
#ifndef QS_MODEL_MODEL_CONFIG_JSON_H
#define QS_MODEL_MODEL_CONFIG_JSON_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "model/model_config.h"

typedef struct {
    const char *fname;
    qs_err *err;
} qs_cfg_ctx;

const char *qs_cfg_type_of(const cJSON *v);
const cJSON *qs_cfg_field(const cJSON *obj, const char *key);
bool qs_cfg_is_int(const cJSON *v);
int qs_cfg_get_int(qs_cfg_ctx *c, const cJSON *obj, const char *prefix, const char *key, bool required, int *out);
int qs_cfg_get_pos_int(qs_cfg_ctx *c, const cJSON *obj, const char *key, bool required, int *out);
int qs_cfg_get_num(qs_cfg_ctx *c, const cJSON *obj, const char *prefix, const char *key, bool required, double *out);
int qs_cfg_get_bool(qs_cfg_ctx *c, const cJSON *obj, const char *key, bool *out);
int qs_cfg_get_str(qs_cfg_ctx *c, const cJSON *obj, const char *key, char *buf, size_t cap);
int qs_cfg_get_ids(qs_cfg_ctx *c, const cJSON *obj, const char *key, int *ids, int *n);
/* rope_theta and rope_scaling / rope_parameters (default or llama3). */
int qs_cfg_parse_rope(qs_cfg_ctx *c, const cJSON *root, qs_model_config *cfg);

#endif
