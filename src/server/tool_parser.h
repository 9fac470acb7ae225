/* tool_parser.h — the one interface every tool-call parser (--tool-call-parser) implements, and
 * the registry that names them (the result they fill and the helpers they share: tool_calls.h). A parser reads the text a model wrote (after any reasoning was split
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

#include "server/tool_calls.h"

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

#endif
