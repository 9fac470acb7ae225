/* test_tool_parsers.c — the tool-call parsers (hermes, llama3_json, mistral, pythonic) and the
 * reasoning parsers (qwen3, deepseek_r1) on outputs written the way those models write them:
 * one-shot results (content, reasoning_content, tool_calls names and arguments, tools_called),
 * malformed outputs falling back to content as vLLM does, and for every well-formed output the
 * streamed deltas — with the text split at every byte boundary, and fed one byte at a time —
 * adding up to exactly the one-shot message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "server/chat_output.h"
#include "server/reasoning_parser.h"
#include "server/tool_parser.h"

typedef struct {
    const char *name, *args;
} want_call;

static qs_chat_output_config cfg_of(const char *parser, qs_reasoning_kind r)
{
    qs_chat_output_config c = {.reasoning = r, .parallel_tool_calls = true};
    if (parser) {
        c.tools = qs_tool_parser_find(parser);
        assert_non_null(c.tools);
    }
    return c;
}

static const char *str_or_null(const cJSON *v) { return cJSON_IsString(v) ? v->valuestring : NULL; }

static void assert_str_or_null(const char *got, const char *want)
{
    if (!want)
        assert_null(got);
    else {
        assert_non_null(got);
        assert_string_equal(got, want);
    }
}

/* One-shot message for text. */
static cJSON *one_shot(const qs_chat_output_config *cfg, const char *text, int *called)
{
    cJSON *msg = cJSON_CreateObject();
    *called = qs_chat_output_message(cfg, text, strlen(text), msg);
    assert_true(*called >= 0);
    return msg;
}

static void check_message(const cJSON *msg, int called, const char *content, const char *reasoning,
                          const want_call *calls, int n_calls, bool want_called)
{
    assert_int_equal(called, want_called ? 1 : 0);
    assert_str_or_null(str_or_null(cJSON_GetObjectItem(msg, "content")), content);
    const cJSON *r = cJSON_GetObjectItem(msg, "reasoning_content");
    if (r)
        assert_str_or_null(str_or_null(r), reasoning);
    else
        assert_null(reasoning);
    const cJSON *tc = cJSON_GetObjectItem(msg, "tool_calls");
    assert_true(cJSON_IsArray(tc));
    assert_int_equal(cJSON_GetArraySize(tc), n_calls);
    for (int i = 0; i < n_calls; i++) {
        const cJSON *c = cJSON_GetArrayItem(tc, i);
        const cJSON *fn = cJSON_GetObjectItem(c, "function");
        assert_string_equal(cJSON_GetObjectItem(c, "type")->valuestring, "function");
        assert_non_null(str_or_null(cJSON_GetObjectItem(c, "id")));
        assert_string_equal(cJSON_GetObjectItem(fn, "name")->valuestring, calls[i].name);
        assert_string_equal(cJSON_GetObjectItem(fn, "arguments")->valuestring, calls[i].args);
    }
}

/* The streamed deltas, accumulated as a client would. */
typedef struct {
    char content[4096], reasoning[4096];
    bool has_content, has_reasoning;
    char names[8][64], args[8][2048], ids[8][64];
    int n_calls;
    bool called;
} streamed;

static void cat(char *dst, size_t cap, const char *s)
{
    assert_true(strlen(dst) + strlen(s) < cap);
    strcat(dst, s);
}

static void absorb(streamed *st, const cJSON *delta)
{
    const cJSON *c = cJSON_GetObjectItem(delta, "content");
    if (cJSON_IsString(c)) {
        cat(st->content, sizeof st->content, c->valuestring);
        st->has_content = true;
    }
    const cJSON *r = cJSON_GetObjectItem(delta, "reasoning_content");
    if (cJSON_IsString(r)) {
        cat(st->reasoning, sizeof st->reasoning, r->valuestring);
        st->has_reasoning = true;
    }
    const cJSON *item;
    cJSON_ArrayForEach(item, cJSON_GetObjectItem(delta, "tool_calls"))
    {
        int index = cJSON_GetObjectItem(item, "index")->valueint;
        const cJSON *fn = cJSON_GetObjectItem(item, "function");
        const cJSON *id = cJSON_GetObjectItem(item, "id");
        if (index == st->n_calls) { /* a new call: id, type and name come first */
            assert_non_null(str_or_null(id));
            assert_string_equal(cJSON_GetObjectItem(item, "type")->valuestring, "function");
            snprintf(st->ids[index], sizeof st->ids[index], "%s", id->valuestring);
            snprintf(st->names[index], sizeof st->names[index], "%s", cJSON_GetObjectItem(fn, "name")->valuestring);
            st->n_calls++;
        } else {
            assert_true(index < st->n_calls);
            assert_null(id); /* the id is sent once */
            assert_null(cJSON_GetObjectItem(fn, "name"));
        }
        const cJSON *a = cJSON_GetObjectItem(fn, "arguments");
        if (cJSON_IsString(a))
            cat(st->args[index], sizeof st->args[index], a->valuestring);
    }
}

