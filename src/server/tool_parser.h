/* tool_parser.h — the one interface every tool-call parser (--tool-call-parser) implements, and
 * the helpers they share. A parser reads the text a model wrote (after any reasoning was split
 * off) and says which part is plain content and which calls it made, in the markup of its model
 * family: hermes (<tool_call>{json}</tool_call>, Qwen2.5/Qwen3), llama3_json (<|python_tag|> or a
 * bare {"name", "parameters"} object), mistral ([TOOL_CALLS][...] or [TOOL_CALLS]name[ARGS]{...}),
 * pythonic ([f(a=1), g()], Llama 4). vLLM's parsers are Python; none exists for C, so each format
 * is written here from vLLM's documented markup.
 *
 * The same function parses a whole output (final) and any prefix of one (streaming). On a
 * prefix it reports only what can no longer change: content up to any possible start of markup,
 * a call once its name is complete, its arguments as far as they are written. Every field for a
 * prefix is a prefix of the same field for the whole text, so the streaming layer (chat_output.c)
 * sends differences and the deltas of any split add up to the one-shot answer.
 *
 * Arguments are the JSON text of the arguments object with whitespace between tokens laid out as
 * Python's json.dumps does (", " and ": "), which is what vLLM's parsers return; strings and
 * numbers are kept as the model wrote them. */
#ifndef QS_SERVER_TOOL_PARSER_H
#define QS_SERVER_TOOL_PARSER_H

#include <stdbool.h>
#include <stddef.h>

typedef struct qs_tool_call_text {
    char *name;        /* NULL until the name is complete */
    char *args;        /* NUL-terminated; "" until arguments start */
    size_t args_len;
    bool args_done;    /* the arguments value is closed */
} qs_tool_call_text;

typedef struct qs_tool_parse {
    char *content;     /* plain text the client sees as content (NUL-terminated) */
    size_t content_len;
    qs_tool_call_text *calls;
    int n_calls, cap_calls;
    bool tools_called; /* final: the output was tool calls (finish_reason "tool_calls") */
} qs_tool_parse;

/* Parses text[0..len). final = the whole output; else a prefix of it. Returns 0, -1 on OOM. */
typedef int (*qs_tool_parse_fn)(const char *text, size_t len, bool final, qs_tool_parse *out);

typedef struct qs_tool_parser {
    const char *name;
    qs_tool_parse_fn parse;
    bool short_ids;    /* mistral: 9-character alphanumeric call ids, as Mistral's tokenizer needs */
    bool keep_special_tokens; /* its markers may be special tokens: decode them (vLLM's adjust_request) */
} qs_tool_parser;

/* The outputs of enforced tool choices (tool_parser_forced.c): "required" writes
 * [{"name", "parameters"}, ...]; a named choice writes that function's arguments object. */
int qs_tool_parse_required(const char *text, size_t len, bool final, qs_tool_parse *out);
int qs_tool_parse_named(const char *name, const char *text, size_t len, bool final, qs_tool_parse *out);

/* NULL when unknown. */
const qs_tool_parser *qs_tool_parser_find(const char *name);
/* "hermes, llama3_json, mistral, pythonic" */
const char *qs_tool_parser_names(void);

void qs_tool_parse_free(qs_tool_parse *p);
void qs_tool_parse_reset(qs_tool_parse *p);

/* ---- helpers shared by the parsers (tool_parser.c) ---- */

int qs_tp_set_content(qs_tool_parse *p, const char *s, size_t n);
qs_tool_call_text *qs_tp_add_call(qs_tool_parse *p);
int qs_tp_set_name(qs_tool_call_text *c, const char *s, size_t n);
/* Sets the call's arguments to JSON text src[0..n) (whole or a prefix) in json.dumps layout. */
int qs_tp_set_args(qs_tool_call_text *c, const char *src, size_t n);

/* Length of the longest suffix of text[0..len) that is a proper prefix of marker (the start of
 * markup that may be completing): streaming holds those bytes back. */
size_t qs_tp_partial_marker(const char *text, size_t len, const char *marker);
/* First occurrence of marker in text[0..len), or NULL. */
const char *qs_tp_find(const char *text, size_t len, const char *marker);

/* Scans one JSON value at s[0..len) after skipping whitespace: *start is where it begins, and the
 * return value where it ends (one past). Returns -1 when the text ends inside the value (then
 * *start is still set), -2 when it is not JSON. */
long qs_tp_scan_json_value(const char *s, size_t len, size_t *start);

/* Reads one {"name": ..., "arguments"|"parameters": {...}} object at s[0..len) into a new call of
 * p (streaming-safe: name only once its string is complete, arguments as far as written).
 * args_keys lists the accepted argument keys in order of preference. Returns the end offset of
 * the object, -1 when it is incomplete, -2 when it is not such an object. */
long qs_tp_read_call_object(const char *s, size_t len, const char *const *args_keys, qs_tool_parse *p);

/* Final check: every call has a name and a complete arguments value that is a JSON object. */
bool qs_tp_calls_valid(const qs_tool_parse *p);
/* Final fallback, as vLLM does when a call does not parse: no calls, the whole text is content. */
int qs_tp_as_content(qs_tool_parse *p, const char *text, size_t len);

#endif
