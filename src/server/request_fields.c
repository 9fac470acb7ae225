/* request_fields.c — vLLM's extra request fields (see request_fields.h): parsed and validated
 * as vLLM's pydantic models and serving code validate them, or refused by name when qserve has
 * no way to honour them, so no field is accepted and silently ignored. */
#include "server/request_fields.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistr.h>

#include "server/json_body.h"

static int get_flag(const cJSON *obj, const char *name, bool *out, qs_api_error *e)
{
    const cJSON *v = qs_json_field(obj, name);
    if (!v)
        return 0;
    if (!cJSON_IsBool(v))
        return qs_api_errorf(e, 400, name, "'%s' must be a boolean.", name);
    *out = cJSON_IsTrue(v);
    return 0;
}

static bool empty_container(const cJSON *v)
{
    return (cJSON_IsArray(v) || cJSON_IsObject(v)) && cJSON_GetArraySize(v) == 0;
}

/* Fields that would change the result but that qserve cannot honour: a 400 naming the field
 * whenever one carries a value other than its no-op default. */
static int refuse_unsupported(const cJSON *root, bool chat, qs_api_error *e)
{
    const cJSON *v;
    if (!chat && (v = qs_json_field(root, "suffix")))
        return qs_api_errorf(e, 400, "suffix", "'suffix' is not supported: the served models do not do fill-in-the-middle.");
    if (!chat && (v = qs_json_field(root, "prompt_embeds")))
        return qs_api_errorf(e, 400, "prompt_embeds", "'prompt_embeds' is not supported by this server; send text or token ids.");
    if ((v = qs_json_field(root, "use_beam_search"))) {
        if (!cJSON_IsBool(v))
            return qs_api_errorf(e, 400, "use_beam_search", "'use_beam_search' must be a boolean.");
        if (cJSON_IsTrue(v))
            return qs_api_errorf(e, 400, "use_beam_search", "Beam search is not supported by this server.");
    }
    if ((v = qs_json_field(root, "length_penalty")) && (!cJSON_IsNumber(v) || !isfinite(v->valuedouble)))
        return qs_api_errorf(e, 400, "length_penalty", "'length_penalty' must be a number.");
    if ((v = qs_json_field(root, "priority"))) {
        if (!qs_json_is_integer(v))
            return qs_api_errorf(e, 400, "priority", "'priority' must be an integer.");
        if (v->valuedouble != 0)
            return qs_api_errorf(e, 400, "priority",
                                 "'priority' %g needs priority scheduling, which this server does not do; send 0.",
                                 v->valuedouble);
    }
    if ((v = qs_json_field(root, "logits_processors")) && !empty_container(v))
        return qs_api_errorf(e, 400, "logits_processors",
                             "'logits_processors' is not supported by this server (vLLM needs "
                             "--logits-processor-pattern for it too).");
    if ((v = qs_json_field(root, "kv_transfer_params")))
        return qs_api_errorf(e, 400, "kv_transfer_params",
                             "'kv_transfer_params' is not supported: this server does no disaggregated serving.");
    if ((v = qs_json_field(root, "vllm_xargs")) && !empty_container(v))
        return qs_api_errorf(e, 400, "vllm_xargs", "'vllm_xargs' is not supported: this server has no extensions to read them.");
    if ((v = qs_json_field(root, "spaces_between_special_tokens"))) {
        if (!cJSON_IsBool(v))
            return qs_api_errorf(e, 400, "spaces_between_special_tokens", "'spaces_between_special_tokens' must be a boolean.");
        if (!cJSON_IsTrue(v))
            return qs_api_errorf(e, 400, "spaces_between_special_tokens",
                                 "'spaces_between_special_tokens': false is not supported; special tokens are decoded "
                                 "as the tokenizer joins them.");
    }
    if (chat && (v = qs_json_field(root, "mm_processor_kwargs")) && !empty_container(v))
        return qs_api_errorf(e, 400, "mm_processor_kwargs", "'mm_processor_kwargs' is not supported: this server serves text-only models.");
    if (chat && (v = qs_json_field(root, "reasoning_effort")))
        return qs_api_errorf(e, 400, "reasoning_effort",
                             "'reasoning_effort' is not supported: the served chat templates take no reasoning budget.");
    if (chat && (v = qs_json_field(root, "include_reasoning"))) {
        if (!cJSON_IsBool(v))
            return qs_api_errorf(e, 400, "include_reasoning", "'include_reasoning' must be a boolean.");
        if (!cJSON_IsTrue(v))
            return qs_api_errorf(e, 400, "include_reasoning",
                                 "'include_reasoning': false is not supported; the reasoning parser always returns "
                                 "reasoning_content.");
    }
    if (chat && (v = qs_json_field(root, "structural_tag")))
        return qs_api_errorf(e, 400, "structural_tag",
                             "'structural_tag' is not supported; use response_format or structured_outputs.");
    if (chat && (v = qs_json_field(root, "documents")))
        return qs_api_errorf(e, 400, "documents", "'documents' is not supported by this server's chat template renderer.");
    return 0;
}

