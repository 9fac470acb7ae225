/* tool_calls.h — what a tool-call parser (tool_parser.h) fills: the content and the calls it found
 * in a model's output, and the helpers every parser builds that result with (tool_calls.c). */
#ifndef QS_SERVER_TOOL_CALLS_H
#define QS_SERVER_TOOL_CALLS_H

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

void qs_tool_parse_free(qs_tool_parse *p);
void qs_tool_parse_reset(qs_tool_parse *p);

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
