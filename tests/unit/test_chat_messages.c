/* test_chat_messages.c — the messages the chat template sees (chat_messages.c): text parts joined
 * with "\n" as vLLM joins them, image/audio/unknown parts refused naming the part, content null
 * on an assistant turn with tool_calls, tool_calls arguments parsed from JSON strings, and the
 * tool role's tool_call_id; then the real Qwen3 template renders such a conversation (skipped
 * when ../shared/data is absent). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "server/chat_messages.h"
#include "tokenizer/chat_template.h"
#include "util/fileio.h"

static cJSON *normalize(const char *json, qs_api_error *e, int *rc)
{
    cJSON *in = cJSON_Parse(json);
    assert_non_null(in);
    cJSON *out = NULL;
    memset(e, 0, sizeof *e);
    *rc = qs_chat_messages_for_template(in, &out, e);
    cJSON_Delete(in);
    return out;
}

static void expect_refused(const char *json, const char *param, const char *words)
{
    qs_api_error e;
    int rc;
    cJSON *out = normalize(json, &e, &rc);
    assert_int_equal(rc, -1);
    assert_null(out);
    assert_int_equal(e.status, 400);
    assert_string_equal(e.param, param);
    if (!strstr(e.message, words))
        fail_msg("message '%s' lacks '%s'", e.message, words);
}

static void test_content_parts(void **state)
{
    (void)state;
    qs_api_error e;
    int rc;
    cJSON *out = normalize("[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"first\"},\"bare\","
                           "{\"type\":\"text\",\"text\":\"third\"}],\"extra\":1}]",
                           &e, &rc);
    assert_int_equal(rc, 0);
    const cJSON *m = cJSON_GetArrayItem(out, 0);
    assert_string_equal(cJSON_GetObjectItem(m, "content")->valuestring, "first\nbare\nthird");
    assert_null(cJSON_GetObjectItem(m, "extra"));
    cJSON_Delete(out);

    out = normalize("[{\"role\":\"user\",\"content\":[]},{\"role\":\"assistant\"}]", &e, &rc);
    assert_int_equal(rc, 0);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(out, 0), "content")->valuestring, "");
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(out, 1), "content")->valuestring, "");
    cJSON_Delete(out);

    expect_refused("[{\"role\":\"user\",\"content\":\"a\"},{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":"
                   "\"see\"},{\"type\":\"image_url\",\"image_url\":{\"url\":\"http://x/a.png\"}}]}]",
                   "messages[1].content[1]", "text only");
    expect_refused("[{\"role\":\"user\",\"content\":[{\"type\":\"input_audio\",\"input_audio\":{}}]}]",
                   "messages[0].content[0]", "text only");
    expect_refused("[{\"role\":\"user\",\"content\":[{\"type\":\"hologram\"}]}]", "messages[0].content[0]", "unknown");
    expect_refused("[{\"role\":\"user\",\"content\":[{\"type\":\"text\"}]}]", "messages[0].content[0]", "'text'");
    expect_refused("[{\"role\":\"user\",\"content\":[5]}]", "messages[0].content[0]", "type");
}

static const char *TOOL_TURNS =
    "[{\"role\":\"user\",\"content\":\"Weather in Paris?\"},"
    "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"chatcmpl-tool-1\",\"type\":\"function\","
    "\"function\":{\"name\":\"get_weather\",\"arguments\":\"{\\\"city\\\": \\\"Paris\\\"}\"}},"
    "{\"id\":\"chatcmpl-tool-2\",\"type\":\"function\",\"function\":{\"name\":\"get_time\",\"arguments\":\"\"}}]},"
    "{\"role\":\"tool\",\"tool_call_id\":\"chatcmpl-tool-1\",\"content\":\"18 C, sunny\"}]";

static void test_tool_turns(void **state)
{
    (void)state;
    qs_api_error e;
    int rc;
    cJSON *out = normalize(TOOL_TURNS, &e, &rc);
    assert_int_equal(rc, 0);
    const cJSON *a = cJSON_GetArrayItem(out, 1);
    assert_string_equal(cJSON_GetObjectItem(a, "content")->valuestring, "");
    const cJSON *calls = cJSON_GetObjectItem(a, "tool_calls");
    const cJSON *args = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetArrayItem(calls, 0), "function"), "arguments");
    assert_true(cJSON_IsObject(args));
    assert_string_equal(cJSON_GetObjectItem(args, "city")->valuestring, "Paris");
    args = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetArrayItem(calls, 1), "function"), "arguments");
    assert_true(cJSON_IsObject(args) && cJSON_GetArraySize(args) == 0);
    const cJSON *t = cJSON_GetArrayItem(out, 2);
    assert_string_equal(cJSON_GetObjectItem(t, "tool_call_id")->valuestring, "chatcmpl-tool-1");
    cJSON_Delete(out);

    expect_refused("[{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"type\":\"function\",\"function\":{"
                   "\"name\":\"f\",\"arguments\":\"{not json\"}}]}]",
                   "messages[0].tool_calls[0]", "not valid JSON");
    expect_refused("[{\"role\":\"assistant\",\"tool_calls\":{}}]", "messages[0].tool_calls", "array");
    expect_refused("[{\"role\":\"assistant\",\"tool_calls\":[{\"type\":\"function\"}]}]", "messages[0].tool_calls[0]",
                   "function");
    expect_refused("[{\"role\":\"tool\",\"tool_call_id\":7,\"content\":\"x\"}]", "messages[0].tool_call_id", "string");
}

/* The real Qwen3 template renders the normalized turns as transformers would. */
static void test_qwen3_template_renders_tool_turns(void **state)
{
    (void)state;
    char path[1024];
    snprintf(path, sizeof path, "%s/tokenizers/qwen3", qs_shared_data_dir());
    char probe[1100];
    snprintf(probe, sizeof probe, "%s/tokenizer_config.json", path);
    FILE *f = fopen(probe, "r");
    if (!f) {
        printf("skip: %s is absent (the real Qwen3 tokenizer_config.json)\n", probe);
        skip();
    }
    fclose(f);
    qs_chat_template *t = NULL;
    qs_err err = {{0}};
    if (qs_chat_template_load_from_dir(path, &t, &err))
        fail_msg("%s", err.msg);
    qs_api_error e;
    int rc;
    cJSON *msgs = normalize(TOOL_TURNS, &e, &rc);
    assert_int_equal(rc, 0);
    cJSON *tools = cJSON_Parse("[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"parameters\":{"
                               "\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}}}}}]");
    char *text = NULL;
    if (qs_chat_template_render(t, msgs, tools, true, NULL, "<|im_end|>", NULL, &text, &err))
        fail_msg("%s", err.msg);
    /* Qwen3 writes the call back as JSON with the arguments object, and the tool result as a user
     * turn wrapped in <tool_response> */
    const char *want_call = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
    if (!strstr(text, want_call))
        fail_msg("no replayed call in:\n%s", text);
    if (!strstr(text, "<|im_start|>user\n<tool_response>\n18 C, sunny\n</tool_response><|im_end|>"))
        fail_msg("no tool response in:\n%s", text);
    if (!strstr(text, "# Tools"))
        fail_msg("no tools section in:\n%s", text);
    free(text);
    cJSON_Delete(tools);
    cJSON_Delete(msgs);
    qs_chat_template_free(t);
}

