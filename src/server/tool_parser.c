/* tool_parser.c — the registry of tool-call parsers: each --tool-call-parser name with its parse
 * function and what its model family's tokenizer needs. */
#include "server/tool_parser.h"

#include <string.h>

int qs_tool_parse_hermes(const char *text, size_t len, bool final, qs_tool_parse *out);
int qs_tool_parse_llama3_json(const char *text, size_t len, bool final, qs_tool_parse *out);
int qs_tool_parse_mistral(const char *text, size_t len, bool final, qs_tool_parse *out);
int qs_tool_parse_pythonic(const char *text, size_t len, bool final, qs_tool_parse *out);

static const qs_tool_parser PARSERS[] = {
    {"hermes", qs_tool_parse_hermes, false, true},
    {"llama3_json", qs_tool_parse_llama3_json, false, false},
    {"mistral", qs_tool_parse_mistral, true, true},
    {"pythonic", qs_tool_parse_pythonic, false, false},
};

const qs_tool_parser *qs_tool_parser_find(const char *name)
{
    for (size_t i = 0; name && i < sizeof PARSERS / sizeof PARSERS[0]; i++)
        if (!strcmp(PARSERS[i].name, name))
            return &PARSERS[i];
    return NULL;
}

const char *qs_tool_parser_names(void) { return "hermes, llama3_json, mistral, pythonic"; }
