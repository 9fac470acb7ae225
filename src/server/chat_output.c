/* chat_output.c — reasoning and tool-call parsing of chat output, one-shot and streamed (see
 * chat_output.h). The reasoning split runs first; the tool parser reads the content part. */
#include "server/chat_output.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

bool qs_chat_output_active(const qs_chat_output_config *cfg)
{
    return cfg->reasoning != QS_REASONING_NONE || cfg->tools != NULL || cfg->forced_required || cfg->forced_name;
}

static bool parses_tools(const qs_chat_output_config *cfg)
{
    return cfg->tools || cfg->forced_required || cfg->forced_name;
}

static bool short_ids(const qs_chat_output_config *cfg)
{
    return !cfg->forced_required && !cfg->forced_name && cfg->tools && cfg->tools->short_ids;
}


static int run_parser(const qs_chat_output_config *cfg, const char *text, size_t len, bool final, qs_tool_parse *tp)
{
    if (cfg->forced_name)
        return qs_tool_parse_named(cfg->forced_name, text, len, final, tp);
    if (cfg->forced_required)
        return qs_tool_parse_required(text, len, final, tp);
    return cfg->tools->parse(text, len, final, tp);
}

void qs_tool_call_id(bool short_id, char *out, size_t cap)
{
    unsigned char r[16];
    if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) {
        static unsigned long counter;
        for (size_t i = 0; i < sizeof r; i++)
            r[i] = (unsigned char)((++counter * 2654435761u) >> (i % 4 * 8));
    }
    if (short_id) {
        static const char ALNUM[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
        size_t n = cap > 10 ? 9 : cap - 1;
        for (size_t i = 0; i < n; i++)
            out[i] = ALNUM[r[i] % 62];
        out[n] = '\0';
        return;
    }
    char hex[33];
    for (int i = 0; i < 16; i++)
        snprintf(hex + 2 * i, 3, "%02x", r[i]);
    snprintf(out, cap, "chatcmpl-tool-%s", hex);
}

static cJSON *call_object(const qs_tool_call_text *c, bool short_id)
{
    char id[64];
    qs_tool_call_id(short_id, id, sizeof id);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", id);
    cJSON_AddStringToObject(o, "type", "function");
    cJSON *fn = cJSON_AddObjectToObject(o, "function");
    cJSON_AddStringToObject(fn, "name", c->name);
    cJSON_AddStringToObject(fn, "arguments", c->args);
    return o;
}

int qs_chat_output_message(const qs_chat_output_config *cfg, const char *text, size_t len, cJSON *msg)
{
    qs_reasoning_split rs;
    qs_reasoning_split_text(cfg->reasoning, text, len, QS_SPLIT_ONE_SHOT, &rs);
    const char *content = text + rs.c_off;
    size_t content_len = rs.c_len;
    qs_tool_parse tp = {0};
    bool called = false;
    if (parses_tools(cfg)) {
        if (run_parser(cfg, content, content_len, true, &tp)) {
            qs_tool_parse_free(&tp);
            return -1;
        }
        called = tp.tools_called;
        content = tp.content ? tp.content : "";
        content_len = tp.content_len;
    }
    char *c = strndup(content, content_len);
    if (!c) {
        qs_tool_parse_free(&tp);
        return -1;
    }
    bool split = called || cfg->reasoning != QS_REASONING_NONE;
    bool forced = cfg->forced_required || cfg->forced_name;
    if (!c[0] && split && !forced)
        cJSON_AddNullToObject(msg, "content");
    else
        cJSON_AddStringToObject(msg, "content", c);
    free(c);
    if (cfg->reasoning != QS_REASONING_NONE) {
        char *r = rs.has_reasoning ? strndup(text + rs.r_off, rs.r_len) : NULL;
        if (r)
            cJSON_AddStringToObject(msg, "reasoning_content", r);
        else
            cJSON_AddNullToObject(msg, "reasoning_content");
        free(r);
    }
    cJSON *calls = cJSON_AddArrayToObject(msg, "tool_calls");
    for (int i = 0; called && i < tp.n_calls; i++) {
        if (i > 0 && !cfg->parallel_tool_calls)
            break;
        cJSON_AddItemToArray(calls, call_object(&tp.calls[i], short_ids(cfg)));
    }
    qs_tool_parse_free(&tp);
    return called && !cfg->forced_name ? 1 : 0;
}

/* ---------------- streaming ---------------- */

typedef struct {
    char id[64];
    size_t sent_args;
} sent_call;

struct qs_chat_stream {
    qs_chat_output_config cfg;
    char *text;
    size_t len, cap;
    size_t sent_reasoning, sent_content;
    sent_call *calls;
    int n_calls, cap_calls;
    qs_tool_parse tp;
};

