/* sampling_defaults.c — vLLM's --generation-config and --override-generation-config
 * (sampling_defaults.h). generation_config.json is read by the model's one loader
 * (qs_generation_config_load), so serve and generate refuse the same malformed file alike. */
#include "engine/sampling_defaults.h"

#include <cJSON.h>
#include <stdio.h>
#include <string.h>

#include "model/model_config.h"
#include "model/model_config_load.h"
#include "util/fileio.h"

static const char *const OVERRIDE_KEYS[] = {"temperature", "top_p", "top_k", "min_p", "repetition_penalty",
                                            "max_new_tokens"};

/* Takes every sampling field gen has over what d holds. */
static void take(qs_sampling_defaults *d, const qs_generation_config *gen)
{
    if (gen->has_temperature) {
        d->has_temperature = true;
        d->temperature = gen->temperature;
    }
    if (gen->has_top_p) {
        d->has_top_p = true;
        d->top_p = gen->top_p;
    }
    if (gen->has_top_k) {
        d->has_top_k = true;
        d->top_k = gen->top_k;
    }
    if (gen->has_min_p) {
        d->has_min_p = true;
        d->min_p = gen->min_p;
    }
    if (gen->has_repetition_penalty) {
        d->has_repetition_penalty = true;
        d->repetition_penalty = gen->repetition_penalty;
    }
    if (gen->has_max_new_tokens) {
        d->has_max_tokens = true;
        d->max_tokens = gen->max_new_tokens;
    }
}

static int check_override_keys(const char *json, qs_err *err)
{
    cJSON *root = cJSON_Parse(json);
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return qs_errf(err, "--override-generation-config: expected a JSON object, got '%.200s'", json);
    }
    const cJSON *it;
    cJSON_ArrayForEach(it, root)
    {
        bool known = false;
        for (size_t i = 0; i < sizeof OVERRIDE_KEYS / sizeof OVERRIDE_KEYS[0] && !known; i++)
            known = !strcmp(it->string, OVERRIDE_KEYS[i]);
        if (!known) {
            qs_errf(err,
                    "--override-generation-config: unknown key '%.100s' (qserve takes temperature, top_p, top_k, "
                    "min_p, repetition_penalty and max_new_tokens)",
                    it->string);
            cJSON_Delete(root);
            return -1;
        }
    }
    cJSON_Delete(root);
    return 0;
}

int qs_sampling_defaults_resolve(const char *mode, const char *model_dir, const char *override_json,
                                 qs_sampling_defaults *out, qs_err *err)
{
    memset(out, 0, sizeof *out);
    qs_generation_config gen;
    if (!mode || !*mode || !strcmp(mode, "auto")) {
        char path[4096];
        qs_path_join(path, sizeof path, model_dir, "generation_config.json");
        if (qs_generation_config_load(model_dir, &gen, err))
            return -1;
        take(out, &gen);
        snprintf(out->source, sizeof out->source, "%s", qs_file_exists(path) ? path : "vLLM's defaults (the model has no generation_config.json)");
    } else if (!strcmp(mode, "vllm")) {
        snprintf(out->source, sizeof out->source, "vLLM's defaults (--generation-config vllm)");
    } else {
        char path[4096];
        qs_path_join(path, sizeof path, mode, "generation_config.json");
        if (!qs_file_exists(path))
            return qs_errf(err, "--generation-config %s: no generation_config.json in that folder (or give auto or vllm)",
                           mode);
        if (qs_generation_config_load(mode, &gen, err))
            return -1;
        take(out, &gen);
        snprintf(out->source, sizeof out->source, "%s", path);
    }
    if (override_json && *override_json) {
        if (check_override_keys(override_json, err) ||
            qs_generation_config_parse(override_json, "--override-generation-config", &gen, err))
            return -1;
        take(out, &gen);
        size_t n = strlen(out->source);
        snprintf(out->source + n, sizeof out->source - n, " with --override-generation-config");
    }
    return 0;
}

void qs_sampling_defaults_describe(const qs_sampling_defaults *d, char *buf, size_t cap)
{
    char part[6][48];
    int k = 0;
    if (d->has_temperature)
        snprintf(part[k++], sizeof part[0], "temperature=%g", d->temperature);
    if (d->has_top_p)
        snprintf(part[k++], sizeof part[0], "top_p=%g", d->top_p);
    if (d->has_top_k)
        snprintf(part[k++], sizeof part[0], "top_k=%d", d->top_k);
    if (d->has_min_p)
        snprintf(part[k++], sizeof part[0], "min_p=%g", d->min_p);
    if (d->has_repetition_penalty)
        snprintf(part[k++], sizeof part[0], "repetition_penalty=%g", d->repetition_penalty);
    if (d->has_max_tokens)
        snprintf(part[k++], sizeof part[0], "max_tokens=%d", d->max_tokens);
    size_t n = (size_t)snprintf(buf, cap, "%s", k ? "" : "none");
    for (int i = 0; i < k && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%s", i ? ", " : "", part[i]);
}

void qs_sampling_defaults_apply(const qs_sampling_defaults *d, const qs_sampling_given *given, qs_sampling_params *p)
{
    if (d->has_temperature && !given->temperature)
        p->temperature = d->temperature;
    if (d->has_top_p && !given->top_p)
        p->top_p = d->top_p;
    if (d->has_top_k && !given->top_k)
        p->top_k = d->top_k;
    if (d->has_min_p && !given->min_p)
        p->min_p = d->min_p;
    if (d->has_repetition_penalty && !given->repetition_penalty)
        p->repetition_penalty = d->repetition_penalty;
}

int qs_sampling_defaults_max_tokens(const qs_sampling_defaults *d, int requested)
{
    if (!d->has_max_tokens)
        return requested;
    return requested < 0 || d->max_tokens < requested ? d->max_tokens : requested;
}
