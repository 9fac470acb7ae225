/* test_chat_template.c — the chat-template interpreter: every committed golden case
 * (tests/data/chat/NAME.json, rendered by Python jinja2 in HF's environment, incl. random.json's
 * random templates) must come out byte for byte; errors (unknown filter/tag/test, unclosed tags, raise_exception, undefined attributes,
 * bad messages) must name their culprit; tokenizer_config.json loading. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tokenizer/chat_template.h"
#include "util/error.h"
#include "util/fileio.h"

/* ---- goldens ---- */

static int report_mismatch(const char *file, const char *name, const char *got, const char *want)
{
    size_t i = 0;
    while (got[i] && got[i] == want[i])
        i++;
    size_t from = i > 40 ? i - 40 : 0;
    fprintf(stderr, "%s: case '%s' differs at byte %zu\n  got:  \"%.80s\"\n  want: \"%.80s\"\n", file, name, i,
            got + from, want + from);
    return 1;
}

static void run_golden(const char *template_name)
{
    char path[512];
    snprintf(path, sizeof path, "tests/data/chat/%s.json", template_name);
    char *text;
    qs_err err;
    if (qs_read_file(path, &text, NULL, &err))
        fail_msg("%s", err.msg);
    cJSON *doc = cJSON_Parse(text);
    free(text);
    assert_non_null(doc);
    const cJSON *source = cJSON_GetObjectItem(doc, "source");
    const cJSON *shared = cJSON_GetObjectItem(source, "shared"), *file = cJSON_GetObjectItem(source, "file");
    const cJSON *bos_j = cJSON_GetObjectItem(doc, "bos_token"), *eos_j = cJSON_GetObjectItem(doc, "eos_token");
    const char *bos = cJSON_IsString(bos_j) ? bos_j->valuestring : NULL;
    const char *eos = cJSON_IsString(eos_j) ? eos_j->valuestring : NULL;
    qs_chat_template *t = NULL;
    if (cJSON_IsString(shared)) {
        char cfg[1024], dir[1024];
        snprintf(cfg, sizeof cfg, "%s/%s", qs_shared_data_dir(), shared->valuestring);
        if (!qs_file_exists(cfg)) {
            printf("skip: %s is absent (shared data not installed)\n", cfg);
            cJSON_Delete(doc);
            skip();
        }
        snprintf(dir, sizeof dir, "%s", cfg);
        *strrchr(dir, '/') = '\0';
        if (qs_chat_template_load_from_dir(dir, &t, &err))
            fail_msg("%s", err.msg);
        /* the special tokens read from tokenizer_config.json are the ones the goldens used */
        const char *b = qs_chat_template_bos_token(t), *e = qs_chat_template_eos_token(t);
        assert_true((b == NULL && bos == NULL) || (b && bos && !strcmp(b, bos)));
        assert_true((e == NULL && eos == NULL) || (e && eos && !strcmp(e, eos)));
    } else if (cJSON_IsTrue(cJSON_GetObjectItem(source, "per_case"))) {
        t = NULL; /* every case carries its own "template" */
    } else {
        assert_true(cJSON_IsString(file));
        char *src;
        if (qs_read_file(file->valuestring, &src, NULL, &err))
            fail_msg("%s", err.msg);
        int rc = qs_chat_template_compile(src, file->valuestring, &t, &err);
        free(src);
        if (rc)
            fail_msg("%s", err.msg);
    }
    int failures = 0, n = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(doc, "cases"))
    {
        const char *name = cJSON_GetObjectItem(c, "name")->valuestring;
        const cJSON *want = cJSON_GetObjectItem(c, "expected"), *want_err = cJSON_GetObjectItem(c, "expected_error");
        const cJSON *kind = cJSON_GetObjectItem(c, "error_kind");
        char *out = NULL;
        const cJSON *own = cJSON_GetObjectItem(c, "template");
        const cJSON *messages = cJSON_GetObjectItem(c, "messages");
        const cJSON *agp = cJSON_GetObjectItem(c, "add_generation_prompt");
        if (!messages) /* random.json stores the shared ones once */
            messages = cJSON_GetObjectItem(doc, "messages");
        if (!agp)
            agp = cJSON_GetObjectItem(doc, "add_generation_prompt");
        qs_chat_template *case_t = NULL;
        int rc = cJSON_IsString(own) ? qs_chat_template_compile(own->valuestring, name, &case_t, &err) : 0;
        if (rc == 0)
            rc = qs_chat_template_render(case_t ? case_t : t, messages, cJSON_GetObjectItem(c, "tools"),
                                         cJSON_IsTrue(agp), bos, eos, cJSON_GetObjectItem(c, "kwargs"), &out, &err);
        qs_chat_template_free(case_t);
        n++;
        if (cJSON_IsString(want)) {
            if (rc) {
                fprintf(stderr, "%s: case '%s' failed: %s\n", path, name, err.msg);
                failures++;
            } else if (strcmp(out, want->valuestring)) {
                failures += report_mismatch(path, name, out, want->valuestring);
            }
        } else {
            assert_true(cJSON_IsString(want_err));
            if (rc == 0) {
                fprintf(stderr, "%s: case '%s' rendered but should fail with: %s\n", path, name, want_err->valuestring);
                failures++;
            } else if (cJSON_IsString(kind) && !strcmp(kind->valuestring, "raise_exception") &&
                       !strstr(err.msg, want_err->valuestring)) {
                fprintf(stderr, "%s: case '%s' error '%s' lacks '%s'\n", path, name, err.msg, want_err->valuestring);
                failures++;
            }
        }
        free(out);
    }
    printf("%s: %d cases, %d failed\n", path, n, failures);
    qs_chat_template_free(t);
    cJSON_Delete(doc);
    assert_true(n > 0);
    assert_int_equal(failures, 0);
}