qs_chat_stream *qs_chat_stream_new(const qs_chat_output_config *cfg)
{
    qs_chat_stream *s = calloc(1, sizeof *s);
    if (s)
        s->cfg = *cfg;
    return s;
}

void qs_chat_stream_free(qs_chat_stream *s)
{
    if (!s)
        return;
    free(s->text);
    free(s->calls);
    qs_tool_parse_free(&s->tp);
    free(s);
}

bool qs_chat_stream_tools_called(const qs_chat_stream *s) { return s && s->n_calls > 0 && !s->cfg.forced_name; }

/* Adds field key = src[*sent, n) to delta when that grew. */
static bool add_growth(cJSON *delta, const char *key, const char *src, size_t n, size_t *sent)
{
    if (n <= *sent)
        return false;
    char *piece = strndup(src + *sent, n - *sent);
    if (!piece)
        return false;
    cJSON_AddStringToObject(delta, key, piece);
    free(piece);
    *sent = n;
    return true;
}

static bool tool_deltas(qs_chat_stream *s, cJSON *delta)
{
    cJSON *arr = NULL;
    int limit = s->cfg.parallel_tool_calls ? s->tp.n_calls : (s->tp.n_calls > 0 ? 1 : 0);
    for (int i = 0; i < limit; i++) {
        const qs_tool_call_text *c = &s->tp.calls[i];
        if (!c->name)
            break; /* later calls wait for this one's name: indexes stay in order */
        cJSON *item = NULL;
        if (i >= s->n_calls) {
            if (s->n_calls == s->cap_calls) {
                int cap = s->cap_calls ? 2 * s->cap_calls : 4;
                sent_call *p = realloc(s->calls, (size_t)cap * sizeof *p);
                if (!p)
                    break;
                s->calls = p;
                s->cap_calls = cap;
            }
            sent_call *sc = &s->calls[s->n_calls++];
            qs_tool_call_id(short_ids(&s->cfg), sc->id, sizeof sc->id);
            sc->sent_args = 0;
            item = cJSON_CreateObject();
            cJSON_AddNumberToObject(item, "index", i);
            cJSON_AddStringToObject(item, "id", sc->id);
            cJSON_AddStringToObject(item, "type", "function");
            cJSON *fn = cJSON_AddObjectToObject(item, "function");
            cJSON_AddStringToObject(fn, "name", c->name);
            char *args = strndup(c->args, c->args_len);
            cJSON_AddStringToObject(fn, "arguments", args ? args : "");
            free(args);
            sc->sent_args = c->args_len;
        } else if (c->args_len > s->calls[i].sent_args) {
            item = cJSON_CreateObject();
            cJSON_AddNumberToObject(item, "index", i);
            cJSON *fn = cJSON_AddObjectToObject(item, "function");
            add_growth(fn, "arguments", c->args, c->args_len, &s->calls[i].sent_args);
        }
        if (item) {
            if (!arr)
                arr = cJSON_AddArrayToObject(delta, "tool_calls");
            cJSON_AddItemToArray(arr, item);
        }
    }
    return arr != NULL;
}

bool qs_chat_stream_feed(qs_chat_stream *s, const char *text, size_t len, bool end, cJSON *delta)
{
    if (len) {
        if (s->len + len + 1 > s->cap) {
            size_t cap = s->cap ? s->cap : 256;
            while (cap < s->len + len + 1)
                cap *= 2;
            char *p = realloc(s->text, cap);
            if (!p)
                return false;
            s->text = p;
            s->cap = cap;
        }
        memcpy(s->text + s->len, text, len);
        s->len += len;
        s->text[s->len] = '\0';
    }
    const char *all = s->text ? s->text : "";
    qs_reasoning_split rs;
    qs_reasoning_split_text(s->cfg.reasoning, all, s->len, end ? QS_SPLIT_STREAM_END : QS_SPLIT_PARTIAL, &rs);
    bool any = false;
    if (s->cfg.reasoning != QS_REASONING_NONE)
        any |= add_growth(delta, "reasoning_content", all + rs.r_off, rs.r_len, &s->sent_reasoning);
    if (!parses_tools(&s->cfg))
        return add_growth(delta, "content", all + rs.c_off, rs.c_len, &s->sent_content) || any;
    if (run_parser(&s->cfg, all + rs.c_off, rs.c_len, end, &s->tp))
        return any;
    /* A final parse that fell back to content after calls were streamed cannot take them back. */
    if (!(end && s->n_calls > 0 && !s->tp.tools_called))
        any |= add_growth(delta, "content", s->tp.content, s->tp.content_len, &s->sent_content);
    any |= tool_deltas(s, delta);
    return any;
}
