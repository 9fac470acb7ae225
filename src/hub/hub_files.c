/* hub_files.c — which files of a repo qserve reads: configs, tokenizer and chat template files,
 * and the top-level safetensors (the index and its shards); never .bin/.pth/.gguf copies or
 * subfolders (original/, other formats). Also checks a cached snapshot holds all of them. */
#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hub/hub_internal.h"
#include "util/fileio.h"

static const char *const TOKENIZER_FILES[] = {
    "config.json",           "generation_config.json", "tokenizer.json",     "tokenizer_config.json",
    "special_tokens_map.json", "added_tokens.json",    "chat_template.jinja", "chat_template.json",
};

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcmp(s + n - m, suffix);
}

bool hub_file_wanted(const char *name, qs_hub_fileset set)
{
    for (size_t i = 0; i < sizeof TOKENIZER_FILES / sizeof *TOKENIZER_FILES; i++)
        if (!strcmp(name, TOKENIZER_FILES[i]))
            return true;
    if (set == QS_HUB_FILES_TOKENIZER || strchr(name, '/'))
        return false;
    return !strcmp(name, "hf_quant_config.json") || ends_with(name, ".safetensors") ||
           ends_with(name, ".safetensors.index.json");
}

int hub_index_shards(const char *index_path, char ***shards, int *n, qs_err *err)
{
    *shards = NULL;
    *n = 0;
    char *text;
    if (qs_read_file(index_path, &text, NULL, err))
        return -1;
    cJSON *root = cJSON_Parse(text);
    free(text);
    cJSON *map = root ? cJSON_GetObjectItemCaseSensitive(root, "weight_map") : NULL;
    if (!cJSON_IsObject(map)) {
        cJSON_Delete(root);
        return qs_errf(err, "%s: not JSON with a \"weight_map\" object", index_path);
    }
    int cap = cJSON_GetArraySize(map) + 1;
    char **out = calloc((size_t)cap, sizeof *out);
    int cnt = 0, rc = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, map)
    {
        if (!out || !cJSON_IsString(e) || !hub_safe_filename(e->valuestring)) {
            rc = qs_errf(err, "%s: weight_map[\"%s\"] is not a shard file name", index_path, e->string);
            break;
        }
        bool seen = false;
        for (int i = 0; i < cnt && !seen; i++)
            seen = !strcmp(out[i], e->valuestring);
        if (!seen && !(out[cnt++] = strdup(e->valuestring))) {
            rc = qs_errf(err, "out of memory");
            break;
        }
    }
    cJSON_Delete(root);
    if (rc) {
        for (int i = 0; out && i < cnt; i++)
            free(out[i]);
        free(out);
        return -1;
    }
    *shards = out;
    *n = cnt;
    return 0;
}

int hub_snapshot_missing(const char *snapshot, qs_hub_fileset set, char *missing, size_t cap, qs_err *err)
{
    char path[HUB_PATH_MAX];
    missing[0] = '\0';
    const char *need = set == QS_HUB_FILES_TOKENIZER ? "tokenizer.json" : "config.json";
    if (!qs_file_exists(qs_path_join(path, sizeof path, snapshot, need))) {
        snprintf(missing, cap, "%s", need);
        return 0;
    }
    if (set == QS_HUB_FILES_TOKENIZER)
        return 0;
    if (qs_file_exists(qs_path_join(path, sizeof path, snapshot, "model.safetensors")))
        return 0;
    if (!qs_file_exists(qs_path_join(path, sizeof path, snapshot, "model.safetensors.index.json"))) {
        snprintf(missing, cap, "model.safetensors (or model.safetensors.index.json)");
        return 0;
    }
    char **shards;
    int n;
    if (hub_index_shards(path, &shards, &n, err))
        return -1;
    for (int i = 0; i < n; i++) {
        char shard[HUB_PATH_MAX];
        if (!missing[0] && !qs_file_exists(qs_path_join(shard, sizeof shard, snapshot, shards[i])))
            snprintf(missing, cap, "%s", shards[i]);
        free(shards[i]);
    }
    free(shards);
    return 0;
}
