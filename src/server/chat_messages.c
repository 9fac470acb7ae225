/* chat_messages.c — messages for the chat template (see chat_messages.h). */
#include "server/chat_messages.h"

#include "util/json_strings.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistr.h>

static bool valid_utf8(const char *s) { return u8_check((const uint8_t *)s, strlen(s)) == NULL; }

static bool is_media_part(const char *type)
{
    static const char *const MEDIA[] = {"image_url", "input_image", "image", "image_pil", "image_embeds",
                                        "audio_url", "input_audio", "audio", "audio_embeds", "video_url",
                                        "video",     "file",        "input_file"};
    for (size_t i = 0; i < sizeof MEDIA / sizeof MEDIA[0]; i++)
        if (!strcmp(type, MEDIA[i]))
            return true;
    return false;
}

/* Appends s[0..n) to a growing "\n"-joined string. */
static int join(char **acc, size_t *len, const char *s, size_t n, bool first)
{
    char *p = realloc(*acc, *len + n + 2);
    if (!p)
        return -1;
    *acc = p;
    if (!first)
        p[(*len)++] = '\n';
    memcpy(p + *len, s, n);
    *len += n;
    p[*len] = '\0';
    return 0;
}

static cJSON *content_text(const cJSON *content, int i, qs_api_error *e)
{
    if (!content || cJSON_IsNull(content))
        return cJSON_CreateString("");
    if (cJSON_IsString(content))
        return qs_json_string_n(content->valuestring, qs_json_string_len(content));
    char *acc = NULL;
    size_t len = 0;
    int j = 0;
    const cJSON *part;
    cJSON_ArrayForEach(part, content)
    {
        char param[64];
        snprintf(param, sizeof param, "messages[%d].content[%d]", i, j);
        const char *text = NULL;
        size_t text_len = 0;
        if (cJSON_IsString(part)) {
            text = part->valuestring;
            text_len = qs_json_string_len(part);
        } else {
            const cJSON *type = cJSON_GetObjectItemCaseSensitive(part, "type");
            if (!cJSON_IsObject(part) || !cJSON_IsString(type)) {
                free(acc);
                qs_api_errorf(e, 400, param, "%s must be a string or an object with a string 'type'.", param);
                return NULL;
            }
            if (is_media_part(type->valuestring)) {
                free(acc);
                qs_api_errorf(e, 400, param,
                              "%s is a '%.40s' part, but this model takes text only: send 'text' parts.", param,
                              type->valuestring);
                return NULL;
            }
            if (strcmp(type->valuestring, "text") != 0) {
                free(acc);
                qs_api_errorf(e, 400, param, "%s has an unknown part type '%.40s'; this model takes 'text' parts.",
                              param, type->valuestring);
                return NULL;
            }
            const cJSON *t = cJSON_GetObjectItemCaseSensitive(part, "text");
            if (!cJSON_IsString(t)) {
                free(acc);
                qs_api_errorf(e, 400, param, "%s: a 'text' part needs a string 'text'.", param);
                return NULL;
            }
            text = t->valuestring;
            text_len = qs_json_string_len(t);
        }
        if (!valid_utf8(text)) {
            free(acc);
            qs_api_errorf(e, 400, param, "%s is not valid UTF-8.", param);
            return NULL;
        }
        if (join(&acc, &len, text, text_len, j == 0)) {
            free(acc);
            qs_api_errorf(e, 500, NULL, "out of memory");
            return NULL;
        }
        j++;
    }
    cJSON *s = qs_json_string_n(acc ? acc : "", len);
    free(acc);
    return s;
}

