/* tool_parser_llama3_json.c — Llama 3.1+ / Llama 4 JSON tool calls: an output that starts with
 * <|python_tag|> or '{' is one or more {"name": "f", "parameters"|"arguments": {...}} objects
 * separated by "; " (vLLM's llama3_json parser; "arguments" is preferred when both appear). Any
 * other output is content; a tool-call output that does not parse is returned whole as content. */
#include <string.h>

#include "server/tool_calls.h"

#define PYTHON_TAG "<|python_tag|>"

static const char *const ARGS_KEYS[] = {"arguments", "parameters", NULL};

int qs_tool_parse_llama3_json(const char *text, size_t len, bool final, qs_tool_parse *out)
{
    qs_tool_parse_reset(out);
    size_t tag = strlen(PYTHON_TAG);
    if (!final && len < tag && !memcmp(PYTHON_TAG, text, len))
        return qs_tp_set_content(out, text, 0); /* may still become the tag */
    size_t i;
    if (len >= tag && !memcmp(text, PYTHON_TAG, tag))
        i = tag;
    else if (len > 0 && text[0] == '{')
        i = 0;
    else
        return qs_tp_set_content(out, text, len);
    if (qs_tp_set_content(out, text, 0))
        return -1;
    for (;;) {
        long n = qs_tp_read_call_object(text + i, len - i, ARGS_KEYS, out);
        if (n < 0) {
            if (final)
                return qs_tp_as_content(out, text, len);
            return 0;
        }
        i += (size_t)n;
        while (i < len && (text[i] && strchr(" \t\r\n;", text[i])))
            i++;
        if (i == len)
            break;
    }
    if (final) {
        if (!qs_tp_calls_valid(out))
            return qs_tp_as_content(out, text, len);
        out->tools_called = true;
    }
    return 0;
}
