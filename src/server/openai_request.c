/* openai_request.c — validation of completions / chat request bodies (see openai_request.h).
 * Ranges follow the OpenAI API reference and vLLM's SamplingParams checks. */
#include "server/openai_request.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistr.h>

#include "server/json_body.h"
#include "server/request_fields.h"
#include "server/structured_request.h"
#include "structured/structured.h"
#include "util/json_strings.h"

static bool valid_utf8(const char *s) { return u8_check((const uint8_t *)s, strlen(s)) == NULL; }

/* A text field: valid UTF-8 over its whole length (a NUL, \u0000, is a character like any other;
 * the text travels with its length from here on). */
static bool valid_text(const cJSON *s)
{
    return cJSON_IsString(s) && u8_check((const uint8_t *)s->valuestring, qs_json_string_len(s)) == NULL;
}

/* A name-like field (model, role, part type, cache_salt) is compared as a C string: no NUL in it. */
static bool valid_name(const cJSON *s) { return cJSON_IsString(s) && !qs_json_string_has_nul(s) && valid_utf8(s->valuestring); }

static int get_double(const cJSON *obj, const char *name, double min, double max, bool min_open, double *out,
                      qs_api_error *e)
{
    const cJSON *v = qs_json_field(obj, name);
    if (!v)
        return 0;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
        return qs_api_errorf(e, 400, name, "'%s' must be a number.", name);
    double x = v->valuedouble;
    if (x < min || x > max || (min_open && x == min))
        return qs_api_errorf(e, 400, name, "'%s' must be in %s%g, %g], got %g.", name, min_open ? "(" : "[", min, max,
                             x);
    *out = x;
    return 0;
}

static int get_bool(const cJSON *obj, const char *name, bool *out, qs_api_error *e)
{
    const cJSON *v = qs_json_field(obj, name);
    if (!v)
        return 0;
    if (!cJSON_IsBool(v))
        return qs_api_errorf(e, 400, name, "'%s' must be a boolean.", name);
    *out = cJSON_IsTrue(v);
    return 0;
}

static int add_text_prompt(qs_openai_request *r, const cJSON *text, qs_api_error *e)
{
    if (!valid_text(text))
        return qs_api_errorf(e, 400, "prompt", "'prompt' is not valid UTF-8.");
    qs_prompt_input *p = &r->prompts[r->n_prompts];
    p->text_len = qs_json_string_len(text);
    p->text = malloc(p->text_len + 1);
    if (!p->text)
        return qs_api_errorf(e, 500, NULL, "out of memory");
    memcpy(p->text, text->valuestring, p->text_len + 1);
    r->n_prompts++;
    return 0;
}

static int add_ids_prompt(qs_openai_request *r, const cJSON *arr, qs_api_error *e)
{
    qs_prompt_input *p = &r->prompts[r->n_prompts];
    if (qs_json_token_ids(arr, "prompt", &p->ids, &p->n_ids, e))
        return -1;
    r->n_prompts++;
    if (p->n_ids == 0)
        return qs_api_errorf(e, 400, "prompt", "'prompt' holds an empty list of token ids.");
    return 0;
}

/* prompt: "text" | ["a", "b"] | [1, 2, 3] | [[1, 2], [3]] */
static int parse_prompt(qs_openai_request *r, const cJSON *prompt, qs_api_error *e)
{
    if (!prompt)
        return qs_api_errorf(e, 400, "prompt", "'prompt' is required.");
    /* a flat list of token ids is one prompt, however long */
    bool flat_ids = cJSON_IsArray(prompt) && cJSON_IsNumber(prompt->child);
    int count = cJSON_IsArray(prompt) && !flat_ids ? cJSON_GetArraySize(prompt) : 1;
    if (cJSON_IsArray(prompt) && cJSON_GetArraySize(prompt) == 0)
        return qs_api_errorf(e, 400, "prompt", "'prompt' must not be an empty list.");
    /* a flat list of numbers is one prompt of token ids, however long */
    bool ids = cJSON_IsArray(prompt) && cJSON_IsNumber(prompt->child);
    if (count > QS_MAX_PROMPTS && !ids)
        return qs_api_errorf(e, 400, "prompt", "'prompt' holds %d prompts; at most %d are accepted.", count,
                             QS_MAX_PROMPTS);
    r->prompts = calloc((size_t)count, sizeof *r->prompts);
    if (!r->prompts)
        return qs_api_errorf(e, 500, NULL, "out of memory");
    if (cJSON_IsString(prompt))
        return add_text_prompt(r, prompt, e);
    if (!cJSON_IsArray(prompt))
        return qs_api_errorf(e, 400, "prompt",
                             "'prompt' must be a string, a list of strings, a list of token ids or a list of lists of "
                             "token ids.");
    const cJSON *first = prompt->child;
    if (flat_ids)
        return add_ids_prompt(r, prompt, e);
    const cJSON *it;
    cJSON_ArrayForEach(it, prompt)
    {
        if (cJSON_IsString(it) && cJSON_IsString(first)) {
            if (add_text_prompt(r, it, e))
                return -1;
        } else if (cJSON_IsArray(it) && cJSON_IsArray(first)) {
            if (add_ids_prompt(r, it, e))
                return -1;
        } else {
            return qs_api_errorf(e, 400, "prompt",
                                 "'prompt' lists must hold only strings, only token ids, or only lists of token ids.");
        }
    }
    return 0;
}

