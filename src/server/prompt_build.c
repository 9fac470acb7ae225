/* prompt_build.c — prompt text / messages to token ids (see prompt_build.h). */
#include "server/prompt_build.h"

#include <stdlib.h>
#include <string.h>

#include "server/chat_messages.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

int qs_render_chat_with(const qs_server_model *m, const qs_chat_template *t, const char *param, const cJSON *messages,
                        const cJSON *tools, bool add_generation_prompt, const cJSON *kwargs, char **text,
                        size_t *text_len, qs_api_error *e)
{
    cJSON *for_template = NULL;
    if (qs_chat_messages_for_template(messages, &for_template, e))
        return -1;
    qs_err err = {{0}};
    int rc = qs_chat_template_render_n(t, for_template, tools, add_generation_prompt, qs_tokenizer_bos_token(m->tokenizer),
                                       qs_tokenizer_eos_token(m->tokenizer), kwargs, text, text_len, &err);
    cJSON_Delete(for_template);
    if (rc)
        return qs_api_errorf(e, 400, param, "The chat template could not render these messages: %s", err.msg);
    return 0;
}

int qs_render_chat(const qs_server_model *m, const cJSON *messages, const cJSON *tools, bool add_generation_prompt,
                   const cJSON *kwargs, char **text, size_t *text_len, qs_api_error *e)
{
    if (!m->chat_template)
        return qs_api_errorf(e, 400, "messages",
                             "This model has no chat template (tokenizer_config.json chat_template); use "
                             "/v1/completions.");
    return qs_render_chat_with(m, m->chat_template, "messages", messages, tools, add_generation_prompt, kwargs, text,
                               text_len, e);
}

int qs_encode_text(const qs_server_model *m, const char *text, size_t bytes, bool add_special_tokens, int32_t **ids,
                   int *n, qs_api_error *e)
{
    size_t count = 0;
    qs_err err = {{0}};
    if (m->max_prompt_bytes && bytes > m->max_prompt_bytes)
        return qs_api_errorf(e, 400, "prompt",
                             "The prompt is %zu bytes, more than any prompt that fits this model's maximum context "
                             "length of %d tokens can be (%zu bytes); it was not tokenized.",
                             bytes, m->max_model_len, m->max_prompt_bytes);
    if (qs_tokenizer_encode(m->tokenizer, text, bytes, add_special_tokens, ids, &count, &err))
        return qs_api_errorf(e, 400, "prompt", "The prompt cannot be tokenized: %s", err.msg);
    if (count > (size_t)1 << 30) {
        free(*ids);
        *ids = NULL;
        return qs_api_errorf(e, 400, "prompt", "The prompt is too long.");
    }
    *n = (int)count;
    return 0;
}

int qs_check_token_ids(const qs_server_model *m, const int32_t *ids, int n, const char *param, qs_api_error *e)
{
    for (int i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= m->vocab_size)
            return qs_api_errorf(e, 400, param, "Token id %d is outside the vocabulary [0, %d).", ids[i],
                                 m->vocab_size);
    return 0;
}

int qs_check_logit_bias(const qs_server_model *m, const qs_openai_request *r, qs_api_error *e)
{
    for (int i = 0; i < r->sampling.n_logit_bias; i++) {
        int32_t id = r->sampling.logit_bias[i].token_id;
        if (id < 0 || id >= m->vocab_size)
            return qs_api_errorf(e, 400, "logit_bias",
                                 "'logit_bias' key \"%d\" is not a token id of this model (vocabulary [0, %d)).", id,
                                 m->vocab_size);
    }
    return 0;
}
