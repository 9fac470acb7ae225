/* tool_calls.c — the pieces every tool-call parser shares: growing the parse result, holding
 * back a marker that may still be completing, a JSON value scanner that knows where a value ends
 * (or that the text ended inside it), json.dumps layout of argument text, and the reader of
 * {"name", "arguments"} objects that hermes, llama3_json and mistral all write. cJSON parses
 * whole documents only; streaming needs to know how far a prefix goes, hence the scanner. */
#include "server/tool_calls.h"

#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

void qs_tool_parse_reset(qs_tool_parse *p)
{
    for (int i = 0; i < p->n_calls; i++) {
        free(p->calls[i].name);
        free(p->calls[i].args);
    }
    p->n_calls = 0;
    free(p->content);
    p->content = NULL;
    p->content_len = 0;
    p->tools_called = false;
}

void qs_tool_parse_free(qs_tool_parse *p)
{
    qs_tool_parse_reset(p);
    free(p->calls);
    memset(p, 0, sizeof *p);
}

int qs_tp_set_content(qs_tool_parse *p, const char *s, size_t n)
{
    char *c = malloc(n + 1);
    if (!c)
        return -1;
    memcpy(c, s, n);
    c[n] = '\0';
    free(p->content);
    p->content = c;
    p->content_len = n;
    return 0;
}

qs_tool_call_text *qs_tp_add_call(qs_tool_parse *p)
{
    if (p->n_calls == p->cap_calls) {
        int cap = p->cap_calls ? 2 * p->cap_calls : 4;
        qs_tool_call_text *c = realloc(p->calls, (size_t)cap * sizeof *c);
        if (!c)
            return NULL;
        p->calls = c;
        p->cap_calls = cap;
    }
    qs_tool_call_text *c = &p->calls[p->n_calls];
    memset(c, 0, sizeof *c);
    c->args = calloc(1, 1);
    if (!c->args)
        return NULL;
    p->n_calls++;
    return c;
}

int qs_tp_set_name(qs_tool_call_text *c, const char *s, size_t n)
{
    char *name = malloc(n + 1);
    if (!name)
        return -1;
    memcpy(name, s, n);
    name[n] = '\0';
    free(c->name);
    c->name = name;
    return 0;
}

int qs_tp_set_args(qs_tool_call_text *c, const char *src, size_t n)
{
    char *out = malloc(2 * n + 1); /* each byte becomes at most two */
    if (!out)
        return -1;
    size_t o = 0;
    bool in_string = false;
    for (size_t i = 0; i < n; i++) {
        char ch = src[i];
        if (in_string) {
            out[o++] = ch;
            if (ch == '\\' && i + 1 < n)
                out[o++] = src[++i];
            else if (ch == '"')
                in_string = false;
            continue;
        }
        if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r')
            continue;
        out[o++] = ch;
        if (ch == ',' || ch == ':')
            out[o++] = ' ';
        else if (ch == '"')
            in_string = true;
    }
    out[o] = '\0';
    free(c->args);
    c->args = out;
    c->args_len = o;
    return 0;
}

size_t qs_tp_partial_marker(const char *text, size_t len, const char *marker)
{
    size_t m = strlen(marker);
    for (size_t k = m - 1; k > 0; k--)
        if (k <= len && !memcmp(text + len - k, marker, k))
            return k;
    return 0;
}

const char *qs_tp_find(const char *text, size_t len, const char *marker)
{
    size_t m = strlen(marker);
    for (size_t i = 0; i + m <= len; i++)
        if (text[i] == marker[0] && !memcmp(text + i, marker, m))
            return text + i;
    return NULL;
}

static bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* End of the string starting at s[i] == '"', or -1 when the text ends inside it. */
static long scan_string(const char *s, size_t len, size_t i)
{
    for (i++; i < len; i++) {
        if (s[i] == '\\')
            i++;
        else if (s[i] == '"')
            return (long)i + 1;
    }
    return -1;
}