static int parse_messages(qs_openai_request *r, const cJSON *msgs, qs_api_error *e)
{
    if (!msgs)
        return qs_api_errorf(e, 400, "messages", "'messages' is required.");
    if (!cJSON_IsArray(msgs) || cJSON_GetArraySize(msgs) == 0)
        return qs_api_errorf(e, 400, "messages", "'messages' must be a non-empty array of message objects.");
    const cJSON *m;
    int i = 0;
    cJSON_ArrayForEach(m, msgs)
    {
        const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
        if (!cJSON_IsObject(m) || !cJSON_IsString(role))
            return qs_api_errorf(e, 400, "messages", "messages[%d] must be an object with a string 'role'.", i);
        if (!valid_name(role))
            return qs_api_errorf(e, 400, "messages", "messages[%d].role is not valid UTF-8 or holds a NUL.", i);
        const cJSON *content = cJSON_GetObjectItemCaseSensitive(m, "content");
        if (content && !cJSON_IsNull(content) && !cJSON_IsString(content) && !cJSON_IsArray(content))
            return qs_api_errorf(e, 400, "messages",
                                 "messages[%d].content must be a string, an array of content parts or null.", i);
        if (cJSON_IsString(content) && !valid_text(content))
            return qs_api_errorf(e, 400, "messages", "messages[%d].content is not valid UTF-8.", i);
        /* content parts are checked (text only) where the template's messages are built: chat_messages.c */
        i++;
    }
    r->messages = msgs;
    return 0;
}

static int parse_stop(qs_openai_request *r, const cJSON *stop, qs_api_error *e)
{
    if (!stop)
        return 0;
    int count = cJSON_IsArray(stop) ? cJSON_GetArraySize(stop) : 1;
    if (!cJSON_IsString(stop) && !cJSON_IsArray(stop))
        return qs_api_errorf(e, 400, "stop", "'stop' must be a string or a list of strings.");
    if (count > QS_MAX_STOP)
        return qs_api_errorf(e, 400, "stop", "'stop' holds %d strings; at most %d are accepted.", count, QS_MAX_STOP);
    r->stop = calloc((size_t)(count > 0 ? count : 1), sizeof *r->stop);
    r->stop_lens = calloc((size_t)(count > 0 ? count : 1), sizeof *r->stop_lens);
    if (!r->stop || !r->stop_lens)
        return qs_api_errorf(e, 500, NULL, "out of memory");
    const cJSON *single[1] = {stop};
    for (int i = 0; i < count; i++) {
        const cJSON *s = cJSON_IsArray(stop) ? cJSON_GetArrayItem(stop, i) : single[0];
        if (!cJSON_IsString(s))
            return qs_api_errorf(e, 400, "stop", "'stop' must be a string or a list of strings.");
        size_t len = qs_json_string_len(s);
        if (len > QS_MAX_STOP_LEN)
            return qs_api_errorf(e, 400, "stop", "stop strings are limited to %d bytes.", QS_MAX_STOP_LEN);
        if (!valid_text(s))
            return qs_api_errorf(e, 400, "stop", "'stop' is not valid UTF-8.");
        r->stop[r->n_stop] = malloc(len + 1);
        if (!r->stop[r->n_stop])
            return qs_api_errorf(e, 500, NULL, "out of memory");
        memcpy(r->stop[r->n_stop], s->valuestring, len + 1);
        r->stop_lens[r->n_stop] = len;
        r->n_stop++;
    }
    return 0;
}

