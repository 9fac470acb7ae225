/* test_openai_request.c — validation of completions / chat bodies: every accepted shape of
 * `prompt`, defaults, and a 400 naming the parameter for each wrong type or out-of-range value;
 * plus the OpenAI error body. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "server/api_error.h"
#include "server/openai_request.h"
#include "structured/structured.h"

static int parse(qs_api_kind kind, const char *body, qs_openai_request *r, qs_api_error *e)
{
    memset(e, 0, sizeof *e);
    return qs_openai_request_parse(kind, body, strlen(body), r, e);
}

static void expect_ok(qs_api_kind kind, const char *body, qs_openai_request *r)
{
    qs_api_error e;
    if (parse(kind, body, r, &e))
        fail_msg("rejected %s: %s", body, e.message);
}

static void expect_400(qs_api_kind kind, const char *body, const char *param)
{
    qs_openai_request r;
    qs_api_error e;
    if (parse(kind, body, &r, &e) == 0)
        fail_msg("accepted %s", body);
    assert_int_equal(e.status, 400);
    assert_string_equal(e.param, param);
    assert_true(strlen(e.message) > 0);
    qs_openai_request_free(&r);
}

static void test_prompt_shapes(void **state)
{
    (void)state;
    qs_openai_request r;
    expect_ok(QS_API_COMPLETIONS, "{\"model\":\"m\",\"prompt\":\"hello\"}", &r);
    assert_int_equal(r.n_prompts, 1);
    assert_string_equal(r.prompts[0].text, "hello");
    assert_string_equal(r.model, "m");
    qs_openai_request_free(&r);

    expect_ok(QS_API_COMPLETIONS, "{\"prompt\":[\"a\",\"b\",\"c\"]}", &r);
    assert_int_equal(r.n_prompts, 3);
    assert_string_equal(r.prompts[2].text, "c");
    assert_null(r.model);
    qs_openai_request_free(&r);

    expect_ok(QS_API_COMPLETIONS, "{\"prompt\":[1,2,3]}", &r);
    assert_int_equal(r.n_prompts, 1);
    assert_int_equal(r.prompts[0].n_ids, 3);
    assert_int_equal(r.prompts[0].ids[2], 3);
    qs_openai_request_free(&r);

    /* a flat list of more ids than QS_MAX_PROMPTS is still one prompt */
    char big[16 + 2 * 1000 + 4] = "{\"prompt\":[";
    for (int i = 0; i < 1000; i++)
        strcat(big, i ? ",7" : "7");
    strcat(big, "]}");
    expect_ok(QS_API_COMPLETIONS, big, &r);
    assert_int_equal(r.n_prompts, 1);
    assert_int_equal(r.prompts[0].n_ids, 1000);
    qs_openai_request_free(&r);

    expect_ok(QS_API_COMPLETIONS, "{\"prompt\":[[5,6],[7]]}", &r);
    assert_int_equal(r.n_prompts, 2);
    assert_int_equal(r.prompts[1].n_ids, 1);
    assert_int_equal(r.prompts[1].ids[0], 7);
    qs_openai_request_free(&r);

    /* one token-id prompt longer than the 256-prompt limit is still one prompt (a long cached
     * system prompt sent as ids); 300 strings are 300 prompts, too many */
    char body[4096] = "{\"prompt\":[", strs[4096] = "{\"prompt\":[";
    for (int i = 0; i < 300; i++) {
        snprintf(body + strlen(body), sizeof body - strlen(body), "%s%d", i ? "," : "", i + 1);
        snprintf(strs + strlen(strs), sizeof strs - strlen(strs), "%s\"a\"", i ? "," : "");
    }
    strcat(body, "]}");
    strcat(strs, "]}");
    expect_ok(QS_API_COMPLETIONS, body, &r);
    assert_int_equal(r.n_prompts, 1);
    assert_int_equal(r.prompts[0].n_ids, 300);
    qs_openai_request_free(&r);
    expect_400(QS_API_COMPLETIONS, strs, "prompt");

    expect_400(QS_API_COMPLETIONS, "{}", "prompt");
    expect_400(QS_API_COMPLETIONS, "{\"prompt\":[]}", "prompt");
    expect_400(QS_API_COMPLETIONS, "{\"prompt\":42}", "prompt");
    expect_400(QS_API_COMPLETIONS, "{\"prompt\":[\"a\",1]}", "prompt");
    expect_400(QS_API_COMPLETIONS, "{\"prompt\":[1,-2]}", "prompt");
    expect_400(QS_API_COMPLETIONS, "{\"prompt\":[1,2.5]}", "prompt");
    expect_400(QS_API_COMPLETIONS, "{\"prompt\":[[1],[]]}", "prompt");
    expect_400(QS_API_COMPLETIONS, "{\"prompt\":\"\\u00ff\xff\"}", "prompt"); /* invalid UTF-8 */
}