static void golden_qwen3(void **state) { run_golden("qwen3"); }
static void golden_llama3_1(void **state) { run_golden("llama3_1"); }
static void golden_llama3_1_tools(void **state) { run_golden("llama3_1_tools"); }
static void golden_qwen2_5(void **state) { run_golden("qwen2_5"); }
static void golden_mistral(void **state) { run_golden("mistral"); }
static void golden_chatml(void **state) { run_golden("chatml"); }
static void golden_gemma(void **state) { run_golden("gemma"); }
static void golden_deepseek_r1(void **state) { run_golden("deepseek_r1"); }
static void golden_hermes_tools(void **state) { run_golden("hermes_tools"); }
static void golden_features(void **state) { run_golden("features"); }
static void golden_random(void **state) { run_golden("random"); }

/* ---- small renders ---- */

/* Renders src with messages=[{"role":"user","content":"hi"}] and kwargs (JSON text or NULL).
 * Returns the output (caller frees) or NULL with err filled. */
static char *render(const char *src, const char *kwargs, qs_err *err)
{
    qs_chat_template *t;
    if (qs_chat_template_compile(src, "test.jinja", &t, err))
        return NULL;
    cJSON *msgs = cJSON_Parse("[{\"role\": \"user\", \"content\": \"hi\"}]");
    cJSON *kw = kwargs ? cJSON_Parse(kwargs) : NULL;
    char *out = NULL;
    qs_chat_template_render(t, msgs, NULL, true, "<s>", "</s>", kw, &out, err);
    cJSON_Delete(msgs);
    cJSON_Delete(kw);
    qs_chat_template_free(t);
    return out;
}

static void expect_output(const char *src, const char *kwargs, const char *want)
{
    qs_err err;
    char *out = render(src, kwargs, &err);
    if (!out)
        fail_msg("render of %s failed: %s", src, err.msg);
    if (strcmp(out, want))
        fail_msg("render of %s: got \"%s\", want \"%s\"", src, out, want);
    free(out);
}

/* The render must fail and the message must contain every one of the NULL-terminated needles. */
static void expect_error(const char *src, const char *kwargs, ...)
{
    qs_err err;
    char *out = render(src, kwargs, &err);
    if (out)
        fail_msg("render of %s should fail but gave \"%s\"", src, out);
    va_list ap;
    va_start(ap, kwargs);
    for (const char *needle; (needle = va_arg(ap, const char *));)
        if (!strstr(err.msg, needle))
            fail_msg("error \"%s\" lacks \"%s\"", err.msg, needle);
    va_end(ap);
}