static int parse_logit_bias(qs_openai_request *r, const cJSON *lb, qs_api_error *e)
{
    if (!lb)
        return 0;
    if (!cJSON_IsObject(lb))
        return qs_api_errorf(e, 400, "logit_bias", "'logit_bias' must be an object mapping token ids to biases.");
    int count = cJSON_GetArraySize(lb);
    if (count > QS_MAX_LOGIT_BIAS)
        return qs_api_errorf(e, 400, "logit_bias", "'logit_bias' holds %d entries; at most %d are accepted.", count,
                             QS_MAX_LOGIT_BIAS);
    r->logit_bias = calloc((size_t)(count > 0 ? count : 1), sizeof *r->logit_bias);
    if (!r->logit_bias)
        return qs_api_errorf(e, 500, NULL, "out of memory");
    const cJSON *it;
    cJSON_ArrayForEach(it, lb)
    {
        char *end = NULL;
        long id = strtol(it->string, &end, 10);
        if (!it->string[0] || *end || id < 0 || id > 2147483647L)
            return qs_api_errorf(e, 400, "logit_bias", "'logit_bias' keys must be token ids, got \"%.40s\".", it->string);
        if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble) || it->valuedouble < -100 || it->valuedouble > 100)
            return qs_api_errorf(e, 400, "logit_bias", "'logit_bias' values must be numbers in [-100, 100].");
        r->logit_bias[r->sampling.n_logit_bias++] = (qs_logit_bias){(int32_t)id, (float)it->valuedouble};
    }
    r->sampling.logit_bias = r->logit_bias;
    return 0;
}

static int parse_sampling(qs_openai_request *r, const cJSON *root, qs_api_error *e)
{
    qs_sampling_params *p = &r->sampling;
    if (get_double(root, "temperature", 0, 2, false, &p->temperature, e) ||
        get_double(root, "top_p", 0, 1, true, &p->top_p, e) || get_double(root, "min_p", 0, 1, false, &p->min_p, e) ||
        get_double(root, "presence_penalty", -2, 2, false, &p->presence_penalty, e) ||
        get_double(root, "frequency_penalty", -2, 2, false, &p->frequency_penalty, e) ||
        get_double(root, "repetition_penalty", 0, 10, true, &p->repetition_penalty, e))
        return -1;
    long long top_k = p->top_k, seed = 0;
    if (qs_json_get_int(root, "top_k", -1, 1 << 30, &top_k, e))
        return -1;
    p->top_k = (int)top_k;
    if (qs_json_field(root, "seed")) {
        const cJSON *s = qs_json_field(root, "seed");
        if (!qs_json_is_integer(s))
            return qs_api_errorf(e, 400, "seed", "'seed' must be an integer.");
        seed = (long long)s->valuedouble;
        p->has_seed = true;
        p->seed = (uint64_t)seed;
    }
    return parse_logit_bias(r, qs_json_field(root, "logit_bias"), e);
}

static int parse_logprobs(qs_openai_request *r, const cJSON *root, qs_api_error *e)
{
    r->sampling.logprobs = -1;
    if (r->kind == QS_API_COMPLETIONS) {
        long long lp = -1;
        if (qs_json_get_int(root, "logprobs", 0, QS_MAX_LOGPROBS, &lp, e))
            return -1;
        r->sampling.logprobs = (int)lp;
        return 0;
    }
    if (get_bool(root, "logprobs", &r->chat_logprobs, e))
        return -1;
    long long top = -1;
    if (qs_json_get_int(root, "top_logprobs", 0, QS_MAX_LOGPROBS, &top, e))
        return -1;
    if (top > 0 && !r->chat_logprobs) /* vLLM allows 0 without logprobs */
        return qs_api_errorf(e, 400, "top_logprobs", "'top_logprobs' needs 'logprobs': true.");
    if (r->chat_logprobs)
        r->sampling.logprobs = top >= 0 ? (int)top : 0;
    return 0;
}