static void test_defaults(void **state)
{
    (void)state;
    qs_openai_request r;
    expect_ok(QS_API_COMPLETIONS, "{\"prompt\":\"x\"}", &r);
    assert_int_equal(r.n, 1);
    assert_int_equal(r.max_tokens, 16); /* OpenAI's and vLLM's completions default */
    assert_false(r.stream);
    assert_false(r.echo);
    assert_true(r.skip_special_tokens);
    assert_int_equal(r.sampling.logprobs, -1);
    assert_true(r.sampling.temperature == 1.0);
    assert_true(r.sampling.top_p == 1.0);
    qs_openai_request_free(&r);
}

static void test_sampling_fields(void **state)
{
    (void)state;
    qs_openai_request r;
    expect_ok(QS_API_COMPLETIONS,
              "{\"prompt\":\"x\",\"max_tokens\":7,\"temperature\":0,\"top_p\":0.5,\"top_k\":40,\"min_p\":0.1,"
              "\"seed\":-3,\"n\":3,\"stop\":[\"a\",\"bc\"],\"stop_token_ids\":[9],\"presence_penalty\":1.5,"
              "\"frequency_penalty\":-1,\"repetition_penalty\":1.2,\"logit_bias\":{\"17\":-100,\"4\":2.5},"
              "\"logprobs\":3,\"echo\":true,\"stream\":true,\"stream_options\":{\"include_usage\":true},"
              "\"ignore_eos\":true,\"user\":\"u\",\"min_tokens\":2}",
              &r);
    assert_int_equal(r.max_tokens, 7);
    assert_int_equal(r.min_tokens, 2);
    assert_true(r.sampling.temperature == 0.0);
    assert_true(r.sampling.top_p == 0.5);
    assert_int_equal(r.sampling.top_k, 40);
    assert_true(r.sampling.has_seed);
    assert_int_equal((int64_t)r.sampling.seed, -3);
    assert_int_equal(r.n, 3);
    assert_int_equal(r.n_stop, 2);
    assert_string_equal(r.stop[1], "bc");
    assert_int_equal(r.n_stop_token_ids, 1);
    assert_int_equal(r.sampling.n_logit_bias, 2);
    assert_int_equal(r.sampling.logit_bias[0].token_id, 17);
    assert_true(r.sampling.logit_bias[0].bias == -100.0f);
    assert_int_equal(r.sampling.logprobs, 3);
    assert_true(r.echo && r.stream && r.include_usage && r.ignore_eos);
    qs_openai_request_free(&r);

    expect_ok(QS_API_COMPLETIONS, "{\"prompt\":\"x\",\"stop\":\"END\",\"max_tokens\":null}", &r);
    assert_int_equal(r.n_stop, 1);
    assert_string_equal(r.stop[0], "END");
    assert_int_equal(r.max_tokens, 16);
    qs_openai_request_free(&r);

    expect_ok(QS_API_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", &r);
    assert_int_equal(r.max_tokens, -1); /* chat runs to the context end */
    qs_openai_request_free(&r);
}

static void test_out_of_range(void **state)
{
    (void)state;
    expect_400(QS_API_COMPLETIONS, "{\"prompt\":\"x\",\"max_tokens\":0}", "max_tokens");
    expect_400(QS_API_COMPLETIONS, "{\"prompt\":\"x\",\"max_tokens\":\"5\"}", "max_tokens");
    expect_400(QS_API_COMPLETIONS, "{\"prompt\":\"x\",\"max_tokens\":1e300}", "max_tokens");
    expect_400(QS_API_COMPLETIONS, "{\"prompt\":\"x\",\"max_tokens\":3.5}", "max_tokens");
    expect_400(QS_API_COMPLETIONS, "{\"prompt\":\"x\",\"temperature\":-0.1}", "temperature");
    expect_400(QS_API_COMPLETIONS, "{\"prompt\":\"x\",\"temperature\":\"hot\"}", "temperature");
    expect_400(QS_API_COMPLETIONS, "{\"prompt\":\"x\",\"top_p\":0}", "top_p");
    expect_400(QS_API_COMPLETIONS, "{\"prompt\":\"x\",\"top_p\":1.5}", "top_p");
    expect_400(QS_API_COMPLETIONS, "{\"prompt\":\"x\",\"top_k\":-2}", "top_k");
    expect_400(QS_API_COMPLETIONS, "{\"prompt\":\"x\",\"min_p\":2}", "min_p");
    expect_400(QS_API_COMPLETIONS, "{\"prompt\":\"x\",\"n\":0}", "n");
    expect_400(QS_API_COMPLETIONS, "{\"prompt\":\"x\",\"n\":100000}", "n");
    expect_400(QS_API_COMPLETIONS, "{\"prompt\":\"x\",\"seed\":\"s\"}", "seed");
    expect_400(QS_API_COMPLETIONS, "{\"prompt\":\"x\",\"presence_penalty\":3}", "presence_penalty");
    expect_400(QS_API_COMPLETIONS, "{\"prompt\":\"x\",\"frequency_penalty\":-2.5}", "frequency_penalty");
    expect_400(QS_API_COMPLETIONS, "{\"prompt\":\"x\",\"repetition_penalty\":0}", "repetition_penalty");
    expect_400(QS_API_COMPLETIONS, "{\"prompt\":\"x\",\"logprobs\":21}", "logprobs");
    expect_400(QS_API_COMPLETIONS, "{\"prompt\":\"x\",\"logprobs\":true}", "logprobs");
    expect_400(QS_API_COMPLETIONS, "{\"prompt\":\"x\",\"stop\":7}", "stop");
    expect_400(QS_API_COMPLETIONS, "{\"prompt\":\"x\",\"stop\":[\"a\",1]}", "stop");
    expect_400(QS_API_COMPLETIONS, "{\"prompt\":\"x\",\"stop_token_ids\":[\"a\"]}", "stop_token_ids");
    expect_400(QS_API_COMPLETIONS, "{\"prompt\":\"x\",\"logit_bias\":{\"abc\":1}}", "logit_bias");
    expect_400(QS_API_COMPLETIONS, "{\"prompt\":\"x\",\"logit_bias\":{\"5\":101}}", "logit_bias");
    expect_400(QS_API_COMPLETIONS, "{\"prompt\":\"x\",\"logit_bias\":[1]}", "logit_bias");
    expect_400(QS_API_COMPLETIONS, "{\"prompt\":\"x\",\"stream\":\"yes\"}", "stream");
    expect_400(QS_API_COMPLETIONS, "{\"prompt\":\"x\",\"stream_options\":{\"include_usage\":true}}", "stream_options");
    expect_400(QS_API_COMPLETIONS, "{\"prompt\":\"x\",\"echo\":1}", "echo");
    expect_400(QS_API_COMPLETIONS, "{\"prompt\":\"x\",\"model\":5}", "model");
    expect_400(QS_API_COMPLETIONS, "{\"prompt\":\"x\",\"user\":[]}", "user");
    expect_400(QS_API_COMPLETIONS, "{\"prompt\":\"x\",\"max_tokens\":3,\"min_tokens\":4}", "min_tokens");
}

static void test_chat_fields(void **state)
{
    (void)state;
    qs_openai_request r;
    expect_ok(QS_API_CHAT,
              "{\"messages\":[{\"role\":\"system\",\"content\":\"be brief\"},{\"role\":\"user\",\"content\":[{\"type\":"
              "\"text\",\"text\":\"hi\"}]}],\"max_completion_tokens\":9,\"logprobs\":true,\"top_logprobs\":4,"
              "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}],\"chat_template_kwargs\":{"
              "\"enable_thinking\":false},\"add_generation_prompt\":false}",
              &r);
    assert_int_equal(cJSON_GetArraySize(r.messages), 2);
    assert_int_equal(r.max_tokens, 9);
    assert_true(r.chat_logprobs);
    assert_int_equal(r.sampling.logprobs, 4);
    assert_non_null(r.tools);
    assert_non_null(r.chat_template_kwargs);
    assert_false(r.add_generation_prompt);
    qs_openai_request_free(&r);

    expect_ok(QS_API_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"logprobs\":true}", &r);
    assert_int_equal(r.sampling.logprobs, 0);
    qs_openai_request_free(&r);

    expect_400(QS_API_CHAT, "{}", "messages");
    expect_400(QS_API_CHAT, "{\"messages\":[]}", "messages");
    expect_400(QS_API_CHAT, "{\"messages\":\"hi\"}", "messages");
    expect_400(QS_API_CHAT, "{\"messages\":[{\"content\":\"hi\"}]}", "messages");
    expect_400(QS_API_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":5}]}", "messages");
    expect_400(QS_API_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"top_logprobs\":2}",
               "top_logprobs");
    expect_400(QS_API_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"logprobs\":3}", "logprobs");
    expect_400(QS_API_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"tools\":{}}", "tools");
    expect_400(QS_API_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"chat_template_kwargs\":1}",
               "chat_template_kwargs");
    expect_400(QS_API_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_completion_tokens\":-1}",
               "max_completion_tokens");
}

#define MSGS "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
#define TOOL_F "{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":{\"type\":\"object\"}}}"

static void test_tool_fields(void **state)
{
    (void)state;
    qs_openai_request r;
    expect_ok(QS_API_CHAT, MSGS "\"tools\":[" TOOL_F "]}", &r);
    assert_int_equal(r.tool.choice, QS_TOOL_CHOICE_AUTO); /* vLLM's default with tools */
    assert_true(r.tool.parallel_tool_calls);
    qs_openai_request_free(&r);
    expect_ok(QS_API_CHAT, MSGS "\"tools\":[" TOOL_F "],\"tool_choice\":\"none\",\"parallel_tool_calls\":false}", &r);
    assert_int_equal(r.tool.choice, QS_TOOL_CHOICE_NONE);
    assert_non_null(r.tools); /* still rendered, as vLLM does */
    assert_false(r.tool.parallel_tool_calls);
    qs_openai_request_free(&r);
    expect_ok(QS_API_CHAT, MSGS "\"tools\":[" TOOL_F "],\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"f\"}}}",
              &r);
    assert_int_equal(r.tool.choice, QS_TOOL_CHOICE_NAMED);
    assert_string_equal(r.tool.named, "f");
    assert_non_null(r.tool.named_parameters);
    qs_openai_request_free(&r);
    expect_ok(QS_API_CHAT, MSGS "\"tools\":[" TOOL_F "],\"tool_choice\":\"required\"}", &r);
    assert_int_equal(r.tool.choice, QS_TOOL_CHOICE_REQUIRED);
    qs_openai_request_free(&r);
    expect_ok(QS_API_CHAT, MSGS "\"tool_choice\":\"none\"}", &r);
    assert_int_equal(r.tool.choice, QS_TOOL_CHOICE_NONE);
    qs_openai_request_free(&r);

    expect_400(QS_API_CHAT, MSGS "\"tool_choice\":\"required\"}", "tool_choice"); /* needs tools */
    expect_400(QS_API_CHAT, MSGS "\"tool_choice\":\"auto\"}", "tool_choice");
    expect_400(QS_API_CHAT, MSGS "\"tools\":[" TOOL_F "],\"tool_choice\":\"sometimes\"}", "tool_choice");
    expect_400(QS_API_CHAT, MSGS "\"tools\":[" TOOL_F "],\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"g\"}}}",
               "tool_choice");
    expect_400(QS_API_CHAT, MSGS "\"tools\":[" TOOL_F "],\"tool_choice\":5}", "tool_choice");
    expect_400(QS_API_CHAT, MSGS "\"tools\":[" TOOL_F "],\"parallel_tool_calls\":\"yes\"}", "parallel_tool_calls");
    expect_400(QS_API_CHAT, MSGS "\"tools\":[{\"type\":\"retrieval\"}]}", "tools");
    expect_400(QS_API_CHAT, MSGS "\"tools\":[{\"type\":\"function\",\"function\":{}}]}", "tools");
    expect_400(QS_API_CHAT, MSGS "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":3}}]}",
               "tools");

    /* the schemas enforced choices constrain the output to, as vLLM builds them */
    expect_ok(QS_API_CHAT, MSGS "\"tools\":[" TOOL_F ",{\"type\":\"function\",\"function\":{\"name\":\"g\"}}],"
                           "\"tool_choice\":\"required\",\"parallel_tool_calls\":false}", &r);
    qs_api_error se;
    cJSON *schema = qs_tool_request_schema(&r.tool, &se);
    char *text = cJSON_PrintUnformatted(schema);
    assert_string_equal(text, "{\"type\":\"array\",\"minItems\":1,\"maxItems\":1,\"items\":{\"anyOf\":["
                              "{\"type\":\"object\",\"properties\":{\"name\":{\"enum\":[\"f\"]},\"parameters\":{\"type\":"
                              "\"object\"}},\"required\":[\"name\",\"parameters\"]},{\"type\":\"object\",\"properties\":{"
                              "\"name\":{\"enum\":[\"g\"]},\"parameters\":{\"type\":\"object\",\"properties\":{}}},"
                              "\"required\":[\"name\",\"parameters\"]}]}}");
    free(text);
    cJSON_Delete(schema);
    qs_openai_request_free(&r);
    expect_ok(QS_API_CHAT, MSGS "\"tools\":[" TOOL_F "],\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"f\"}}}",
              &r);
    schema = qs_tool_request_schema(&r.tool, &se);
    text = cJSON_PrintUnformatted(schema);
    assert_string_equal(text, "{\"type\":\"object\"}");
    free(text);
    cJSON_Delete(schema);
    qs_openai_request_free(&r);
    expect_400(QS_API_CHAT, MSGS "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"a\",\"parameters\":{\"$defs\":"
                            "{\"X\":{\"type\":\"string\"}}}}},{\"type\":\"function\",\"function\":{\"name\":\"b\",\"parameters\":"
                            "{\"$defs\":{\"X\":{\"type\":\"integer\"}}}}}],\"tool_choice\":\"required\"}", "tools");
    /* the choice is enforced: it compiles into the request's grammar, and cannot be combined with
     * another structured-output request */
    expect_ok(QS_API_CHAT, MSGS "\"tools\":[" TOOL_F "],\"tool_choice\":\"required\"}", &r);
    assert_non_null(r.grammar);
    const char *call_f = "[{\"name\": \"f\", \"parameters\": {}}]", *call_g = "[{\"name\": \"g\", \"parameters\": {}}]";
    assert_true(qs_grammar_matches(r.grammar, call_f, strlen(call_f)));
    assert_false(qs_grammar_matches(r.grammar, call_g, strlen(call_g)));
    assert_false(qs_grammar_matches(r.grammar, "[]", 2));
    qs_openai_request_free(&r);
    expect_400(QS_API_CHAT, MSGS "\"tools\":[" TOOL_F "],\"tool_choice\":\"required\",\"response_format\":{\"type\":"
                            "\"json_object\"}}", "tool_choice");
    expect_ok(QS_API_CHAT, MSGS "\"tools\":[" TOOL_F "],\"tool_choice\":\"auto\"}", &r);
    assert_null(r.grammar);
    qs_openai_request_free(&r);

    /* what the server was started with */
    qs_tool_server_config off = {0}, on = {true, qs_tool_parser_find("hermes")};
    qs_api_error e;
    expect_ok(QS_API_CHAT, MSGS "\"tools\":[" TOOL_F "]}", &r);
    assert_int_equal(qs_tool_request_check_server(&r.tool, &off, &e), -1);
    assert_string_equal(e.param, "tool_choice");
    assert_int_equal(qs_tool_request_check_server(&r.tool, &on, &e), 0);
    qs_openai_request_free(&r);
    expect_ok(QS_API_CHAT, MSGS "\"tools\":[" TOOL_F "],\"tool_choice\":\"none\"}", &r);
    assert_int_equal(qs_tool_request_check_server(&r.tool, &off, &e), 0);
    qs_openai_request_free(&r);
}