/* Streams text in pieces cut at cuts[0..n_cuts) (ascending offsets). */
static void stream_pieces(const qs_chat_output_config *cfg, const char *text, const size_t *cuts, int n_cuts,
                          streamed *st)
{
    memset(st, 0, sizeof *st);
    qs_chat_stream *s = qs_chat_stream_new(cfg);
    assert_non_null(s);
    size_t len = strlen(text), at = 0;
    for (int k = 0; k <= n_cuts; k++) {
        size_t to = k < n_cuts ? cuts[k] : len;
        cJSON *delta = cJSON_CreateObject();
        qs_chat_stream_feed(s, text + at, to - at, k == n_cuts, delta);
        absorb(st, delta);
        cJSON_Delete(delta);
        at = to;
    }
    st->called = qs_chat_stream_tools_called(s);
    qs_chat_stream_free(s);
}

static void assert_stream_matches(const streamed *st, const cJSON *msg, int called)
{
    const char *content = str_or_null(cJSON_GetObjectItem(msg, "content"));
    assert_string_equal(st->content, content ? content : "");
    const char *reasoning = str_or_null(cJSON_GetObjectItem(msg, "reasoning_content"));
    assert_string_equal(st->reasoning, reasoning ? reasoning : "");
    const cJSON *tc = cJSON_GetObjectItem(msg, "tool_calls");
    assert_int_equal(st->n_calls, cJSON_GetArraySize(tc));
    assert_int_equal(st->called, called == 1);
    for (int i = 0; i < st->n_calls; i++) {
        const cJSON *fn = cJSON_GetObjectItem(cJSON_GetArrayItem(tc, i), "function");
        assert_string_equal(st->names[i], cJSON_GetObjectItem(fn, "name")->valuestring);
        assert_string_equal(st->args[i], cJSON_GetObjectItem(fn, "arguments")->valuestring);
    }
}

/* Every two-piece split, and one byte at a time, give the one-shot message. */
static void check_streaming(const qs_chat_output_config *cfg, const char *text)
{
    int called;
    cJSON *msg = one_shot(cfg, text, &called);
    size_t len = strlen(text);
    streamed st;
    for (size_t cut = 0; cut <= len; cut++) {
        stream_pieces(cfg, text, &cut, 1, &st);
        assert_stream_matches(&st, msg, called);
    }
    size_t *cuts = malloc((len + 1) * sizeof *cuts);
    for (size_t i = 0; i < len; i++)
        cuts[i] = i + 1;
    stream_pieces(cfg, text, cuts, len ? (int)len - 1 : 0, &st);
    assert_stream_matches(&st, msg, called);
    free(cuts);
    cJSON_Delete(msg);
}

static void expect(const char *parser, qs_reasoning_kind r, const char *text, const char *content,
                   const char *reasoning, const want_call *calls, int n_calls, bool streams_alike)
{
    qs_chat_output_config cfg = cfg_of(parser, r);
    int called;
    cJSON *msg = one_shot(&cfg, text, &called);
    check_message(msg, called, content, reasoning, calls, n_calls, n_calls > 0);
    cJSON_Delete(msg);
    if (streams_alike)
        check_streaming(&cfg, text);
}