static void unknown_constructs_name_themselves_and_their_line(void **state)
{
    expect_error("line one\n{{ messages | frobnicate }}", NULL, "unknown filter 'frobnicate'", "line 2", NULL);
    expect_error("\n\n{% include 'x.jinja' %}", NULL, "unsupported tag 'include'", "line 3", NULL);
    expect_error("{% if messages is shiny %}x{% endif %}", NULL, "unknown test 'shiny'", "line 1", NULL);
    expect_error("a\n{{ 'x'.zap() }}", NULL, "unknown method 'zap'", "line 2", NULL);
    expect_error("{{ messages.append(1) }}", NULL, "append", "not allowed", NULL);
    expect_error("{{ messages[0].content % 3 }}", NULL, "not supported", NULL);
}

static void unclosed_and_malformed_tags_are_errors(void **state)
{
    expect_error("x\n{% for m in messages %}{{ m.role }}", NULL, "unclosed 'for'", "endfor", "line 2", NULL);
    expect_error("{% if true %}a{% else %}b", NULL, "unclosed 'if'", "endif", NULL);
    expect_error("a\nb {{ messages", NULL, "unclosed '{{'", "line 2", NULL);
    expect_error("{# never closed", NULL, "unclosed comment", NULL);
    expect_error("{{ 'abc }}", NULL, "unterminated string", NULL);
    expect_error("{% endif %}", NULL, "unexpected 'endif'", NULL);
    expect_error("{{ 1 + }}", NULL, "line 1", NULL);
    expect_error("{% for x messages %}{% endfor %}", NULL, "expected 'in'", NULL);
}

static void raise_exception_carries_its_message(void **state)
{
    expect_error("{% if messages[0].role == 'user' %}\n{{ raise_exception('Roles must alternate!') }}{% endif %}", NULL,
                 "raise_exception: Roles must alternate!", "line 2", NULL);
}

static void undefined_behaves_like_jinja(void **state)
{
    expect_output("[{{ nothing }}][{{ nothing | default('d') }}][{{ nothing is defined }}][{{ nothing | length }}]", NULL,
                  "[][d][False][0]");
    expect_output("{% if nothing %}yes{% else %}no{% endif %}{% for x in nothing %}x{% endfor %}", NULL, "no");
    expect_output("[{{ messages[0].missing }}][{{ messages[5] }}]", NULL, "[][]");
    expect_error("{{ nothing.attr }}", NULL, "'nothing' is undefined", NULL);
    expect_error("{{ messages[0].missing.deeper }}", NULL, "has no attribute 'missing'", NULL);
    expect_error("{{ nothing + 'x' }}", NULL, "'nothing' is undefined", NULL);
}

static void kwargs_and_special_tokens_reach_the_template(void **state)
{
    expect_output("{{ bos_token }}{{ enable_thinking }}{{ eos_token }}{{ add_generation_prompt }}{{ tools }}",
                  "{\"enable_thinking\": false}", "<s>False</s>TrueNone");
    expect_output("{% if enable_thinking is defined and enable_thinking is false %}off{% endif %}",
                  "{\"enable_thinking\": false}", "off");
}

static void strftime_now_formats_the_current_time(void **state)
{
    /* Llama-3.2's template dates its system prompt with strftime_now("%d %b %Y"). */
    qs_err err;
    char *out = render("{{ strftime_now('%Y') }}|{{ strftime_now('%d %b %Y') | length }}", NULL, &err);
    if (!out)
        fail_msg("%s", err.msg);
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    char want[64];
    snprintf(want, sizeof want, "%d|11", tm.tm_year + 1900);
    assert_string_equal(out, want);
    free(out);
    expect_error("{{ strftime_now(5) }}", NULL, "strftime_now() expects a format string", NULL);
}