long qs_tp_scan_json_value(const char *s, size_t len, size_t *start)
{
    size_t i = 0;
    while (i < len && is_ws(s[i]))
        i++;
    *start = i;
    if (i == len)
        return -1;
    char c = s[i];
    if (c == '"')
        return scan_string(s, len, i);
    if (c == '{' || c == '[') {
        int depth = 0;
        while (i < len) {
            char ch = s[i];
            if (ch == '"') {
                long e = scan_string(s, len, i);
                if (e < 0)
                    return -1;
                i = (size_t)e;
                continue;
            }
            if (ch == '{' || ch == '[')
                depth++;
            else if (ch == '}' || ch == ']') {
                if (--depth == 0)
                    return (long)i + 1;
            }
            i++;
        }
        return -1;
    }
    if (c == '-' || (c >= '0' && c <= '9') || c == 't' || c == 'f' || c == 'n') {
        while (i < len && ((s[i] && strchr("+-.eE", s[i])) || (s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'z')))
            i++;
        return i == len ? -1 : (long)i; /* a number or literal may go on */
    }
    return -2;
}

static bool in_list(const char *key, const char *const *list)
{
    for (; *list; list++)
        if (!strcmp(key, *list))
            return true;
    return false;
}

long qs_tp_read_call_object(const char *s, size_t len, const char *const *args_keys, qs_tool_parse *p)
{
    size_t i = 0;
    while (i < len && is_ws(s[i]))
        i++;
    if (i == len)
        return -1;
    if (s[i] != '{')
        return -2;
    qs_tool_call_text *call = qs_tp_add_call(p);
    if (!call)
        return -2;
    bool have_args = false;
    i++;
    for (;;) {
        while (i < len && is_ws(s[i]))
            i++;
        if (i == len)
            return -1;
        if (s[i] == '}')
            return (long)i + 1;
        if (s[i] != '"')
            return -2;
        long kend = scan_string(s, len, i);
        if (kend < 0)
            return -1;
        char *key = strndup(s + i + 1, (size_t)kend - i - 2);
        if (!key)
            return -2;
        i = (size_t)kend;
        while (i < len && is_ws(s[i]))
            i++;
        if (i == len) {
            free(key);
            return -1;
        }
        if (s[i] != ':') {
            free(key);
            return -2;
        }
        i++;
        size_t vstart;
        long vend = qs_tp_scan_json_value(s + i, len - i, &vstart);
        bool is_name = !strcmp(key, "name"), is_args = !have_args && in_list(key, args_keys);
        free(key);
        if (vend == -2)
            return -2;
        if (is_args) {
            size_t n = vend < 0 ? len - i - vstart : (size_t)vend - vstart;
            if (i + vstart < len && s[i + vstart] != '{')
                return -2;
            if (qs_tp_set_args(call, s + i + vstart, n))
                return -2;
            call->args_done = vend >= 0;
            have_args = true;
        }
        if (vend < 0)
            return -1;
        if (is_name) {
            if (s[i + vstart] != '"')
                return -2;
            char *tok = strndup(s + i + vstart, (size_t)vend - vstart);
            cJSON *str = tok ? cJSON_Parse(tok) : NULL;
            free(tok);
            int rc = cJSON_IsString(str) ? qs_tp_set_name(call, str->valuestring, strlen(str->valuestring)) : -1;
            cJSON_Delete(str);
            if (rc)
                return -2;
        }
        i += (size_t)vend;
        while (i < len && is_ws(s[i]))
            i++;
        if (i == len)
            return -1;
        if (s[i] == ',') {
            i++;
            continue;
        }
        if (s[i] == '}')
            return (long)i + 1;
        return -2;
    }
}

bool qs_tp_calls_valid(const qs_tool_parse *p)
{
    if (p->n_calls == 0)
        return false;
    for (int i = 0; i < p->n_calls; i++) {
        const qs_tool_call_text *c = &p->calls[i];
        if (!c->name || !c->args_done || memchr(c->args, '\0', c->args_len))
            return false; /* a NUL would cut the JSON string the client gets */
        cJSON *args = cJSON_ParseWithLength(c->args, c->args_len);
        bool ok = cJSON_IsObject(args);
        cJSON_Delete(args);
        if (!ok)
            return false;
    }
    return true;
}

int qs_tp_as_content(qs_tool_parse *p, const char *text, size_t len)
{
    qs_tool_parse_reset(p);
    return qs_tp_set_content(p, text, len);
}
