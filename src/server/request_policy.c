/* request_policy.c — the server flags' part of a request (request_policy.h). */
#include "server/request_policy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tokenizer.h"
#include "util/log.h"

static bool given(const cJSON *root, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, name);
    return v && !cJSON_IsNull(v);
}

int qs_request_apply_policy(const qs_server *s, qs_openai_request *r, qs_api_error *e)
{
    qs_sampling_given g = {.temperature = given(r->root, "temperature"),
                           .top_p = given(r->root, "top_p"),
                           .top_k = given(r->root, "top_k"),
                           .min_p = given(r->root, "min_p"),
                           .repetition_penalty = given(r->root, "repetition_penalty")};
    qs_sampling_defaults_apply(&s->sampling_defaults, &g, &r->sampling);
    if (r->sampling.logprobs > s->max_logprobs) {
        const char *param = r->kind == QS_API_CHAT ? "top_logprobs" : "logprobs";
        return qs_api_errorf(e, 400, param,
                             "Requested sample logprobs of %d, which is greater than max allowed: %d (--max-logprobs).",
                             r->sampling.logprobs, s->max_logprobs);
    }
    return 0;
}

int qs_request_max_tokens(const qs_server *s, int requested, int context_left)
{
    int n = requested > 0 ? requested : context_left;
    int capped = qs_sampling_defaults_max_tokens(&s->sampling_defaults, n);
    return capped > 0 && capped < n ? capped : n;
}

const char *qs_request_response_role(const qs_server *s, const qs_openai_request *r)
{
    if (r->add_generation_prompt || !cJSON_IsArray(r->messages))
        return s->response_role;
    const cJSON *last = cJSON_GetArrayItem(r->messages, cJSON_GetArraySize(r->messages) - 1);
    const cJSON *role = cJSON_GetObjectItemCaseSensitive(last, "role");
    return cJSON_IsString(role) ? role->valuestring : s->response_role;
}

/* The prompt's first characters, cut on a UTF-8 boundary, as a JSON string (malloc'd). */
static char *prompt_excerpt(const qs_tokenizer *tok, const int32_t *ids, int n_ids, bool *cut)
{
    char *text = NULL;
    qs_err err;
    *cut = false;
    if (!tok || qs_tokenizer_decode(tok, ids, (size_t)n_ids, false, &text, &err))
        return strdup("\"?\"");
    size_t len = strlen(text);
    if (len > QS_LOG_PROMPT_CHARS) {
        len = QS_LOG_PROMPT_CHARS;
        while (len && ((unsigned char)text[len] & 0xC0) == 0x80)
            len--;
        text[len] = '\0';
        *cut = true;
    }
    cJSON *str = cJSON_CreateString(text);
    free(text);
    char *json = str ? cJSON_PrintUnformatted(str) : NULL;
    cJSON_Delete(str);
    return json ? json : strdup("\"?\"");
}

void qs_request_log(const qs_server *s, const char *id, const qs_openai_request *r, const qs_tokenizer *tok,
                    const int32_t *ids, int n_ids, int n_prompts)
{
    if (!s->log_requests)
        return;
    bool cut;
    char *prompt = prompt_excerpt(tok, ids, n_ids, &cut);
    const qs_sampling_params *p = &r->sampling;
    char seed[32] = "none", logprobs[16] = "none", max_tokens[32] = "the context end";
    if (r->max_tokens > 0)
        snprintf(max_tokens, sizeof max_tokens, "%d", r->max_tokens);
    if (p->has_seed)
        snprintf(seed, sizeof seed, "%llu", (unsigned long long)p->seed);
    if (p->logprobs >= 0)
        snprintf(logprobs, sizeof logprobs, "%d", p->logprobs);
    qs_info("request %s: prompt: %s%s (%d tokens%s), params: n=%d, temperature=%g, top_p=%g, top_k=%d, min_p=%g, "
            "presence_penalty=%g, frequency_penalty=%g, repetition_penalty=%g, max_tokens=%s, min_tokens=%d, seed=%s, "
            "logprobs=%s, stop=%d strings and %d ids, ignore_eos=%s, stream=%s",
            id, prompt ? prompt : "\"?\"", cut ? "..." : "", n_ids, n_prompts > 1 ? ", the first of several prompts" : "",
            r->n, p->temperature, p->top_p, p->top_k, p->min_p, p->presence_penalty, p->frequency_penalty,
            p->repetition_penalty, max_tokens, r->min_tokens, seed, logprobs, r->n_stop, r->n_stop_token_ids,
            r->ignore_eos ? "true" : "false", r->stream ? "true" : "false");
    free(prompt);
}