static void values_print_like_python(void **state)
{
    expect_output("{{ 1 / 3 }} {{ 2.0 }} {{ 1e16 }} {{ 123456789.0 }} {{ 0.0001 }} {{ 1e-5 }} {{ -0.0 }}", NULL,
                  "0.3333333333333333 2.0 1e+16 123456789.0 0.0001 1e-05 -0.0");
    expect_output("{{ {'a': [1, 'it\\'s', none]} }} {{ (1,) }}", NULL, "{'a': [1, \"it's\", None]} (1,)");
    expect_output("{{ {'k': 'ü\\n\"'} | tojson }}|{{ [1, {'a': []}] | tojson(indent=2) }}", NULL,
                  "{\"k\": \"ü\\n\\\"\"}|[\n  1,\n  {\n    \"a\": []\n  }\n]");
}

static void whitespace_control_matches_hf(void **state)
{
    /* trim_blocks eats the newline after a block tag, lstrip_blocks the indentation before it. */
    expect_output("a\n  {% if true %}\n  b\n  {% endif %}\nc\n", NULL, "a\n  b\nc");
    expect_output("a  {%- if true -%}  b  {%- endif -%}  c", NULL, "abc");
    expect_output("x {{- ' y ' -}} z", NULL, "x y z");
    expect_output("  {%+ if true %}k{% endif %}", NULL, "  k");
}

static void bad_inputs_are_errors(void **state)
{
    qs_chat_template *t;
    qs_err err;
    assert_int_equal(qs_chat_template_compile("{{ messages }}", "t", &t, &err), 0);
    cJSON *obj = cJSON_Parse("{\"role\": \"user\"}");
    char *out = NULL;
    assert_int_equal(qs_chat_template_render(t, obj, NULL, false, NULL, NULL, NULL, &out, &err), -1);
    assert_non_null(strstr(err.msg, "messages must be a JSON array"));
    assert_int_equal(qs_chat_template_render(t, NULL, NULL, false, NULL, NULL, NULL, &out, &err), -1);
    cJSON *arr = cJSON_Parse("[]");
    assert_int_equal(qs_chat_template_render(t, arr, obj, false, NULL, NULL, NULL, &out, &err), -1);
    assert_non_null(strstr(err.msg, "tools"));
    cJSON *kw = cJSON_Parse("{\"messages\": []}");
    assert_int_equal(qs_chat_template_render(t, arr, NULL, false, NULL, NULL, kw, &out, &err), -1);
    assert_non_null(strstr(err.msg, "may not set 'messages'"));
    cJSON_Delete(kw);
    cJSON_Delete(obj);
    cJSON_Delete(arr);
    qs_chat_template_free(t);
    assert_int_equal(qs_chat_template_compile(NULL, "t", &t, &err), -1);
}

static void runaway_templates_stop_with_an_error(void **state)
{
    /* ~100 cheap steps per iteration, so the step budget runs out after ~50000 iterations */
    char busy[4096] = "{% for i in range(100000) %}{% for j in range(100000) %}";
    for (int i = 0; i < 50; i++)
        strcat(busy, "{% if 1 %}{% endif %}");
    strcat(busy, "{% endfor %}{% endfor %}");
    expect_error(busy, NULL, "steps (a runaway loop?)", NULL);
    expect_error("{{ 'x' * 100000 * 100000 }}", NULL, "exceeds", NULL);
    /* nesting deeper than the parser allows is an error, not a stack overflow */
    char deep[4096] = "{{ ";
    for (int i = 0; i < 1000; i++)
        strcat(deep, "(");
    strcat(deep, "1");
    for (int i = 0; i < 1000; i++)
        strcat(deep, ")");
    strcat(deep, " }}");
    expect_error(deep, NULL, "nest deeper", NULL);
    char tags[20000] = "";
    for (int i = 0; i < 1000; i++)
        strcat(tags, "{% if true %}");
    expect_error(tags, NULL, "nest deeper", NULL);
    char nots[8000] = "{{ ";
    for (int i = 0; i < 1000; i++)
        strcat(nots, "not ");
    strcat(nots, "1 }}");
    expect_error(nots, NULL, "nest deeper", NULL);
    char negs[8000] = "{{ ";
    for (int i = 0; i < 1000; i++)
        strcat(negs, "- ");
    strcat(negs, "1 }}");
    expect_error(negs, NULL, "nest deeper", NULL);
}