/* Llama 3.1's tool template (tests/data, works from a fresh clone) writes the replayed call's
 * arguments with tojson, which needs them as an object, and the tool result as an ipython turn.
 * (That template takes one call per turn.) */
static void test_llama3_1_template_renders_tool_turns(void **state)
{
    (void)state;
    char *src = NULL;
    size_t n = 0;
    qs_err err = {{0}};
    if (qs_read_file("tests/data/chat/templates/llama3_1_tools.jinja", &src, &n, &err))
        fail_msg("%s", err.msg);
    qs_chat_template *t = NULL;
    if (qs_chat_template_compile(src, "llama3_1_tools.jinja", &t, &err))
        fail_msg("%s", err.msg);
    free(src);
    const char *turns =
        "[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"Weather\"},{\"type\":\"text\",\"text\":\"in "
        "Paris?\"}]},{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"c1\",\"type\":\"function\","
        "\"function\":{\"name\":\"get_weather\",\"arguments\":\"{\\\"city\\\": \\\"Paris\\\"}\"}}]},"
        "{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"18 C\"}]";
    qs_api_error e;
    int rc;
    cJSON *msgs = normalize(turns, &e, &rc);
    assert_int_equal(rc, 0);
    char *text = NULL;
    if (qs_chat_template_render(t, msgs, NULL, true, "<|begin_of_text|>", "<|eot_id|>", NULL, &text, &err))
        fail_msg("%s", err.msg);
    if (!strstr(text, "Weather\nin Paris?"))
        fail_msg("parts not joined with a newline:\n%s", text);
    if (!strstr(text, "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}"))
        fail_msg("no replayed call in:\n%s", text);
    if (!strstr(text, "<|start_header_id|>ipython<|end_header_id|>\n\n\"18 C\"<|eot_id|>") &&
        !strstr(text, "<|start_header_id|>ipython<|end_header_id|>\n\n18 C<|eot_id|>"))
        fail_msg("no tool result in:\n%s", text);
    free(text);
    cJSON_Delete(msgs);
    qs_chat_template_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_content_parts),
        cmocka_unit_test(test_tool_turns),
        cmocka_unit_test(test_qwen3_template_renders_tool_turns),
        cmocka_unit_test(test_llama3_1_template_renders_tool_turns),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