static int parse_allowed(const cJSON *root, qs_vllm_fields *f, qs_api_error *e)
{
    const cJSON *v = qs_json_field(root, "allowed_token_ids");
    if (!v)
        return 0;
    if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) == 0 || cJSON_GetArraySize(v) > QS_MAX_ALLOWED_TOKEN_IDS)
        return qs_api_errorf(e, 400, "allowed_token_ids", "'allowed_token_ids' must be a non-empty list of at most %d token ids.",
                             QS_MAX_ALLOWED_TOKEN_IDS);
    return qs_json_token_ids(v, "allowed_token_ids", &f->allowed_token_ids, &f->n_allowed_token_ids, e);
}

static int parse_bad_words(const cJSON *root, qs_vllm_fields *f, qs_api_error *e)
{
    const cJSON *v = qs_json_field(root, "bad_words");
    if (!v)
        return 0;
    if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) > QS_MAX_BAD_WORDS)
        return qs_api_errorf(e, 400, "bad_words", "'bad_words' must be a list of at most %d strings.", QS_MAX_BAD_WORDS);
    int count = cJSON_GetArraySize(v);
    f->bad_words = calloc((size_t)(count ? count : 1), sizeof *f->bad_words);
    if (!f->bad_words)
        return qs_api_errorf(e, 500, NULL, "out of memory");
    const cJSON *it;
    cJSON_ArrayForEach(it, v)
    {
        if (!cJSON_IsString(it) || !it->valuestring[0] || strlen(it->valuestring) > 256 ||
            u8_check((const uint8_t *)it->valuestring, strlen(it->valuestring)))
            return qs_api_errorf(e, 400, "bad_words", "'bad_words' must hold non-empty UTF-8 strings of at most 256 bytes.");
        f->bad_words[f->n_bad_words] = strdup(it->valuestring);
        if (!f->bad_words[f->n_bad_words])
            return qs_api_errorf(e, 500, NULL, "out of memory");
        f->n_bad_words++;
    }
    return 0;
}

int qs_vllm_fields_parse(const cJSON *root, bool chat, int n, bool stream, qs_vllm_fields *f, qs_api_error *e)
{
    memset(f, 0, sizeof *f);
    f->prompt_logprobs = -1;
    f->add_special_tokens = !chat;
    if (refuse_unsupported(root, chat, e))
        return -1;
    long long x = 0;
    if (qs_json_get_int(root, "best_of", 1, QS_MAX_N, &x, e))
        return -1;
    f->best_of = (int)x;
    if (f->best_of && f->best_of < n)
        return qs_api_errorf(e, 400, "best_of", "'best_of' (%d) must be greater than or equal to 'n' (%d).", f->best_of, n);
    if (f->best_of > n && stream)
        return qs_api_errorf(e, 400, "best_of", "'best_of' greater than 'n' is not supported while streaming.");
    x = 0;
    if (qs_json_get_int(root, "truncate_prompt_tokens", 1, 1 << 30, &x, e))
        return -1;
    f->truncate_prompt_tokens = (int)x;
    x = -1;
    if (qs_json_get_int(root, "prompt_logprobs", 0, 20, &x, e))
        return -1;
    f->prompt_logprobs = (int)x;
    if (f->prompt_logprobs >= 0 && stream)
        return qs_api_errorf(e, 400, "prompt_logprobs", "'prompt_logprobs' is not available when 'stream' is true.");
    if (parse_allowed(root, f, e) || parse_bad_words(root, f, e) ||
        get_flag(root, "return_tokens_as_token_ids", &f->return_tokens_as_token_ids, e) ||
        get_flag(root, "add_special_tokens", &f->add_special_tokens, e))
        return -1;
    const cJSON *so = qs_json_field(root, "stream_options");
    if (cJSON_IsObject(so) && get_flag(so, "continuous_usage_stats", &f->continuous_usage_stats, e)) {
        snprintf(e->param, sizeof e->param, "stream_options");
        return -1;
    }
    const cJSON *rid = qs_json_field(root, "request_id");
    if (rid) {
        if (!cJSON_IsString(rid) || !rid->valuestring[0] || strlen(rid->valuestring) > QS_MAX_REQUEST_ID ||
            strspn(rid->valuestring, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:") !=
                strlen(rid->valuestring))
            return qs_api_errorf(e, 400, "request_id",
                                 "'request_id' must be a non-empty string of at most %d letters, digits or '-_.:'.",
                                 QS_MAX_REQUEST_ID);
        f->request_id = rid->valuestring;
    }
    if (!chat)
        return 0;
    if (get_flag(root, "echo", &f->chat_echo, e) ||
        get_flag(root, "continue_final_message", &f->continue_final_message, e))
        return -1;
    const cJSON *agp = qs_json_field(root, "add_generation_prompt");
    if (f->continue_final_message && (!agp || cJSON_IsTrue(agp)))
        return qs_api_errorf(e, 400, "continue_final_message",
                             "Cannot set both 'continue_final_message' and 'add_generation_prompt' to true; send "
                             "\"add_generation_prompt\": false.");
    const cJSON *tpl = qs_json_field(root, "chat_template");
    if (tpl) {
        if (!cJSON_IsString(tpl) || !tpl->valuestring[0])
            return qs_api_errorf(e, 400, "chat_template", "'chat_template' must be a non-empty Jinja template string.");
        f->chat_template = tpl->valuestring;
    }
    return 0;
}

void qs_vllm_fields_free(qs_vllm_fields *f)
{
    if (!f)
        return;
    free(f->allowed_token_ids);
    for (int i = 0; i < f->n_bad_words; i++)
        free(f->bad_words[i]);
    free(f->bad_words);
    memset(f, 0, sizeof *f);
}