static void test_hermes(void **state)
{
    (void)state;
    const char *qwen =
        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": \"celsius\"}}\n</tool_call>";
    want_call w1[] = {{"get_weather", "{\"city\": \"Paris\", \"unit\": \"celsius\"}"}};
    expect("hermes", QS_REASONING_NONE, qwen, NULL, NULL, w1, 1, true);

    expect("hermes", QS_REASONING_NONE,
           "Let me check the weather.\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", "
           "\"unit\": \"celsius\"}}\n</tool_call>",
           "Let me check the weather.\n\n", NULL, w1, 1, true);

    want_call two[] = {{"get_weather", "{\"city\": \"Paris\"}"}, {"get_time", "{\"tz\": \"Europe/Paris\"}"}};
    expect("hermes", QS_REASONING_NONE,
           "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n"
           "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"tz\": \"Europe/Paris\"}}\n</tool_call>",
           NULL, NULL, two, 2, true);

    /* compact JSON is laid out as json.dumps does; strings keep their bytes */
    want_call compact[] = {{"f", "{\"a\": 1, \"b\": [1, 2.5, true, null], \"c\": {\"d\": \"x, y: z\"}}"}};
    expect("hermes", QS_REASONING_NONE,
           "<tool_call>{\"name\":\"f\",\"arguments\":{\"a\":1,\"b\":[1,2.5,true,null],\"c\":{\"d\":\"x, y: z\"}}}</tool_call>",
           NULL, NULL, compact, 1, true);

    /* markup-like text and escapes inside argument strings */
    want_call tricky[] = {{"search", "{\"q\": \"a \\\"}\\\" </tool_call> {b}\", \"city\": \"Z\xc3\xbcrich\"}"}};
    expect("hermes", QS_REASONING_NONE,
           "<tool_call>\n{\"name\": \"search\", \"arguments\": {\"q\": \"a \\\"}\\\" </tool_call> {b}\", \"city\": "
           "\"Z\xc3\xbcrich\"}}\n</tool_call>",
           NULL, NULL, tricky, 1, true);

    /* arguments before the name */
    want_call order[] = {{"f", "{\"x\": 1}"}};
    expect("hermes", QS_REASONING_NONE, "<tool_call>{\"arguments\": {\"x\": 1}, \"name\": \"f\"}</tool_call>", NULL,
           NULL, order, 1, true);

    /* a last call without its closing tag still counts (vLLM's regex allows it) */
    expect("hermes", QS_REASONING_NONE, "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"x\": 1}}", NULL, NULL, order,
           1, true);

    /* no markup: all content, nothing held back at the end */
    expect("hermes", QS_REASONING_NONE, "Hello <b>world</b> <tool", "Hello <b>world</b> <tool", NULL, NULL, 0, true);
    expect("hermes", QS_REASONING_NONE, "", "", NULL, NULL, 0, true);

    /* malformed calls: the whole output is content (one-shot, as vLLM) */
    const char *bad = "<tool_call>{\"name\": \"f\", \"arguments\": {bad}}</tool_call>";
    expect("hermes", QS_REASONING_NONE, bad, bad, NULL, NULL, 0, false);
    const char *no_args = "<tool_call>{\"name\": \"f\"}</tool_call>";
    expect("hermes", QS_REASONING_NONE, no_args, no_args, NULL, NULL, 0, false);
    const char *not_object = "<tool_call>{\"name\": \"f\", \"arguments\": [1]}</tool_call>";
    expect("hermes", QS_REASONING_NONE, not_object, not_object, NULL, NULL, 0, false);
}

static void test_llama3_json(void **state)
{
    (void)state;
    want_call w[] = {{"get_weather", "{\"city\": \"Paris\"}"}};
    expect("llama3_json", QS_REASONING_NONE, "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}", NULL,
           NULL, w, 1, true);
    want_call two[] = {{"get_weather", "{\"city\": \"Paris\"}"}, {"get_time", "{}"}};
    expect("llama3_json", QS_REASONING_NONE,
           "<|python_tag|>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}; {\"name\": \"get_time\", "
           "\"parameters\": {}}",
           NULL, NULL, two, 2, true);
    expect("llama3_json", QS_REASONING_NONE, "The answer is {x}.", "The answer is {x}.", NULL, NULL, 0, true);
    expect("llama3_json", QS_REASONING_NONE, "<|python", "<|python", NULL, NULL, 0, true);
    const char *bad = "{\"foo\": 1}";
    expect("llama3_json", QS_REASONING_NONE, bad, bad, NULL, NULL, 0, false);
}

static void test_mistral(void **state)
{
    (void)state;
    want_call w[] = {{"get_weather", "{\"city\": \"Paris\"}"}};
    expect("mistral", QS_REASONING_NONE, "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]",
           NULL, NULL, w, 1, true);
    expect("mistral", QS_REASONING_NONE,
           "Sure. [TOOL_CALLS] [{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]", "Sure. ", NULL, w, 1,
           true);
    want_call v11[] = {{"get_weather", "{\"city\": \"Paris\"}"}, {"get_time", "{}"}};
    expect("mistral", QS_REASONING_NONE,
           "[TOOL_CALLS]get_weather[ARGS]{\"city\":\"Paris\"}[TOOL_CALLS]get_time[ARGS]{}", NULL, NULL, v11, 2, true);
    expect("mistral", QS_REASONING_NONE, "No tools [TOOL", "No tools [TOOL", NULL, NULL, 0, true);
    const char *bad = "[TOOL_CALLS][{\"name\": \"f\"";
    expect("mistral", QS_REASONING_NONE, bad, bad, NULL, NULL, 0, false);

    /* Mistral's ids are 9 alphanumerics */
    qs_chat_output_config cfg = cfg_of("mistral", QS_REASONING_NONE);
    int called;
    cJSON *msg = one_shot(&cfg, "[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {}}]", &called);
    const char *id = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(msg, "tool_calls"), 0), "id")->valuestring;
    assert_int_equal(strlen(id), 9);
    cJSON_Delete(msg);
}

