/* model_support.c — the up-front "can qserve run this model" check of model_support.h. The list
 * of architectures mirrors qs_arch in src/model/model_config.h (the static assert catches drift). */
#include "eval/model_support.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "model/model_config.h"
#include "util/fileio.h"

static const char *const SUPPORTED[] = {
    "LlamaForCausalLM",   "MistralForCausalLM",  "Qwen2ForCausalLM",
    "Qwen3ForCausalLM",   "Qwen3MoeForCausalLM", "MixtralForCausalLM",
};
_Static_assert(sizeof SUPPORTED / sizeof SUPPORTED[0] == QS_ARCH_COUNT,
               "keep SUPPORTED in step with qs_arch (src/model/model_config.h)");

static const struct {
    const char *id_part; /* case-insensitive substring of the model id */
    const char *why;
} KNOWN_UNSUPPORTED[] = {
    {"llama-4", "Llama 4 (Llama4ForConditionalGeneration: multimodal MoE with chunked attention) is not an "
                "architecture qserve implements"},
};

static bool contains_nocase(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (; *hay; hay++)
        if (!strncasecmp(hay, needle, n))
            return true;
    return false;
}

bool qs_eval_model_id_unsupported(const char *model_name, char *reason, size_t cap)
{
    for (size_t i = 0; i < sizeof KNOWN_UNSUPPORTED / sizeof KNOWN_UNSUPPORTED[0]; i++)
        if (contains_nocase(model_name, KNOWN_UNSUPPORTED[i].id_part)) {
            snprintf(reason, cap, "%s: %s", model_name, KNOWN_UNSUPPORTED[i].why);
            return true;
        }
    return false;
}

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
        for (size_t i = 0; i < QS_ARCH_COUNT; i++)
            if (!strcmp(arch->valuestring, SUPPORTED[i]))
                unsupported = false;
        if (unsupported) {
            char list[512] = "";
            for (size_t i = 0; i < QS_ARCH_COUNT; i++)
                snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", SUPPORTED[i]);
            snprintf(reason, cap, "%s: architecture %s is not supported by qserve (supported: %s)", path,
                     arch->valuestring, list);
        }
    }
    cJSON_Delete(o);
    return unsupported;
}
