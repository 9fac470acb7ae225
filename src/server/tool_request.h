/* tool_request.h — the tool-calling fields of a chat request (tools, tool_choice,
 * parallel_tool_calls), checked as vLLM checks them: tools are [{"type": "function", "function":
 * {"name", "description"?, "parameters"?}}]; tool_choice is "none" | "auto" | "required" |
 * {"type": "function", "function": {"name"}} naming one of the tools; tool_choice other than
 * "none" needs tools; with tools and no tool_choice the choice is "auto". Whether the server can
 * serve the choice (--enable-auto-tool-choice, --tool-call-parser) is checked per server by
 * qs_tool_request_check_server. */
#ifndef QS_SERVER_TOOL_REQUEST_H
#define QS_SERVER_TOOL_REQUEST_H

#include <stdbool.h>

#include <cJSON.h>

#include "server/api_error.h"
#include "server/tool_parser.h"

typedef enum {
    QS_TOOL_CHOICE_NONE,     /* no tools, or "none": tools still reach the template, output is not parsed */
    QS_TOOL_CHOICE_AUTO,     /* the model decides; its output is parsed with --tool-call-parser */
    QS_TOOL_CHOICE_REQUIRED, /* at least one call, enforced */
    QS_TOOL_CHOICE_NAMED,    /* exactly the named function, enforced */
} qs_tool_choice;

typedef struct qs_tool_request {
    const cJSON *tools;      /* array or NULL (points into the request) */
    qs_tool_choice choice;
    const char *named;       /* QS_TOOL_CHOICE_NAMED: the function's name */
    const cJSON *named_parameters; /* its parameters schema, or NULL */
    bool parallel_tool_calls; /* default true; false: at most one call is returned */
} qs_tool_request;

int qs_tool_request_parse(const cJSON *root, qs_tool_request *out, qs_api_error *e);

/* The JSON Schema an enforced choice constrains the output to, as vLLM builds it: for a named
 * function its parameters (an empty object schema when it has none); for "required"
 * {"type": "array", "minItems": 1, "items": {"anyOf": [{"type": "object", "properties": {"name":
 * {"enum": [NAME]}, "parameters": PARAMS}, "required": ["name", "parameters"]},
 * ...]}} with every tool's $defs moved to the top ("maxItems": 1 too when parallel_tool_calls is
 * false). The object type sits in each anyOf branch and the name has no "type" beside its enum
 * (the same schema, in the forms the constraint engine takes). NULL for none/auto; a 400 naming tools when two tools define one $defs name
 * differently. The caller frees the result. */
cJSON *qs_tool_request_schema(const qs_tool_request *t, qs_api_error *e);

/* tool_choice "required" / named: compiles qs_tool_request_schema into *grammar, the constraint
 * that enforces the choice (src/structured). A request that also asks for structured output is
 * a 400 naming tool_choice; a parameters schema the engine cannot enforce is a 400 naming tools
 * with the engine's reason. Leaves *grammar alone for none / auto. */
struct qs_grammar;
int qs_tool_request_grammar(const qs_tool_request *t, struct qs_grammar **grammar, qs_api_error *e);

/* What the server was started with: --enable-auto-tool-choice and --tool-call-parser. */
typedef struct qs_tool_server_config {
    bool enable_auto_tool_choice;
    const qs_tool_parser *parser; /* NULL when none */
} qs_tool_server_config;

/* 400 naming tool_choice when this server cannot honour the request's choice. */
int qs_tool_request_check_server(const qs_tool_request *t, const qs_tool_server_config *cfg, qs_api_error *e);

#endif
