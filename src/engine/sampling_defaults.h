/* sampling_defaults.h — the sampling defaults a server or `generate` applies to requests that do
 * not set a parameter themselves, as vLLM's --generation-config / --override-generation-config:
 * auto = the model's generation_config.json, vllm = none (vLLM's neutral defaults), FOLDER = that
 * folder's generation_config.json; the override JSON on top. Only vLLM's six keys count:
 * temperature, top_p, top_k, min_p, repetition_penalty and max_new_tokens (a cap on max_tokens). */
#ifndef QS_ENGINE_SAMPLING_DEFAULTS_H
#define QS_ENGINE_SAMPLING_DEFAULTS_H

#include <stdbool.h>
#include <stddef.h>

#include "engine/sampler.h"
#include "util/error.h"

typedef struct qs_sampling_defaults {
    bool has_temperature, has_top_p, has_top_k, has_min_p, has_repetition_penalty, has_max_tokens;
    double temperature, top_p, min_p, repetition_penalty;
    int top_k;
    int max_tokens;          /* from max_new_tokens */
    char source[1100];       /* where they came from, for the start-up log */
} qs_sampling_defaults;

/* mode: "auto", "vllm" or a folder; model_dir is the model's folder (for auto); override_json
 * "" or a JSON object with only the six keys. A malformed file or override is an error naming it;
 * a FOLDER without generation_config.json is an error too (naming a folder means wanting it). */
int qs_sampling_defaults_resolve(const char *mode, const char *model_dir, const char *override_json,
                                 qs_sampling_defaults *out, qs_err *err);
/* "temperature=0.6, top_p=0.95" or "none" (for the log). */
void qs_sampling_defaults_describe(const qs_sampling_defaults *d, char *buf, size_t cap);

/* Which sampling fields a request set itself (the others take the defaults). */
typedef struct qs_sampling_given {
    bool temperature, top_p, top_k, min_p, repetition_penalty;
} qs_sampling_given;

/* Fills the parameters the request did not give from d. */
void qs_sampling_defaults_apply(const qs_sampling_defaults *d, const qs_sampling_given *given, qs_sampling_params *p);
/* max_tokens as vLLM bounds it: the smallest of what the request asked (< 0: not given) and the
 * default cap; < 0 when neither says anything (up to the context end). */
int qs_sampling_defaults_max_tokens(const qs_sampling_defaults *d, int requested);

#endif
