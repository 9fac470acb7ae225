/* tool_request.c — checks of tools / tool_choice / parallel_tool_calls (see tool_request.h). */
#include "server/tool_request.h"

#include <stdio.h>
#include <string.h>

#include "structured/structured.h"

static int check_tools(const cJSON *tools, qs_api_error *e)
{
    if (!cJSON_IsArray(tools))
        return qs_api_errorf(e, 400, "tools", "'tools' must be an array of {\"type\": \"function\", \"function\": {...}}.");
    int i = 0;
    const cJSON *t;
    cJSON_ArrayForEach(t, tools)
    {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(t, "type");
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(t, "function");
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(fn, "name");
        const cJSON *params = cJSON_GetObjectItemCaseSensitive(fn, "parameters");
        const cJSON *desc = cJSON_GetObjectItemCaseSensitive(fn, "description");
        if (!cJSON_IsObject(t) || !cJSON_IsString(type) || strcmp(type->valuestring, "function") != 0)
            return qs_api_errorf(e, 400, "tools", "tools[%d] must have \"type\": \"function\".", i);
        if (!cJSON_IsObject(fn) || !cJSON_IsString(name) || !name->valuestring[0])
            return qs_api_errorf(e, 400, "tools", "tools[%d].function must be an object with a non-empty 'name'.", i);
        if (params && !cJSON_IsNull(params) && !cJSON_IsObject(params))
            return qs_api_errorf(e, 400, "tools", "tools[%d].function.parameters must be a JSON Schema object.", i);
        if (desc && !cJSON_IsNull(desc) && !cJSON_IsString(desc))
            return qs_api_errorf(e, 400, "tools", "tools[%d].function.description must be a string.", i);
        i++;
    }
    return 0;
}

static const cJSON *find_tool(const cJSON *tools, const char *name)
{
    const cJSON *t;
    cJSON_ArrayForEach(t, tools)
    {
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(t, "function");
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(fn, "name");
        if (cJSON_IsString(n) && !strcmp(n->valuestring, name))
            return fn;
    }
    return NULL;
}

static const cJSON *field(const cJSON *obj, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    return cJSON_IsNull(v) ? NULL : v;
}

int qs_tool_request_parse(const cJSON *root, qs_tool_request *out, qs_api_error *e)
{
    memset(out, 0, sizeof *out);
    out->parallel_tool_calls = true;
    const cJSON *tools = field(root, "tools");
    if (tools && check_tools(tools, e))
        return -1;
    if (tools && cJSON_GetArraySize(tools) == 0)
        tools = NULL; /* an empty list is no tools, as in vLLM */
    out->tools = tools;
    const cJSON *ptc = field(root, "parallel_tool_calls");
    if (ptc) {
        if (!cJSON_IsBool(ptc))
            return qs_api_errorf(e, 400, "parallel_tool_calls", "'parallel_tool_calls' must be a boolean.");
        out->parallel_tool_calls = cJSON_IsTrue(ptc);
    }
    const cJSON *tc = field(root, "tool_choice");
    if (!tc) {
        out->choice = tools ? QS_TOOL_CHOICE_AUTO : QS_TOOL_CHOICE_NONE;
        return 0;
    }
    if (cJSON_IsString(tc)) {
        const char *s = tc->valuestring;
        if (!strcmp(s, "none"))
            out->choice = QS_TOOL_CHOICE_NONE;
        else if (!strcmp(s, "auto"))
            out->choice = QS_TOOL_CHOICE_AUTO;
        else if (!strcmp(s, "required"))
            out->choice = QS_TOOL_CHOICE_REQUIRED;
        else
            return qs_api_errorf(e, 400, "tool_choice",
                                 "'tool_choice' must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", "
                                 "\"function\": {\"name\": ...}}, got \"%.40s\".",
                                 s);
    } else if (cJSON_IsObject(tc)) {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(tc, "type");
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(tc, "function");
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(fn, "name");
        if (!cJSON_IsString(type) || strcmp(type->valuestring, "function") != 0 || !cJSON_IsString(name))
            return qs_api_errorf(e, 400, "tool_choice",
                                 "'tool_choice' as an object must be {\"type\": \"function\", \"function\": {\"name\": "
                                 "...}}.");
        out->choice = QS_TOOL_CHOICE_NAMED;
        out->named = name->valuestring;
    } else {
        return qs_api_errorf(e, 400, "tool_choice", "'tool_choice' must be a string or an object.");
    }
    if (out->choice != QS_TOOL_CHOICE_NONE && !tools)
        return qs_api_errorf(e, 400, "tool_choice", "When using 'tool_choice', 'tools' must be set.");
    if (out->choice == QS_TOOL_CHOICE_NAMED) {
        const cJSON *fn = find_tool(tools, out->named);
        if (!fn)
            return qs_api_errorf(e, 400, "tool_choice", "Tool choice '%.100s' is not one of the 'tools'.", out->named);
        out->named_parameters = field(fn, "parameters");
    }
    return 0;
}