static void test_malformed_json(void **state)
{
    (void)state;
    const char *bad[] = {"", "{", "{\"prompt\":}", "[1,2]", "\"str\"", "{\"prompt\":\"x\"} trailing", "nul"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        qs_openai_request r;
        qs_api_error e;
        assert_int_equal(parse(QS_API_COMPLETIONS, bad[i], &r, &e), -1);
        assert_int_equal(e.status, 400);
        assert_string_equal(e.param, "");
        qs_openai_request_free(&r);
    }
    /* deeply nested JSON is refused, not a stack overflow */
    size_t depth = 100000;
    char *deep = malloc(2 * depth + 16);
    size_t n = 0;
    n += (size_t)sprintf(deep, "{\"prompt\":");
    for (size_t i = 0; i < depth; i++)
        deep[n++] = '[';
    for (size_t i = 0; i < depth; i++)
        deep[n++] = ']';
    deep[n++] = '}';
    deep[n] = '\0';
    qs_openai_request r;
    qs_api_error e;
    assert_int_equal(qs_openai_request_parse(QS_API_COMPLETIONS, deep, n, &r, &e), -1);
    assert_int_equal(e.status, 400);
    free(deep);
    qs_openai_request_free(&r);
}

static void test_error_body(void **state)
{
    (void)state;
    qs_api_error e;
    assert_int_equal(qs_api_errorf(&e, 400, "top_p", "'top_p' must be in (0, 1], got %g.", 2.0), -1);
    char *json = qs_api_error_json(&e);
    cJSON *root = cJSON_Parse(json);
    cJSON *err = cJSON_GetObjectItem(root, "error");
    assert_string_equal(cJSON_GetObjectItem(err, "message")->valuestring, "'top_p' must be in (0, 1], got 2.");
    assert_string_equal(cJSON_GetObjectItem(err, "type")->valuestring, "invalid_request_error");
    assert_string_equal(cJSON_GetObjectItem(err, "param")->valuestring, "top_p");
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(err, "code")));
    cJSON_Delete(root);
    free(json);
    qs_api_errorf(&e, 404, "model", "no such model");
    qs_api_error_code(&e, "model_not_found");
    json = qs_api_error_json(&e);
    root = cJSON_Parse(json);
    err = cJSON_GetObjectItem(root, "error");
    assert_string_equal(cJSON_GetObjectItem(err, "code")->valuestring, "model_not_found");
    assert_string_equal(cJSON_GetObjectItem(err, "type")->valuestring, "not_found_error");
    cJSON_Delete(root);
    free(json);
}

