/* tool_parser_mistral.c — Mistral tool calls after the [TOOL_CALLS] token, in both forms Mistral's
 * tokenizers produce: a JSON array [{"name": "f", "arguments": {...}}, ...] (tokenizer versions
 * before 11) and [TOOL_CALLS]f[ARGS]{...} repeated per call (version 11 and later). Content is the
 * text before the first [TOOL_CALLS]; an output whose calls do not parse is returned whole as
 * content, as vLLM's mistral parser does. Call ids are 9 alphanumeric characters (short_ids). */
#include <string.h>

#include "server/tool_calls.h"

#define BOT "[TOOL_CALLS]"
#define ARGS "[ARGS]"

static const char *const ARGS_KEYS[] = {"arguments", NULL};

static bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* [{...}, {...}] starting at text[i]; returns 1 complete, 0 still partial, -1 malformed. */
static int parse_array(const char *text, size_t len, size_t i, qs_tool_parse *out)
{
    i++; /* '[' */
    for (;;) {
        long n = qs_tp_read_call_object(text + i, len - i, ARGS_KEYS, out);
        if (n == -1)
            return 0;
        if (n < 0)
            return -1;
        i += (size_t)n;
        while (i < len && is_ws(text[i]))
            i++;
        if (i == len)
            return 0;
        if (text[i] == ']')
            return 1;
        if (text[i] != ',')
            return -1;
        i++;
    }
}

/* name[ARGS]{...}([TOOL_CALLS]name[ARGS]{...})* starting at text[i]. */
static int parse_v11(const char *text, size_t len, size_t i, qs_tool_parse *out)
{
    for (;;) {
        const char *args = qs_tp_find(text + i, len - i, ARGS);
        if (!args)
            return 0;
        qs_tool_call_text *call = qs_tp_add_call(out);
        if (!call || qs_tp_set_name(call, text + i, (size_t)(args - text - i)))
            return -1;
        i = (size_t)(args - text) + strlen(ARGS);
        size_t vstart;
        long vend = qs_tp_scan_json_value(text + i, len - i, &vstart);
        if (vend == -2 || (i + vstart < len && text[i + vstart] != '{'))
            return -1;
        size_t n = vend < 0 ? len - i - vstart : (size_t)vend - vstart;
        if (qs_tp_set_args(call, text + i + vstart, n))
            return -1;
        if (vend < 0)
            return 0;
        call->args_done = true;
        i += (size_t)vend;
        while (i < len && is_ws(text[i]))
            i++;
        if (i == len)
            return 1;
        if (len - i < strlen(BOT))
            return memcmp(text + i, BOT, len - i) ? -1 : 0;
        if (memcmp(text + i, BOT, strlen(BOT)))
            return -1;
        i += strlen(BOT);
    }
}

int qs_tool_parse_mistral(const char *text, size_t len, bool final, qs_tool_parse *out)
{
    qs_tool_parse_reset(out);
    const char *bot = qs_tp_find(text, len, BOT);
    if (!bot) {
        size_t keep = final ? len : len - qs_tp_partial_marker(text, len, BOT);
        return qs_tp_set_content(out, text, keep);
    }
    if (qs_tp_set_content(out, text, (size_t)(bot - text)))
        return -1;
    size_t i = (size_t)(bot - text) + strlen(BOT);
    while (i < len && is_ws(text[i]))
        i++;
    int rc = 0;
    if (i < len)
        rc = text[i] == '[' ? parse_array(text, len, i, out) : parse_v11(text, len, i, out);
    if (final) {
        if (rc != 1 || !qs_tp_calls_valid(out))
            return qs_tp_as_content(out, text, len);
        out->tools_called = true;
    }
    return 0;
}
