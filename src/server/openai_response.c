/* openai_response.c — OpenAI response objects (see openai_response.h). */
#include "server/openai_response.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tokenizer.h"
#include "util/json_strings.h"

cJSON *qs_resp_base(bool chat, bool chunk, const char *id, int64_t created, const char *model)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", id);
    cJSON_AddStringToObject(o, "object", !chat ? "text_completion" : chunk ? "chat.completion.chunk" : "chat.completion");
    cJSON_AddNumberToObject(o, "created", (double)created);
    cJSON_AddStringToObject(o, "model", model);
    cJSON_AddArrayToObject(o, "choices");
    return o;
}

cJSON *qs_resp_usage(int prompt_tokens, int completion_tokens, int cached_tokens)
{
    cJSON *u = cJSON_CreateObject();
    cJSON_AddNumberToObject(u, "prompt_tokens", prompt_tokens);
    cJSON_AddNumberToObject(u, "total_tokens", prompt_tokens + completion_tokens);
    cJSON_AddNumberToObject(u, "completion_tokens", completion_tokens);
    cJSON *d = cJSON_AddObjectToObject(u, "prompt_tokens_details");
    cJSON_AddNumberToObject(d, "cached_tokens", cached_tokens);
    return u;
}

const char *qs_resp_finish_reason(qs_finish_reason r) { return r == QS_FINISH_NONE ? NULL : qs_finish_reason_name(r); }

void qs_resp_add_finish_reason(cJSON *choice, qs_finish_reason r)
{
    const char *s = qs_resp_finish_reason(r);
    if (s)
        cJSON_AddStringToObject(choice, "finish_reason", s);
    else
        cJSON_AddNullToObject(choice, "finish_reason");
}

cJSON *qs_resp_logprobs_new(bool chat)
{
    cJSON *lp = cJSON_CreateObject();
    if (chat) {
        cJSON_AddArrayToObject(lp, "content");
    } else {
        cJSON_AddArrayToObject(lp, "tokens");
        cJSON_AddArrayToObject(lp, "token_logprobs");
        cJSON_AddArrayToObject(lp, "top_logprobs");
        cJSON_AddArrayToObject(lp, "text_offset");
    }
    return lp;
}

/* The token's text as it reads inside a sequence. Decoding it alone would drop the leading
 * space Metaspace tokenizers strip from the first token ("▁there" -> "there"), so the text is
 * taken as the difference between decoding [id, id] and [id]. A NUL byte in it is kept as
 * json_strings.h's mark, so the JSON reads \u0000 and `bytes` reads 0. */
static char *token_text_of(const qs_tokenizer *tok, int32_t id)
{
    char *one = NULL, *two = NULL, *text = NULL;
    size_t n1 = 0, n2 = 0;
    qs_err err;
    int32_t pair[2] = {id, id};
    if (tok && qs_tokenizer_decode_n(tok, &id, 1, false, &one, &n1, &err) == 0) {
        if (qs_tokenizer_decode_n(tok, pair, 2, false, &two, &n2, &err) == 0 && n2 >= n1 && !memcmp(two, one, n1))
            text = qs_json_marked_copy(two + n1, n2 - n1); /* a NUL byte stays in the string, marked */
        else
            text = qs_json_marked_copy(one, n1);
        free(one);
        free(two);
        return text;
    }
    char buf[32];
    snprintf(buf, sizeof buf, "token_id:%d", id);
    return strdup(buf);
}

/* return_tokens_as_token_ids: tokens read "token_id:N" (vLLM), whatever their text. */
char *qs_resp_token_text(const qs_tokenizer *tok, int32_t id, bool as_ids)
{
    if (!as_ids)
        return token_text_of(tok, id);
    char buf[32];
    snprintf(buf, sizeof buf, "token_id:%d", id);
    return strdup(buf);
}

/* -inf (a masked token) is not JSON: report the lowest finite float instead. */
static double finite_lp(float x) { return isfinite(x) ? (double)x : -9999.0; }

static cJSON *bytes_array(const char *s)
{
    cJSON *a = cJSON_CreateArray();
    for (const char *p = s; *p; p++)
        cJSON_AddItemToArray(a, cJSON_CreateNumber(qs_json_marked_byte(p)));
    return a;
}

void qs_resp_logprobs_add(cJSON *lp, bool chat, const qs_tokenizer *tok, const qs_token_logprobs *l, int n_top,
                          size_t text_offset)
{
    qs_resp_logprobs_add_as(lp, chat, tok, l, n_top, text_offset, false);
}

void qs_resp_logprobs_add_as(cJSON *lp, bool chat, const qs_tokenizer *tok, const qs_token_logprobs *l, int n_top,
                             size_t text_offset, bool as_ids)
{
    char *text = qs_resp_token_text(tok, l->token_id, as_ids);
    if (!text)
        return;
    int top = n_top < l->n_top ? n_top : l->n_top;
    if (chat) {
        cJSON *entry = cJSON_CreateObject();
        cJSON_AddStringToObject(entry, "token", text);
        cJSON_AddNumberToObject(entry, "logprob", finite_lp(l->logprob));
        cJSON_AddItemToObject(entry, "bytes", bytes_array(text));
        cJSON *tops = cJSON_AddArrayToObject(entry, "top_logprobs");
        for (int i = 0; i < top; i++) {
            char *t = qs_resp_token_text(tok, l->top_ids[i], as_ids);
            if (!t)
                continue;
            cJSON *alt = cJSON_CreateObject();
            cJSON_AddStringToObject(alt, "token", t);
            cJSON_AddNumberToObject(alt, "logprob", finite_lp(l->top_logprobs[i]));
            cJSON_AddItemToObject(alt, "bytes", bytes_array(t));
            cJSON_AddItemToArray(tops, alt);
            free(t);
        }
        cJSON_AddItemToArray(cJSON_GetObjectItem(lp, "content"), entry);
    } else {
        cJSON_AddItemToArray(cJSON_GetObjectItem(lp, "tokens"), cJSON_CreateString(text));
        cJSON_AddItemToArray(cJSON_GetObjectItem(lp, "token_logprobs"), cJSON_CreateNumber(finite_lp(l->logprob)));
        cJSON *tops = cJSON_CreateObject();
        /* the chosen token is always listed, as vLLM does */
        cJSON_AddNumberToObject(tops, text, finite_lp(l->logprob));
        for (int i = 0; i < top; i++) {
            char *t = qs_resp_token_text(tok, l->top_ids[i], as_ids);
            if (t && !cJSON_GetObjectItemCaseSensitive(tops, t))
                cJSON_AddNumberToObject(tops, t, finite_lp(l->top_logprobs[i]));
            free(t);
        }
        cJSON_AddItemToArray(cJSON_GetObjectItem(lp, "top_logprobs"), tops);
        cJSON_AddItemToArray(cJSON_GetObjectItem(lp, "text_offset"), cJSON_CreateNumber((double)text_offset));
    }
    free(text);
}

char *qs_resp_sse(const cJSON *obj, size_t *len)
{
    char *json = qs_json_print(obj);
    if (!json)
        return NULL;
    size_t n = strlen(json);
    char *out = malloc(n + 9);
    if (out) {
        memcpy(out, "data: ", 6);
        memcpy(out + 6, json, n);
        memcpy(out + 6 + n, "\n\n", 3);
        *len = n + 8;
    }
    free(json);
    return out;
}
