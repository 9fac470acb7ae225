/* prompt_logprobs_json.c — prompt logprobs as JSON (see prompt_logprobs_json.h). */
#include "server/prompt_logprobs_json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/openai_response.h"

static double finite_or_floor(float x) { return isfinite(x) ? (double)x : -9999.0; }

static void add_entry(cJSON *obj, const qs_tokenizer *tok, int32_t id, float logprob, int rank, bool as_ids)
{
    char key[16];
    snprintf(key, sizeof key, "%d", id);
    if (cJSON_GetObjectItemCaseSensitive(obj, key))
        return;
    cJSON *e = cJSON_AddObjectToObject(obj, key);
    cJSON_AddNumberToObject(e, "logprob", finite_or_floor(logprob));
    cJSON_AddNumberToObject(e, "rank", rank);
    char *t = qs_resp_token_text(tok, id, as_ids);
    cJSON_AddStringToObject(e, "decoded_token", t ? t : "");
    free(t);
}

cJSON *qs_resp_prompt_logprobs(const qs_tokenizer *tok, const qs_prompt_logprob *lp, int n, bool as_ids)
{
    cJSON *arr = cJSON_CreateArray();
    for (int i = 0; i < n; i++) {
        if (i == 0) {
            cJSON_AddItemToArray(arr, cJSON_CreateNull());
            continue;
        }
        cJSON *o = cJSON_CreateObject();
        add_entry(o, tok, lp[i].token_id, lp[i].logprob, lp[i].rank, as_ids);
        for (int k = 0; k < lp[i].n_top; k++)
            add_entry(o, tok, lp[i].top_ids[k], lp[i].top_logprobs[k], k + 1, as_ids);
        cJSON_AddItemToArray(arr, o);
    }
    return arr;
}

size_t qs_resp_echo_logprobs(cJSON *logprobs, const qs_tokenizer *tok, const qs_prompt_logprob *lp, int n, int n_top,
                             bool as_ids)
{
    cJSON *tokens = cJSON_GetObjectItem(logprobs, "tokens");
    cJSON *token_lps = cJSON_GetObjectItem(logprobs, "token_logprobs");
    cJSON *tops = cJSON_GetObjectItem(logprobs, "top_logprobs");
    cJSON *offsets = cJSON_GetObjectItem(logprobs, "text_offset");
    size_t offset = 0;
    for (int i = 0; i < n; i++) {
        char *text = qs_resp_token_text(tok, lp[i].token_id, as_ids);
        cJSON_AddItemToArray(tokens, cJSON_CreateString(text ? text : ""));
        cJSON_AddItemToArray(offsets, cJSON_CreateNumber((double)offset));
        if (i == 0) {
            cJSON_AddItemToArray(token_lps, cJSON_CreateNull());
            cJSON_AddItemToArray(tops, cJSON_CreateNull());
        } else {
            cJSON_AddItemToArray(token_lps, cJSON_CreateNumber(finite_or_floor(lp[i].logprob)));
            cJSON *alts = cJSON_CreateObject();
            if (text)
                cJSON_AddNumberToObject(alts, text, finite_or_floor(lp[i].logprob));
            int top = n_top < lp[i].n_top ? n_top : lp[i].n_top;
            for (int k = 0; k < top; k++) {
                char *t = qs_resp_token_text(tok, lp[i].top_ids[k], as_ids);
                if (t && !cJSON_GetObjectItemCaseSensitive(alts, t))
                    cJSON_AddNumberToObject(alts, t, finite_or_floor(lp[i].top_logprobs[k]));
                free(t);
            }
            cJSON_AddItemToArray(tops, alts);
        }
        offset += text ? strlen(text) : 0;
        free(text);
    }
    return offset;
}