static void test_pythonic(void **state)
{
    (void)state;
    want_call w[] = {{"get_weather", "{\"city\": \"San Francisco\", \"metric\": \"celsius\"}"}};
    expect("pythonic", QS_REASONING_NONE, "[get_weather(city=\"San Francisco\", metric=\"celsius\")]", NULL, NULL, w, 1,
           true);
    want_call lit[] = {{"f", "{\"s\": \"it's \\\"q\\\"\\n\", \"n\": -3, \"x\": 1.5e3, \"t\": true, \"f\": false, \"z\": "
                             "null, \"l\": [\"a\", \"b\"], \"tu\": [1, 2], \"d\": {\"k\": 1}}"},
                       {"get_time", "{}"}};
    expect("pythonic", QS_REASONING_NONE,
           "[f(s='it\\'s \"q\"\\n', n=-3, x=1.5e3, t=True, f=False, z=None, l=['a', \"b\"], tu=(1, 2), d={'k': 1}), "
           "get_time()]",
           NULL, NULL, lit, 2, true);
    want_call l4[] = {{"f", "{\"a\": 1}"}};
    expect("pythonic", QS_REASONING_NONE, "<|python_start|>[f(a=1)]<|python_end|>", NULL, NULL, l4, 1, true);
    expect("pythonic", QS_REASONING_NONE, "  Hello [world]", "  Hello [world]", NULL, NULL, 0, true);
    expect("pythonic", QS_REASONING_NONE, "[f(a=1)", "[f(a=1)", NULL, NULL, 0, false);
    expect("pythonic", QS_REASONING_NONE, "[1, 2, 3]", "[1, 2, 3]", NULL, NULL, 0, false);
}

static void test_parallel_tool_calls_false(void **state)
{
    (void)state;
    qs_chat_output_config cfg = cfg_of("hermes", QS_REASONING_NONE);
    cfg.parallel_tool_calls = false;
    const char *text = "<tool_call>{\"name\": \"a\", \"arguments\": {}}</tool_call><tool_call>{\"name\": \"b\", "
                       "\"arguments\": {}}</tool_call>";
    int called;
    cJSON *msg = one_shot(&cfg, text, &called);
    want_call first[] = {{"a", "{}"}};
    check_message(msg, called, NULL, NULL, first, 1, true);
    cJSON_Delete(msg);
    check_streaming(&cfg, text);
}

/* Outputs of enforced tool choices: required writes a list of {name, parameters}, a named
 * choice the arguments object; finish_reason is "tool_calls" for required only, and content is
 * "" as vLLM returns it. */
