/* model_support.c — the up-front "can qserve run this model" check of model_support.h. The
 * architectures come from the model loader itself (qs_arch_name, qs_supported_architectures). */
#include "eval/model_support.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/model_config.h"
#include "util/fileio.h"

bool qs_eval_model_dir_unsupported(const char *model_dir, char *reason, size_t cap)
{
    char path[4096], *text;
    qs_err ignored;
    if (qs_read_file(qs_path_join(path, sizeof path, model_dir, "config.json"), &text, NULL, &ignored) != 0)
        return false;
    cJSON *o = cJSON_Parse(text);
    free(text);
    const cJSON *arch = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(o, "architectures"), 0);
    bool unsupported = false;
    if (cJSON_IsString(arch)) {
        unsupported = true;
        for (int a = 0; a < QS_ARCH_COUNT; a++)
            if (!strcmp(arch->valuestring, qs_arch_name((qs_arch)a)))
                unsupported = false;
        if (unsupported)
            snprintf(reason, cap, "%s: architecture %s is not supported by qserve (supported: %s)", path,
                     arch->valuestring, qs_supported_architectures());
    }
    cJSON_Delete(o);
    return unsupported;
}
