/* test_eval_answer.c — qserve-eval's scoring and prompts: the last-number extractor on tricky
 * outputs (vLLM's get_answer_value semantics), labels, the few-shot prompt bytes, request bodies,
 * scoring and percentiles, and the real GSM8K files when present. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "eval/gsm8k.h"
#include "eval/report.h"
#include "eval/runner.h"
#include "util/fileio.h"

static void extractor_handles_tricky_outputs(void **state)
{
    static const struct {
        const char *text;
        const char *want; /* NULL = invalid */
    } cases[] = {
        {"The answer is 42.", "42"},
        {"It costs $1,000 in total", "1000"},
        {"1,234,567.", "1234567"},
        {"-5", "5"},                       /* no sign handling, as in vLLM */
        {"3.50", "50"},                    /* no decimals: the last digit run */
        {"no digits here", NULL},
        {"", NULL},
        {"12 apples and 7 pears", "7"},
        {"5, 6", "6"},                     /* ", " joins nothing: "5 6" */
        {"5,6", "56"},                     /* commas are removed before matching */
        {"007", NULL},                     /* leading zeros: SyntaxError in literal_eval */
        {"00", "0"},
        {"0", "0"},
        {"First 12, then 18.\n#### 18", "18"},
        {"12abc", "12"},
        {"1e5", "5"},
        {"answer 1\xef\xbc\x92", NULL},    /* "1２": fullwidth digit in the run */
        {"42 then \xd9\xa3", NULL},        /* Arabic-indic ٣ is \d in Python, then invalid */
        {"\xd9\xa3 then 42", "42"},
        {"x\xff 9", "9"},                  /* invalid UTF-8 is not a digit */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        qs_gsm8k_answer a = qs_gsm8k_extract_answer(cases[i].text);
        if (!cases[i].want) {
            if (a.valid)
                fail_msg("'%s' should be invalid, got %s", cases[i].text, a.digits);
        } else {
            if (!a.valid)
                fail_msg("'%s' should give %s, got invalid", cases[i].text, cases[i].want);
            assert_string_equal(a.digits, cases[i].want);
        }
    }
}

static void overlong_numbers_are_valid_but_never_equal(void **state)
{
    char text[200];
    memset(text, '7', 150);
    text[150] = '\0';
    qs_gsm8k_answer a = qs_gsm8k_extract_answer(text), b = qs_gsm8k_extract_answer(text);
    assert_true(a.valid);
    assert_true(a.overlong);
    assert_false(qs_gsm8k_answer_equal(&a, &b));
}

static void label_is_number_after_last_hashes(void **state)
{
    qs_gsm8k_answer l = qs_gsm8k_label("She sold 48/2 = <<48/2=24>>24 clips.\n#### 72");
    assert_true(l.valid);
    assert_string_equal(l.digits, "72");
    l = qs_gsm8k_label("Total 3 and 4\n#### 1,000");
    assert_string_equal(l.digits, "1000");
    qs_gsm8k_answer p = qs_gsm8k_extract_answer("The total is $1,000.");
    assert_true(qs_gsm8k_answer_equal(&p, &l));
    l = qs_gsm8k_label("#### none");
    assert_false(l.valid);
}

static void fewshot_prompt_matches_vllm_format(void **state)
{
    qs_gsm8k_row rows[] = {{"Q one?", "A one.\n#### 1"}, {"Q two?", "A two.\n#### 2"}, {"Q three?", "x\n#### 3"}};
    qs_gsm8k_set train = {rows, 3};
    qs_err err;
    char *block = qs_gsm8k_fewshot_block(&train, 2, "", &err);
    assert_non_null(block);
    assert_string_equal(block, "Question: Q one?\nAnswer: A one.\n#### 1\n\nQuestion: Q two?\nAnswer: A two.\n#### 2\n\n");
    char *p = qs_gsm8k_prompt(block, "Test q?", "");
    assert_string_equal(p, "Question: Q one?\nAnswer: A one.\n#### 1\n\nQuestion: Q two?\nAnswer: A two.\n#### 2\n\n"
                           "Question: Test q?\nAnswer:");
    free(p);
    free(block);
    block = qs_gsm8k_fewshot_block(&train, 1, " Let's think.", &err);
    p = qs_gsm8k_prompt(block, "T?", " Let's think.");
    assert_string_equal(p, "Question: Q one?\nAnswer: Let's think. A one.\n#### 1\n\nQuestion: T?\nAnswer: Let's think.");
    free(p);
    free(block);
    block = qs_gsm8k_fewshot_block(&train, 0, "", &err);
    assert_string_equal(block, "");
    free(block);
    assert_null(qs_gsm8k_fewshot_block(&train, 4, "", &err));
    assert_non_null(strstr(err.msg, "num_fewshot 4"));
}