static void test_forced_choices(void **state)
{
    (void)state;
    qs_chat_output_config req = {.forced_required = true, .parallel_tool_calls = true};
    const char *text = "[{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}, {\"name\": \"get_time\", "
                       "\"parameters\": {}}]";
    int called;
    cJSON *msg = one_shot(&req, text, &called);
    want_call two[] = {{"get_weather", "{\"city\": \"Paris\"}"}, {"get_time", "{}"}};
    check_message(msg, called, "", NULL, two, 2, true);
    cJSON_Delete(msg);
    check_streaming(&req, text);

    qs_chat_output_config named = {.forced_name = "get_weather", .parallel_tool_calls = true};
    msg = one_shot(&named, "{\"city\":\"Paris\"}", &called);
    assert_int_equal(called, 0); /* finish_reason stays "stop" for a named choice */
    const cJSON *tc = cJSON_GetObjectItem(msg, "tool_calls");
    assert_int_equal(cJSON_GetArraySize(tc), 1);
    const cJSON *fn = cJSON_GetObjectItem(cJSON_GetArrayItem(tc, 0), "function");
    assert_string_equal(cJSON_GetObjectItem(fn, "name")->valuestring, "get_weather");
    assert_string_equal(cJSON_GetObjectItem(fn, "arguments")->valuestring, "{\"city\": \"Paris\"}");
    assert_string_equal(cJSON_GetObjectItem(msg, "content")->valuestring, "");
    cJSON_Delete(msg);
    check_streaming(&named, "{\"city\": \"Paris\", \"days\": [1, 2]}");

    /* with a reasoning parser the enforced call is the answer after the reasoning */
    qs_chat_output_config named_r1 = named;
    named_r1.reasoning = QS_REASONING_DEEPSEEK_R1;
    msg = one_shot(&named_r1, "Paris, then.</think>{\"city\": \"Paris\"}", &called);
    assert_string_equal(cJSON_GetObjectItem(msg, "reasoning_content")->valuestring, "Paris, then.");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(msg, "tool_calls")), 1);
    const cJSON *call = cJSON_GetArrayItem(cJSON_GetObjectItem(msg, "tool_calls"), 0);
    const cJSON *args = cJSON_GetObjectItem(cJSON_GetObjectItem(call, "function"), "arguments");
    assert_string_equal(args->valuestring, "{\"city\": \"Paris\"}");
    cJSON_Delete(msg);
    check_streaming(&named_r1, "Paris, then.</think>{\"city\": \"Paris\"}");
    qs_chat_output_config required_qwen3 = req;
    required_qwen3.reasoning = QS_REASONING_QWEN3;
    msg = one_shot(&required_qwen3, "<think>Two tools.</think>[{\"name\": \"get_time\", \"parameters\": {}}]", &called);
    assert_string_equal(cJSON_GetObjectItem(msg, "reasoning_content")->valuestring, "Two tools.");
    assert_int_equal(called, 1);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(msg, "tool_calls")), 1);
    cJSON_Delete(msg);
    check_streaming(&required_qwen3, "<think>Two tools.</think>[{\"name\": \"get_time\", \"parameters\": {}}]");

    /* cut off by max_tokens: no call, the text is content */
    msg = one_shot(&req, "[{\"name\": \"get_weather\", \"param", &called);
    check_message(msg, called, "[{\"name\": \"get_weather\", \"param", NULL, NULL, 0, false);
    cJSON_Delete(msg);
}

static void test_reasoning(void **state)
{
    (void)state;
    expect(NULL, QS_REASONING_QWEN3, "<think>\nThe user greets me.\n</think>\n\nHello!", "\n\nHello!",
           "\nThe user greets me.\n", NULL, 0, true);
    /* qwen3 without tags (enable_thinking=false): all content, reasoning null */
    expect(NULL, QS_REASONING_QWEN3, "Hello!", "Hello!", NULL, NULL, 0, true);
    /* only reasoning: content null */
    expect(NULL, QS_REASONING_QWEN3, "<think>hmm</think>", NULL, "hmm", NULL, 0, true);
    /* vLLM's one-shot rules where the start or end tag is missing */
    expect(NULL, QS_REASONING_QWEN3, "abc</think>xyz", "xyz", "abc", NULL, 0, false);
    expect(NULL, QS_REASONING_QWEN3, "<think>cut off", "cut off", NULL, NULL, 0, false);
    expect(NULL, QS_REASONING_DEEPSEEK_R1, "abc</think>xyz", "xyz", "abc", NULL, 0, true);
    expect(NULL, QS_REASONING_DEEPSEEK_R1, "<think>abc</think>xyz", "xyz", "abc", NULL, 0, true);
    expect(NULL, QS_REASONING_DEEPSEEK_R1, "still thinking", NULL, "still thinking", NULL, 0, true);

    /* both parsers: reasoning first, then tool calls in the answer */
    want_call w[] = {{"get_weather", "{\"city\": \"Paris\"}"}};
    expect("hermes", QS_REASONING_QWEN3,
           "<think>\nI need the weather.\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
           "\"Paris\"}}\n</tool_call>",
           "\n\n", "\nI need the weather.\n", w, 1, true);

    qs_reasoning_kind k;
    assert_true(qs_reasoning_parser_find("qwen3", &k) && k == QS_REASONING_QWEN3);
    assert_true(qs_reasoning_parser_find("deepseek_r1", &k) && k == QS_REASONING_DEEPSEEK_R1);
    assert_false(qs_reasoning_parser_find("granite", &k));
    assert_null(qs_tool_parser_find("xlam"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hermes),    cmocka_unit_test(test_llama3_json),
        cmocka_unit_test(test_mistral),   cmocka_unit_test(test_pythonic),
        cmocka_unit_test(test_parallel_tool_calls_false), cmocka_unit_test(test_reasoning),
        cmocka_unit_test(test_forced_choices),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