static cJSON *tool_calls_for_template(const cJSON *calls, int i, qs_api_error *e)
{
    if (!cJSON_IsArray(calls)) {
        char param[64];
        snprintf(param, sizeof param, "messages[%d].tool_calls", i);
        qs_api_errorf(e, 400, param, "%s must be an array.", param);
        return NULL;
    }
    cJSON *out = cJSON_Duplicate(calls, true);
    int j = 0;
    cJSON *call;
    cJSON_ArrayForEach(call, out)
    {
        char param[64];
        snprintf(param, sizeof param, "messages[%d].tool_calls[%d]", i, j);
        cJSON *fn = cJSON_GetObjectItemCaseSensitive(call, "function");
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(fn, "name");
        if (!cJSON_IsObject(call) || !cJSON_IsObject(fn) || !cJSON_IsString(name)) {
            cJSON_Delete(out);
            qs_api_errorf(e, 400, param, "%s must be {\"id\", \"type\": \"function\", \"function\": {\"name\", "
                                         "\"arguments\"}}.", param);
            return NULL;
        }
        cJSON *args = cJSON_GetObjectItemCaseSensitive(fn, "arguments");
        cJSON *parsed = NULL;
        if (!args || cJSON_IsNull(args) || (cJSON_IsString(args) && !args->valuestring[0]))
            parsed = cJSON_CreateObject();
        else if (cJSON_IsString(args) && !(parsed = cJSON_Parse(args->valuestring))) {
            cJSON_Delete(out);
            snprintf(param, sizeof param, "messages[%d].tool_calls[%d]", i, j);
            qs_api_errorf(e, 400, param, "%s.function.arguments is not valid JSON.", param);
            return NULL;
        }
        if (parsed && !cJSON_ReplaceItemInObjectCaseSensitive(fn, "arguments", parsed))
            cJSON_AddItemToObject(fn, "arguments", parsed);
        j++;
    }
    return out;
}

int qs_chat_messages_for_template(const cJSON *messages, cJSON **out, qs_api_error *e)
{
    *out = NULL;
    cJSON *arr = cJSON_CreateArray();
    if (!arr)
        return qs_api_errorf(e, 500, NULL, "out of memory");
    int i = 0;
    const cJSON *m;
    cJSON_ArrayForEach(m, messages)
    {
        const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
        if (!cJSON_IsObject(m) || !cJSON_IsString(role)) {
            cJSON_Delete(arr);
            return qs_api_errorf(e, 400, "messages", "messages[%d] must be an object with a string 'role'.", i);
        }
        cJSON *msg = cJSON_CreateObject();
        cJSON_AddItemToArray(arr, msg);
        cJSON_AddStringToObject(msg, "role", role->valuestring);
        const cJSON *content = cJSON_GetObjectItemCaseSensitive(m, "content");
        if (content && !cJSON_IsNull(content) && !cJSON_IsString(content) && !cJSON_IsArray(content)) {
            cJSON_Delete(arr);
            return qs_api_errorf(e, 400, "messages",
                                 "messages[%d].content must be a string, an array of content parts or null.", i);
        }
        cJSON *text = content_text(content, i, e);
        if (!text) {
            cJSON_Delete(arr);
            return -1;
        }
        cJSON_AddItemToObject(msg, "content", text);
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(m, "name");
        if (cJSON_IsString(name))
            cJSON_AddStringToObject(msg, "name", name->valuestring);
        const cJSON *calls = cJSON_GetObjectItemCaseSensitive(m, "tool_calls");
        if (!strcmp(role->valuestring, "assistant") && calls && !cJSON_IsNull(calls)) {
            cJSON *tc = tool_calls_for_template(calls, i, e);
            if (!tc) {
                cJSON_Delete(arr);
                return -1;
            }
            cJSON_AddItemToObject(msg, "tool_calls", tc);
        }
        const cJSON *call_id = cJSON_GetObjectItemCaseSensitive(m, "tool_call_id");
        if (!strcmp(role->valuestring, "tool") && call_id && !cJSON_IsNull(call_id)) {
            if (!cJSON_IsString(call_id)) {
                cJSON_Delete(arr);
                char param[64];
                snprintf(param, sizeof param, "messages[%d].tool_call_id", i);
                return qs_api_errorf(e, 400, param, "%s must be a string.", param);
            }
            cJSON_AddStringToObject(msg, "tool_call_id", call_id->valuestring);
        }
        i++;
    }
    *out = arr;
    return 0;
}
