/* tool_parser_forced.c — the outputs of enforced tool choices, which the constraint engine makes
 * match a JSON Schema (tool_request.c builds it, as vLLM does): tool_choice "required" writes
 * [{"name": "f", "parameters": {...}}, ...], a named tool_choice writes the function's arguments
 * object alone. Same streaming contract as the model-markup parsers (tool_parser.h). */
#include <string.h>

#include "server/tool_parser.h"

static const char *const PARAMS_KEYS[] = {"parameters", NULL};

static bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

int qs_tool_parse_required(const char *text, size_t len, bool final, qs_tool_parse *out)
{
    qs_tool_parse_reset(out);
    if (qs_tp_set_content(out, text, 0))
        return -1;
    size_t i = 0;
    while (i < len && is_ws(text[i]))
        i++;
    int rc = 0;
    if (i < len && text[i] != '[')
        rc = -1;
    for (i++; rc == 0 && i < len;) {
        long n = qs_tp_read_call_object(text + i, len - i, PARAMS_KEYS, out);
        if (n < 0) {
            rc = n == -1 ? 0 : -1;
            break;
        }
        i += (size_t)n;
        while (i < len && is_ws(text[i]))
            i++;
        if (i == len)
            break;
        if (text[i] == ']') {
            rc = 1;
            break;
        }
        if (text[i] != ',')
            rc = -1;
        i++;
    }
    if (final) {
        if (rc != 1 || !qs_tp_calls_valid(out))
            return qs_tp_as_content(out, text, len);
        out->tools_called = true;
    }
    return 0;
}

int qs_tool_parse_named(const char *name, const char *text, size_t len, bool final, qs_tool_parse *out)
{
    qs_tool_parse_reset(out);
    if (qs_tp_set_content(out, text, 0))
        return -1;
    qs_tool_call_text *call = qs_tp_add_call(out);
    if (!call || qs_tp_set_name(call, name, strlen(name)))
        return -1;
    size_t start;
    long end = qs_tp_scan_json_value(text, len, &start);
    if (end == -2 || (start < len && text[start] != '{')) {
        if (final)
            return qs_tp_as_content(out, text, len);
        return 0;
    }
    if (qs_tp_set_args(call, text + start, (end < 0 ? len : (size_t)end) - start))
        return -1;
    call->args_done = end >= 0;
    if (final) {
        if (!qs_tp_calls_valid(out))
            return qs_tp_as_content(out, text, len);
        out->tools_called = true;
    }
    return 0;
}