int qs_openai_request_parse(qs_api_kind kind, const char *body, size_t len, qs_openai_request *r, qs_api_error *e)
{
    memset(r, 0, sizeof *r);
    r->kind = kind;
    r->n = 1;
    r->max_tokens = -1;
    r->skip_special_tokens = true;
    r->add_generation_prompt = true;
    qs_sampling_params_defaults(&r->sampling);
    r->root = qs_json_parse_body(body, len, e);
    if (!r->root)
        return -1;
    const cJSON *root = r->root;

    const cJSON *model = qs_json_field(root, "model");
    if (model) {
        if (!valid_name(model))
            return qs_api_errorf(e, 400, "model", "'model' must be a string.");
        r->model = strdup(model->valuestring);
    }
    if (kind == QS_API_COMPLETIONS) {
        if (parse_prompt(r, qs_json_field(root, "prompt"), e) || get_bool(root, "echo", &r->echo, e))
            return -1;
    } else {
        if (parse_messages(r, qs_json_field(root, "messages"), e))
            return -1;
        if (qs_tool_request_parse(root, &r->tool, e))
            return -1;
        r->tools = r->tool.tools;
        const cJSON *kw = qs_json_field(root, "chat_template_kwargs");
        if (kw && !cJSON_IsObject(kw))
            return qs_api_errorf(e, 400, "chat_template_kwargs", "'chat_template_kwargs' must be an object.");
        r->chat_template_kwargs = kw;
        if (get_bool(root, "add_generation_prompt", &r->add_generation_prompt, e))
            return -1;
    }

    /* completions default to 16 tokens as OpenAI and vLLM do; chat runs to the context end. With
     * echo, max_tokens 0 scores the prompt alone (lm-eval style). */
    long long v = kind == QS_API_COMPLETIONS ? 16 : -1;
    if (qs_json_get_int(root, "max_tokens", r->echo ? 0 : 1, 1 << 30, &v, e))
        return -1;
    if (kind == QS_API_CHAT && qs_json_get_int(root, "max_completion_tokens", 1, 1 << 30, &v, e))
        return -1;
    r->max_tokens = (int)v;
    v = 0;
    if (qs_json_get_int(root, "min_tokens", 0, 1 << 30, &v, e))
        return -1;
    r->min_tokens = (int)v;
    if (r->max_tokens > 0 && r->min_tokens > r->max_tokens)
        return qs_api_errorf(e, 400, "min_tokens", "'min_tokens' (%d) must not exceed 'max_tokens' (%d).",
                             r->min_tokens, r->max_tokens);
    v = 1;
    if (qs_json_get_int(root, "n", 1, QS_MAX_N, &v, e))
        return -1;
    r->n = (int)v;
    if (parse_sampling(r, root, e) || parse_logprobs(r, root, e) || parse_stop(r, qs_json_field(root, "stop"), e))
        return -1;
    const cJSON *stop_ids = qs_json_field(root, "stop_token_ids");
    if (stop_ids) {
        if (!cJSON_IsArray(stop_ids) || cJSON_GetArraySize(stop_ids) > QS_MAX_STOP_IDS)
            return qs_api_errorf(e, 400, "stop_token_ids", "'stop_token_ids' must be a list of at most %d token ids.",
                                 QS_MAX_STOP_IDS);
        if (qs_json_token_ids(stop_ids, "stop_token_ids", &r->stop_token_ids, &r->n_stop_token_ids, e))
            return -1;
    }
    if (get_bool(root, "stream", &r->stream, e) || get_bool(root, "ignore_eos", &r->ignore_eos, e) ||
        get_bool(root, "skip_special_tokens", &r->skip_special_tokens, e) ||
        get_bool(root, "include_stop_str_in_output", &r->include_stop_str_in_output, e))
        return -1;
    const cJSON *so = qs_json_field(root, "stream_options");
    if (so) {
        if (!cJSON_IsObject(so))
            return qs_api_errorf(e, 400, "stream_options", "'stream_options' must be an object.");
        if (!r->stream)
            return qs_api_errorf(e, 400, "stream_options", "'stream_options' is only allowed when 'stream' is true.");
        if (get_bool(so, "include_usage", &r->include_usage, e)) {
            snprintf(e->param, sizeof e->param, "stream_options");
            return -1;
        }
    }
    const cJSON *salt = qs_json_field(root, "cache_salt");
    if (salt) {
        if (!valid_name(salt) || !salt->valuestring[0] || strlen(salt->valuestring) > QS_MAX_CACHE_SALT)
            return qs_api_errorf(e, 400, "cache_salt", "'cache_salt' must be a non-empty string of at most %d bytes.",
                                 QS_MAX_CACHE_SALT);
        r->cache_salt = salt->valuestring;
    }
    const cJSON *user = qs_json_field(root, "user");
    if (user && !cJSON_IsString(user))
        return qs_api_errorf(e, 400, "user", "'user' must be a string.");
    if (qs_vllm_fields_parse(root, kind == QS_API_CHAT, r->n, r->stream, &r->x, e))
        return -1;
    if (r->max_tokens == 0 && r->x.best_of > r->n)
        return qs_api_errorf(e, 400, "best_of", "'best_of' needs generated tokens to rank; 'max_tokens' is 0.");
    if (r->stream && r->n_prompts > 1 && kind == QS_API_COMPLETIONS && r->echo)
        return qs_api_errorf(e, 400, "echo", "'echo' with several prompts is not supported while streaming.");
    if (qs_structured_request_parse(root, &r->grammar, e))
        return -1;
    return kind == QS_API_CHAT ? qs_tool_request_grammar(&r->tool, &r->grammar, e) : 0;
}

void qs_openai_request_free(qs_openai_request *r)
{
    if (!r)
        return;
    cJSON_Delete(r->root);
    free(r->model);
    for (int i = 0; i < r->n_prompts; i++) {
        free(r->prompts[i].text);
        free(r->prompts[i].ids);
    }
    free(r->prompts);
    free(r->logit_bias);
    for (int i = 0; i < r->n_stop; i++)
        free(r->stop[i]);
    free(r->stop);
    free(r->stop_lens);
    free(r->stop_token_ids);
    qs_vllm_fields_free(&r->x);
    qs_grammar_release(r->grammar);
    memset(r, 0, sizeof *r);
}
