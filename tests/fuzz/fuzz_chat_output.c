/* fuzz_chat_output.c — libFuzzer target for the tool-call and reasoning parsers, which read text
 * a model wrote (and a model can be prompted into writing anything). The first byte picks the
 * tool parser and the reasoning parser, the rest is the output; it is parsed one-shot and then
 * streamed in pieces whose sizes come from the data. Calls reported as made must have a name and
 * arguments that are a JSON object; nothing may crash or leak. Built only by `make fuzz`. */
#ifdef QS_FUZZING
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/chat_output.h"

static const char *const PARSERS[] = {"hermes", "llama3_json", "mistral", "pythonic"};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    qs_chat_output_config cfg = {.tools = qs_tool_parser_find(PARSERS[data[0] & 3]),
                                 .reasoning = (qs_reasoning_kind)((data[0] >> 2) % 3),
                                 .parallel_tool_calls = (data[0] & 0x20) == 0};
    if (data[0] & 0x40)
        cfg.tools = NULL;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    cJSON *msg = cJSON_CreateObject();
    int called = qs_chat_output_message(&cfg, text, len, msg);
    const cJSON *call;
    cJSON_ArrayForEach(call, cJSON_GetObjectItem(msg, "tool_calls"))
    {
        const cJSON *fn = cJSON_GetObjectItem(call, "function");
        const cJSON *args = cJSON_GetObjectItem(fn, "arguments");
        if (!cJSON_IsString(cJSON_GetObjectItem(fn, "name")) || !cJSON_IsString(args))
            abort();
        cJSON *parsed = cJSON_Parse(args->valuestring);
        if (!cJSON_IsObject(parsed))
            abort();
        cJSON_Delete(parsed);
    }
    if (called == 1 && cJSON_GetArraySize(cJSON_GetObjectItem(msg, "tool_calls")) == 0)
        abort();
    cJSON_Delete(msg);

    qs_chat_stream *s = qs_chat_stream_new(&cfg);
    size_t at = 0;
    unsigned step = data[0] % 7 + 1;
    while (s) {
        size_t n = len - at < step ? len - at : step;
        bool end = at + n == len;
        cJSON *delta = cJSON_CreateObject();
        qs_chat_stream_feed(s, text + at, n, end, delta);
        cJSON_Delete(delta);
        at += n;
        step = at < len ? (unsigned char)text[at] % 9 + 1 : 1;
        if (end)
            break;
    }
    qs_chat_stream_free(s);
    return 0;
}
#endif