/* vLLM's extra fields (request_fields.c): parsed values, refusals by name, duplicate keys. */
static void test_vllm_fields(void **state)
{
    (void)state;
    qs_openai_request r;
    expect_ok(QS_API_COMPLETIONS,
              "{\"prompt\":\"x\",\"n\":2,\"best_of\":3,\"truncate_prompt_tokens\":4,\"prompt_logprobs\":2,"
              "\"allowed_token_ids\":[5,3],\"bad_words\":[\"a b\"],\"return_tokens_as_token_ids\":true,"
              "\"add_special_tokens\":false,\"request_id\":\"r-1\",\"priority\":0,\"use_beam_search\":false}",
              &r);
    assert_int_equal(r.x.best_of, 3);
    assert_int_equal(r.x.truncate_prompt_tokens, 4);
    assert_int_equal(r.x.prompt_logprobs, 2);
    assert_int_equal(r.x.n_allowed_token_ids, 2);
    assert_int_equal(r.x.n_bad_words, 1);
    assert_string_equal(r.x.bad_words[0], "a b");
    assert_true(r.x.return_tokens_as_token_ids && !r.x.add_special_tokens);
    assert_string_equal(r.x.request_id, "r-1");
    qs_openai_request_free(&r);

    expect_ok(QS_API_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"top_logprobs\":0}", &r);
    assert_int_equal(r.sampling.logprobs, -1); /* vLLM refuses only top_logprobs > 0 without logprobs */
    qs_openai_request_free(&r);

    expect_ok(QS_API_COMPLETIONS, "{\"prompt\":\"x\",\"max_tokens\":0,\"echo\":true}", &r);
    assert_int_equal(r.max_tokens, 0); /* scoring the prompt */
    qs_openai_request_free(&r);

    /* duplicate keys: the last one wins, at every depth */
    expect_ok(QS_API_COMPLETIONS,
              "{\"prompt\":\"x\",\"n\":1,\"stream\":true,\"stream_options\":{\"include_usage\":false,"
              "\"include_usage\":true},\"n\":3}",
              &r);
    assert_int_equal(r.n, 3);
    assert_true(r.include_usage);
    qs_openai_request_free(&r);

    expect_400(QS_API_COMPLETIONS, "{\"prompt\":\"x\",\"suffix\":\"y\"}", "suffix");
    expect_400(QS_API_COMPLETIONS, "{\"prompt\":\"x\",\"use_beam_search\":true}", "use_beam_search");
    expect_400(QS_API_COMPLETIONS, "{\"prompt\":\"x\",\"priority\":2}", "priority");
    expect_400(QS_API_COMPLETIONS, "{\"prompt\":\"x\",\"best_of\":\"a\"}", "best_of");
    expect_400(QS_API_COMPLETIONS, "{\"prompt\":\"x\",\"n\":2,\"best_of\":1}", "best_of");
    expect_400(QS_API_COMPLETIONS, "{\"prompt\":\"x\",\"best_of\":2,\"stream\":true}", "best_of");
    expect_400(QS_API_COMPLETIONS, "{\"prompt\":\"x\",\"truncate_prompt_tokens\":0}", "truncate_prompt_tokens");
    expect_400(QS_API_COMPLETIONS, "{\"prompt\":\"x\",\"prompt_logprobs\":21}", "prompt_logprobs");
    expect_400(QS_API_COMPLETIONS, "{\"prompt\":\"x\",\"allowed_token_ids\":[]}", "allowed_token_ids");
    expect_400(QS_API_COMPLETIONS, "{\"prompt\":\"x\",\"bad_words\":[\"\"]}", "bad_words");
    expect_400(QS_API_COMPLETIONS, "{\"prompt\":\"x\",\"request_id\":\"a b\"}", "request_id");
    expect_400(QS_API_COMPLETIONS, "{\"prompt\":\"x\",\"logits_processors\":[\"m.P\"]}", "logits_processors");
    expect_400(QS_API_COMPLETIONS, "{\"prompt\":\"x\",\"kv_transfer_params\":{}}", "kv_transfer_params");
    expect_400(QS_API_COMPLETIONS, "{\"prompt\":\"x\",\"max_tokens\":0}", "max_tokens");
    expect_400(QS_API_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"continue_final_message\":true}",
               "continue_final_message");
    expect_400(QS_API_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"chat_template\":7}",
               "chat_template");
    expect_400(QS_API_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"documents\":[]}", "documents");
}

