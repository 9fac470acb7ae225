/* chat_output.h — what a chat choice's generated text becomes in the response once the server's
 * reasoning parser and tool-call parser have read it: message.reasoning_content, content without
 * the markup, message.tool_calls and finish_reason "tool_calls" (one-shot), or the OpenAI delta
 * stream of the same (reasoning_content / content deltas, and tool_calls deltas with index, the
 * id, type and name on a call's first fragment and argument fragments after). The stream is
 * made by parsing the whole text so far after each new piece and sending what grew
 * (tool_parser.h: a prefix's parse is a prefix of the whole one), so any split of the text gives
 * the same concatenated result as the one-shot parse of a well-formed output. */
#ifndef QS_SERVER_CHAT_OUTPUT_H
#define QS_SERVER_CHAT_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>

#include <cJSON.h>

#include "server/reasoning_parser.h"
#include "server/tool_parser.h"

typedef struct qs_chat_output_config {
    qs_reasoning_kind reasoning;
    const qs_tool_parser *tools; /* NULL: the output is not parsed for tool calls */
    bool parallel_tool_calls;    /* false: only the first call is returned */
    /* Enforced tool choices (the output was constrained to a schema; tools is then unused):
     * "required" (finish_reason "tool_calls") and a named function (finish_reason unchanged,
     * as vLLM and OpenAI answer); content is "" rather than null, as vLLM returns it. */
    bool forced_required;
    const char *forced_name;
} qs_chat_output_config;

/* True when the config changes anything (else the plain content path is used). */
bool qs_chat_output_active(const qs_chat_output_config *cfg);

/* One-shot: fills msg (an object with role already set) with content (null when empty and a
 * parser split something off), reasoning_content (with a reasoning parser) and tool_calls
 * (always an array). Returns 1 when tools were called (finish_reason "tool_calls"), 0 if not,
 * -1 on OOM. */
int qs_chat_output_message(const qs_chat_output_config *cfg, const char *text, size_t len, cJSON *msg);

typedef struct qs_chat_stream qs_chat_stream;
qs_chat_stream *qs_chat_stream_new(const qs_chat_output_config *cfg);
void qs_chat_stream_free(qs_chat_stream *s);
/* Adds generated text (end: the choice finished) and fills delta with what is new: keys
 * reasoning_content, content and tool_calls as they apply. Returns true when delta got a key. */
bool qs_chat_stream_feed(qs_chat_stream *s, const char *text, size_t len, bool end, cJSON *delta);
/* Some call was streamed: the finish_reason is "tool_calls". */
bool qs_chat_stream_tools_called(const qs_chat_stream *s);

/* "chatcmpl-tool-" + 32 hex digits, or 9 alphanumerics for parsers with short ids. */
void qs_tool_call_id(bool short_id, char *out, size_t cap);

#endif