static void request_bodies_follow_vllm(void **state)
{
    qs_eval_request_params p = {.max_tokens = 256, .send_temperature = true, .temperature = 0, .send_seed = true,
                                .seed = 42};
    char *body = qs_eval_request_body(&p, "Question: x\nAnswer:");
    assert_string_equal(body, "{\"prompt\":\"Question: x\\nAnswer:\",\"max_tokens\":256,"
                              "\"stop\":[\"Question\",\"Assistant:\",\"<|separator|>\"],\"temperature\":0,\"seed\":42}");
    free(body);
    p.chat = true;
    p.send_temperature = false;
    p.model = "m";
    p.seed = 9007199254740993LL; /* above 2^53: must not go through a double */
    body = qs_eval_request_body(&p, "hi");
    assert_string_equal(body, "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":256,"
                              "\"stop\":[\"Question\",\"Assistant:\",\"<|separator|>\"],\"model\":\"m\","
                              "\"seed\":9007199254740993}");
    free(body);
}

static void scoring_counts_correct_and_invalid(void **state)
{
    qs_eval_response r[4] = {
        {.text = "so #### 72", .completion_tokens = 5, .latency_s = 1},
        {.text = "about 71", .completion_tokens = 3, .latency_s = 2},
        {.text = "no idea", .completion_tokens = 2, .latency_s = 3},
        {.text = "", .failed = true, .latency_s = 4},
    };
    qs_gsm8k_answer labels[4] = {qs_gsm8k_label("#### 72"), qs_gsm8k_label("#### 72"), qs_gsm8k_label("#### 1"),
                                 qs_gsm8k_label("#### 2")};
    qs_eval_result res;
    qs_eval_score(r, labels, 4, 2.0, 5, 256, &res);
    assert_int_equal(res.correct, 1);
    assert_true(res.accuracy == 0.25);
    assert_true(res.invalid_rate == 0.5);
    assert_int_equal(res.failed_requests, 1);
    assert_int_equal(res.total_output_tokens, 10);
    assert_true(res.tokens_per_second == 5.0);
    assert_true(res.questions_per_second == 2.0);
    assert_true(res.latency_mean_s == 2.5);
    assert_true(res.latency_p50_s == 2.5);
}

static void percentile_interpolates_like_numpy(void **state)
{
    double v[] = {4, 1, 3, 2};
    assert_true(qs_eval_percentile(v, 4, 50) == 2.5);
    double v2[] = {4, 1, 3, 2};
    double p99 = qs_eval_percentile(v2, 4, 99);
    assert_true(p99 > 3.9699 && p99 < 3.9701);
    double one[] = {7};
    assert_true(qs_eval_percentile(one, 1, 99) == 7);
}

static void real_gsm8k_files_load_and_label(void **state)
{
    char dir[2048], path[4096];
    qs_err err;
    snprintf(dir, sizeof dir, "%s/gsm8k", qs_shared_data_dir());
    snprintf(path, sizeof path, "%s/test.jsonl", dir);
    if (!qs_file_exists(path)) {
        printf("skip: %s is absent\n", path);
        skip();
    }
    qs_gsm8k_set test, train;
    assert_int_equal(qs_gsm8k_load(path, &test, &err), 0);
    snprintf(path, sizeof path, "%s/train.jsonl", dir);
    assert_int_equal(qs_gsm8k_load(path, &train, &err), 0);
    assert_int_equal(test.count, 1319);
    assert_int_equal(train.count, 7473);
    for (size_t i = 0; i < test.count; i++)
        assert_true(qs_gsm8k_label(test.rows[i].answer).valid);
    assert_string_equal(qs_gsm8k_label(test.rows[0].answer).digits, "18");
    assert_int_equal(strncmp(train.rows[0].question, "Natalia sold clips", 18), 0);
    qs_gsm8k_free(&test);
    qs_gsm8k_free(&train);
}

static void data_dir_errors_say_what_was_tried(void **state)
{
    char out[256];
    qs_err err;
    assert_int_equal(qs_gsm8k_find_data_dir("/nonexistent/gsm", out, sizeof out, &err), -1);
    assert_non_null(strstr(err.msg, "/nonexistent/gsm"));
    assert_non_null(strstr(err.msg, "--data-dir"));
    char bad[] = "/tmp/qs_eval_bad_XXXXXX";
    int fd = mkstemp(bad);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "{\"question\": \"q\", \"answer\": \"a\"}\n# comment\nnot json\n", 53), 53);
    close(fd);
    qs_gsm8k_set s;
    assert_int_equal(qs_gsm8k_load(bad, &s, &err), -1);
    assert_non_null(strstr(err.msg, ":3:"));
    unlink(bad);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(extractor_handles_tricky_outputs),
        cmocka_unit_test(overlong_numbers_are_valid_but_never_equal),
        cmocka_unit_test(label_is_number_after_last_hashes),
        cmocka_unit_test(fewshot_prompt_matches_vllm_format),
        cmocka_unit_test(request_bodies_follow_vllm),
        cmocka_unit_test(scoring_counts_correct_and_invalid),
        cmocka_unit_test(percentile_interpolates_like_numpy),
        cmocka_unit_test(real_gsm8k_files_load_and_label),
        cmocka_unit_test(data_dir_errors_say_what_was_tried),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