/* \u0000 inside strings: prompts, stop strings and message contents keep their whole length;
 * names (model, role) and object keys holding one are refused. */
static void test_nul_in_strings(void **state)
{
    qs_openai_request r;
    expect_ok(QS_API_COMPLETIONS,
              "{\"prompt\": [\"a\\u0000b\", \"\\u0000\"], \"stop\": [\"x\\u0000y\\u00e9\", \"\\\\u0000 is text\"]}", &r);
    assert_int_equal(r.n_prompts, 2);
    assert_int_equal(r.prompts[0].text_len, 3);
    assert_memory_equal(r.prompts[0].text, "a\0b", 3);
    assert_int_equal(r.prompts[1].text_len, 1);
    assert_int_equal(r.prompts[1].text[0], 0);
    assert_int_equal(r.n_stop, 2);
    assert_int_equal(r.stop_lens[0], 5);
    assert_memory_equal(r.stop[0], "x\0y\xc3\xa9", 5);
    assert_int_equal(r.stop_lens[1], strlen("\\u0000 is text"));
    assert_string_equal(r.stop[1], "\\u0000 is text");
    qs_openai_request_free(&r);
    expect_ok(QS_API_COMPLETIONS, "{\"prompt\": \"\\ud83d\\ude00\\u0000\\n\"}", &r); /* a surrogate pair before it */
    assert_int_equal(r.prompts[0].text_len, 6);
    assert_memory_equal(r.prompts[0].text, "\xf0\x9f\x98\x80\0\n", 6);
    qs_openai_request_free(&r);
    expect_ok(QS_API_CHAT, "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\\u0000there\"}]}", &r);
    qs_openai_request_free(&r);
    /* duplicate keys around strings with NULs: the lengths belong to the values that win */
    expect_ok(QS_API_COMPLETIONS, "{\"prompt\": \"a\\u0000b\", \"stop\": \"\\u0000\", \"prompt\": \"xyz\", \"prompt\": \"p\\u0000\"}",
              &r);
    assert_int_equal(r.prompts[0].text_len, 2);
    assert_memory_equal(r.prompts[0].text, "p\0", 2);
    assert_int_equal(r.stop_lens[0], 1);
    qs_openai_request_free(&r);
    expect_400(QS_API_COMPLETIONS, "{\"prompt\": \"x\", \"model\": \"m\\u0000\"}", "model");
    expect_400(QS_API_CHAT, "{\"messages\": [{\"role\": \"us\\u0000er\", \"content\": \"x\"}]}", "messages");
    expect_400(QS_API_COMPLETIONS, "{\"prompt\": \"x\", \"k\\u0000\": 1}", "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prompt_shapes),  cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_sampling_fields), cmocka_unit_test(test_out_of_range),
        cmocka_unit_test(test_chat_fields),    cmocka_unit_test(test_malformed_json),
        cmocka_unit_test(test_error_body),     cmocka_unit_test(test_vllm_fields),
        cmocka_unit_test(test_tool_fields),
        cmocka_unit_test(test_nul_in_strings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
