/* request_prepare.c — chat prompt, echo, bad_words, allowed ids, truncation (see
 * request_prepare.h). */
#include "server/request_prepare.h"

#include <stdlib.h>
#include <string.h>

#include "server/prompt_build.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

/* The text of a message's content: the string, or the last text part of a list (as transformers
 * takes it for continue_final_message). */
static const char *content_text(const cJSON *msg)
{
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(msg, "content");
    if (cJSON_IsString(c))
        return c->valuestring;
    if (cJSON_IsArray(c)) {
        const char *last = NULL;
        const cJSON *part;
        cJSON_ArrayForEach(part, c)
        {
            const cJSON *t = cJSON_GetObjectItemCaseSensitive(part, "text");
            if (cJSON_IsString(t))
                last = t->valuestring;
        }
        return last;
    }
    return NULL;
}

static const cJSON *last_message(const qs_openai_request *r)
{
    const cJSON *last = NULL, *m;
    cJSON_ArrayForEach(m, r->messages) last = m;
    return last;
}

/* transformers: the rendered text ends right after the final message's content (its last
 * occurrence, else that of its stripped form), so the model continues it. */
static int cut_after_final_message(const qs_openai_request *r, char *text, size_t *text_len_io, qs_api_error *e)
{
    const char *final = content_text(last_message(r));
    if (!final)
        return qs_api_errorf(e, 400, "continue_final_message",
                             "'continue_final_message' needs a final message with text content.");
    const char *start = final, *end = final + strlen(final);
    size_t text_len = *text_len_io;
    for (int pass = 0; pass < 2; pass++) {
        size_t n = (size_t)(end - start);
        char *hit = NULL;
        for (char *p = text; n > 0 && (p = memmem(p, text_len - (size_t)(p - text), start, n)); p++)
            hit = p;
        if (hit || n == 0) {
            if (hit) {
                hit[n] = '\0';
                *text_len_io = (size_t)(hit + n - text);
            }
            return 0;
        }
        while (start < end && strchr(" \t\r\n", *start))
            start++;
        while (end > start && strchr(" \t\r\n", end[-1]))
            end--;
    }
    return qs_api_errorf(e, 400, "continue_final_message",
                         "'continue_final_message' is set but the final message does not appear in the chat after "
                         "applying the chat template.");
}

int qs_render_chat_request(const qs_server_model *m, const qs_openai_request *r, char **text, size_t *text_len,
                           qs_api_error *e)
{
    *text = NULL;
    if (!r->x.chat_template && !r->x.continue_final_message)
        return qs_render_chat(m, r->messages, r->tools, r->add_generation_prompt, r->chat_template_kwargs, text,
                              text_len, e);
    qs_chat_template *own = NULL;
    qs_err err = {{0}};
    if (r->x.chat_template &&
        qs_chat_template_compile(r->x.chat_template, "the request's chat_template", &own, &err))
        return qs_api_errorf(e, 400, "chat_template", "'chat_template' does not compile: %s", err.msg);
    const qs_chat_template *t = own ? own : m->chat_template;
    if (!t)
        return qs_api_errorf(e, 400, "messages",
                             "This model has no chat template (tokenizer_config.json chat_template); send "
                             "'chat_template' or use /v1/completions.");
    int rc = qs_render_chat_with(m, t, own ? "chat_template" : "messages", r->messages, r->tools,
                                 r->add_generation_prompt, r->chat_template_kwargs, text, text_len, e);
    qs_chat_template_free(own);
    if (rc)
        return -1;
    if (r->x.continue_final_message && cut_after_final_message(r, *text, text_len, e)) {
        free(*text);
        *text = NULL;
        return -1;
    }
    return 0;
}

const char *qs_chat_echo_content(const qs_openai_request *r)
{
    const cJSON *last = last_message(r);
    const cJSON *role = cJSON_GetObjectItemCaseSensitive(last, "role");
    const char *content = content_text(last);
    return cJSON_IsString(role) && !strcmp(role->valuestring, "assistant") && content ? content : "";
}

static int encode_plain(const qs_server_model *m, const char *text, int32_t **ids, size_t *n, qs_api_error *e)
{
    qs_err err = {{0}};
    if (qs_tokenizer_encode(m->tokenizer, text, strlen(text), false, ids, n, &err))
        return qs_api_errorf(e, 400, "bad_words", "A bad word cannot be tokenized: %s", err.msg);
    return 0;
}

static int push_word(int32_t **ids, size_t *n_ids, int **lens, int *n, const int32_t *w, size_t len)
{
    int32_t *p = realloc(*ids, (*n_ids + len + 1) * sizeof *p);
    if (!p)
        return -1;
    *ids = p;
    int *l = realloc(*lens, (size_t)(*n + 1) * sizeof *l);
    if (!l)
        return -1;
    *lens = l;
    memcpy(*ids + *n_ids, w, len * sizeof *w);
    *n_ids += len;
    (*lens)[(*n)++] = (int)len;
    return 0;
}

int qs_encode_bad_words(const qs_server_model *m, const qs_openai_request *r, int32_t **ids, int **lens, int *n,
                        qs_api_error *e)
{
    *ids = NULL;
    *lens = NULL;
    *n = 0;
    size_t n_ids = 0;
    for (int i = 0; i < r->x.n_bad_words; i++) {
        const char *word = r->x.bad_words[i];
        while (*word == ' ')
            word++; /* vLLM strips leading spaces before trying both forms */
        int32_t *plain = NULL, *spaced = NULL;
        size_t n_plain = 0, n_spaced = 0;
        char *with_space = malloc(strlen(word) + 2);
        if (!with_space)
            return qs_api_errorf(e, 500, NULL, "out of memory");
        with_space[0] = ' ';
        strcpy(with_space + 1, word);
        int rc = encode_plain(m, word, &plain, &n_plain, e) || encode_plain(m, with_space, &spaced, &n_spaced, e);
        free(with_space);
        if (!rc && n_plain > 0 && push_word(ids, &n_ids, lens, n, plain, n_plain))
            rc = qs_api_errorf(e, 500, NULL, "out of memory");
        if (!rc && n_spaced > 0 && n_spaced == n_plain && spaced[0] != plain[0] &&
            push_word(ids, &n_ids, lens, n, spaced, n_spaced))
            rc = qs_api_errorf(e, 500, NULL, "out of memory");
        free(plain);
        free(spaced);
        if (rc) {
            free(*ids);
            free(*lens);
            *ids = NULL;
            *lens = NULL;
            *n = 0;
            return -1;
        }
    }
    return 0;
}

int qs_check_allowed_token_ids(const qs_server_model *m, const qs_openai_request *r, qs_api_error *e)
{
    return qs_check_token_ids(m, r->x.allowed_token_ids, r->x.n_allowed_token_ids, "allowed_token_ids", e);
}

void qs_truncate_prompt(const qs_openai_request *r, int32_t *ids, int *n)
{
    int k = r->x.truncate_prompt_tokens;
    if (k <= 0 || *n <= k)
        return;
    memmove(ids, ids + (*n - k), (size_t)k * sizeof *ids);
    *n = k;
}