static cJSON *params_or_empty(const cJSON *fn)
{
    const cJSON *p = field(fn, "parameters");
    if (p)
        return cJSON_Duplicate(p, true);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "type", "object");
    cJSON_AddObjectToObject(o, "properties");
    return o;
}

cJSON *qs_tool_request_schema(const qs_tool_request *t, qs_api_error *e)
{
    if (t->choice == QS_TOOL_CHOICE_NAMED)
        return params_or_empty(find_tool(t->tools, t->named));
    if (t->choice != QS_TOOL_CHOICE_REQUIRED)
        return NULL;
    cJSON *schema = cJSON_CreateObject();
    cJSON_AddStringToObject(schema, "type", "array");
    cJSON_AddNumberToObject(schema, "minItems", 1);
    if (!t->parallel_tool_calls)
        cJSON_AddNumberToObject(schema, "maxItems", 1);
    cJSON *items = cJSON_AddObjectToObject(schema, "items");
    cJSON *any = cJSON_AddArrayToObject(items, "anyOf");
    cJSON *defs = cJSON_CreateObject();
    const cJSON *tool;
    cJSON_ArrayForEach(tool, t->tools)
    {
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(tool, "function");
        cJSON *params = params_or_empty(fn);
        cJSON *own = cJSON_DetachItemFromObjectCaseSensitive(params, "$defs");
        const cJSON *d;
        cJSON_ArrayForEach(d, own)
        {
            const cJSON *seen = cJSON_GetObjectItemCaseSensitive(defs, d->string);
            if (seen && !cJSON_Compare(seen, d, true)) {
                qs_api_errorf(e, 400, "tools", "Tools define '$defs/%.60s' differently; tool_choice \"required\" "
                                               "needs one definition per name.", d->string);
                cJSON_Delete(own);
                cJSON_Delete(params);
                cJSON_Delete(defs);
                cJSON_Delete(schema);
                return NULL;
            }
            if (!seen)
                cJSON_AddItemToObject(defs, d->string, cJSON_Duplicate(d, true));
        }
        cJSON_Delete(own);
        cJSON *one = cJSON_CreateObject();
        cJSON_AddStringToObject(one, "type", "object");
        cJSON *props = cJSON_AddObjectToObject(one, "properties");
        cJSON *name = cJSON_AddObjectToObject(props, "name");
        cJSON *en = cJSON_AddArrayToObject(name, "enum");
        cJSON_AddItemToArray(en, cJSON_CreateString(cJSON_GetObjectItemCaseSensitive(fn, "name")->valuestring));
        cJSON_AddItemToObject(props, "parameters", params);
        cJSON *req = cJSON_AddArrayToObject(one, "required");
        cJSON_AddItemToArray(req, cJSON_CreateString("name"));
        cJSON_AddItemToArray(req, cJSON_CreateString("parameters"));
        cJSON_AddItemToArray(any, one);
    }
    if (cJSON_GetArraySize(defs) > 0)
        cJSON_AddItemToObject(schema, "$defs", defs);
    else
        cJSON_Delete(defs);
    return schema;
}

int qs_tool_request_grammar(const qs_tool_request *t, struct qs_grammar **grammar, qs_api_error *e)
{
    if (t->choice != QS_TOOL_CHOICE_REQUIRED && t->choice != QS_TOOL_CHOICE_NAMED)
        return 0;
    if (*grammar)
        return qs_api_errorf(e, 400, "tool_choice",
                             "tool_choice %s constrains the output to tool calls; it cannot be combined with "
                             "response_format / structured_outputs / guided_*.",
                             t->choice == QS_TOOL_CHOICE_REQUIRED ? "\"required\"" : "naming a function");
    cJSON *schema = qs_tool_request_schema(t, e);
    if (!schema)
        return -1;
    qs_err err = {{0}};
    *grammar = qs_grammar_from_schema(schema, NULL, &err);
    cJSON_Delete(schema);
    if (!*grammar)
        return qs_api_errorf(e, 400, "tools", "The tools' parameters cannot be enforced for tool_choice %s: %s",
                             t->choice == QS_TOOL_CHOICE_REQUIRED ? "\"required\"" : "naming a function", err.msg);
    return 0;
}

int qs_tool_request_check_server(const qs_tool_request *t, const qs_tool_server_config *cfg, qs_api_error *e)
{
    if (t->choice == QS_TOOL_CHOICE_AUTO && !(cfg->enable_auto_tool_choice && cfg->parser))
        return qs_api_errorf(e, 400, "tool_choice",
                             "\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set "
                             "(with 'tools' and no 'tool_choice', the choice is \"auto\").");
    return 0;
}