static void write_config(const char *dir, const char *json)
{
    char path[512];
    qs_err err;
    qs_path_join(path, sizeof path, dir, "tokenizer_config.json");
    assert_int_equal(qs_write_file(path, json, strlen(json), &err), 0);
}

static void load_from_dir_reads_named_templates_and_token_objects(void **state)
{
    char dir[] = "/tmp/qs_chat_template_XXXXXX";
    assert_non_null(mkdtemp(dir));
    qs_chat_template *t;
    qs_err err;
    write_config(dir, "{\"bos_token\": {\"content\": \"<B>\", \"lstrip\": false}, \"eos_token\": \"<E>\","
                      " \"chat_template\": [{\"name\": \"tool_use\", \"template\": \"tools\"},"
                      " {\"name\": \"default\", \"template\": \"{{ bos_token }}{{ messages[0].content }}{{ eos_token }}\"}]}");
    assert_int_equal(qs_chat_template_load_from_dir(dir, &t, &err), 0);
    assert_string_equal(qs_chat_template_bos_token(t), "<B>");
    assert_string_equal(qs_chat_template_eos_token(t), "<E>");
    cJSON *msgs = cJSON_Parse("[{\"role\": \"user\", \"content\": \"hi\"}]");
    char *out;
    assert_int_equal(qs_chat_template_render(t, msgs, NULL, false, qs_chat_template_bos_token(t),
                                             qs_chat_template_eos_token(t), NULL, &out, &err), 0);
    assert_string_equal(out, "<B>hi<E>");
    free(out);
    cJSON_Delete(msgs);
    qs_chat_template_free(t);

    write_config(dir, "{\"chat_template\": [{\"name\": \"tool_use\", \"template\": \"x\"}]}");
    assert_int_equal(qs_chat_template_load_from_dir(dir, &t, &err), -1);
    assert_non_null(strstr(err.msg, "no \"default\""));
    assert_non_null(strstr(err.msg, "tool_use"));

    write_config(dir, "{\"eos_token\": \"<E>\"}");
    assert_int_equal(qs_chat_template_load_from_dir(dir, &t, &err), -1);
    assert_non_null(strstr(err.msg, "no chat template"));

    write_config(dir, "{\"chat_template\": \"{% if x %}\"}");
    assert_int_equal(qs_chat_template_load_from_dir(dir, &t, &err), -1);
    assert_non_null(strstr(err.msg, "tokenizer_config.json chat_template: line 1: unclosed 'if'"));

    write_config(dir, "not json");
    assert_int_equal(qs_chat_template_load_from_dir(dir, &t, &err), -1);
    assert_non_null(strstr(err.msg, "tokenizer_config.json"));

    char path[512];
    qs_path_join(path, sizeof path, dir, "tokenizer_config.json");
    unlink(path);
    assert_int_equal(qs_chat_template_load_from_dir(dir, &t, &err), -1);
    assert_non_null(strstr(err.msg, "tokenizer_config.json"));
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(golden_qwen3),
        cmocka_unit_test(golden_llama3_1),
        cmocka_unit_test(golden_llama3_1_tools),
        cmocka_unit_test(golden_qwen2_5),
        cmocka_unit_test(golden_mistral),
        cmocka_unit_test(golden_chatml),
        cmocka_unit_test(golden_gemma),
        cmocka_unit_test(golden_deepseek_r1),
        cmocka_unit_test(golden_hermes_tools),
        cmocka_unit_test(golden_features),
        cmocka_unit_test(golden_random),
        cmocka_unit_test(unknown_constructs_name_themselves_and_their_line),
        cmocka_unit_test(unclosed_and_malformed_tags_are_errors),
        cmocka_unit_test(raise_exception_carries_its_message),
        cmocka_unit_test(undefined_behaves_like_jinja),
        cmocka_unit_test(kwargs_and_special_tokens_reach_the_template),
        cmocka_unit_test(strftime_now_formats_the_current_time),
        cmocka_unit_test(values_print_like_python),
        cmocka_unit_test(whitespace_control_matches_hf),
        cmocka_unit_test(bad_inputs_are_errors),
        cmocka_unit_test(runaway_templates_stop_with_an_error),
        cmocka_unit_test(load_from_dir_reads_named_templates_and_token_objects),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
