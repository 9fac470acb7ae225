/* tool_parser_hermes.c — Hermes-style tool calls, as Qwen2.5 and Qwen3 write them:
 *   optional text<tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call>\n<tool_call>...
 * As vLLM's hermes parser: content is the text before the first <tool_call> (text between or after
 * calls is dropped), a last <tool_call> without its closing tag still counts, and an output whose
 * calls do not parse is returned whole as content. */
#include <string.h>

#include "server/tool_calls.h"

#define START "<tool_call>"
#define END "</tool_call>"

static const char *const ARGS_KEYS[] = {"arguments", NULL};

int qs_tool_parse_hermes(const char *text, size_t len, bool final, qs_tool_parse *out)
{
    qs_tool_parse_reset(out);
    const char *start = qs_tp_find(text, len, START);
    if (!start) {
        size_t keep = final ? len : len - qs_tp_partial_marker(text, len, START);
        return qs_tp_set_content(out, text, keep);
    }
    if (qs_tp_set_content(out, text, (size_t)(start - text)))
        return -1;
    const char *end = text + len;
    const char *p = start;
    while (p) {
        p += strlen(START);
        long n = qs_tp_read_call_object(p, (size_t)(end - p), ARGS_KEYS, out);
        if (n < 0) {
            if (final)
                return qs_tp_as_content(out, text, len);
            return 0; /* still being written (or malformed: nothing more is certain) */
        }
        p += n;
        p = qs_tp_find(p, (size_t)(end - p), START);
    }
    if (final) {
        if (!qs_tp_calls_valid(out))
            return qs_tp_as_content(out, text, len);
        out->tools_called = true;
    }
    return 0;
}
