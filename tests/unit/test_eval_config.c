/* test_eval_config.c — qserve-eval's config side: the vLLM gsm8k YAML schema (types, defaults,
 * required keys, unknown-key warnings, file:line in errors), shlex-compatible server_args
 * splitting, ${VAR} expansion in model_name, config lists and the model support check. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "eval/config_list.h"
#include "eval/eval_config.h"
#include "eval/model_support.h"
#include "eval/server_proc.h"
#include "eval/shell_split.h"
#include "util/fileio.h"

#define REQUIRED "model_name: \"org/model\"\naccuracy_threshold: 0.5\nnum_questions: 10\nnum_fewshot: 5\n"

static void split_is(const char *s, int n, ...)
{
    qs_eval_strlist l = {0};
    qs_err err;
    if (qs_shell_split(s, &l, &err) != 0)
        fail_msg("split of [%s] failed: %s", s, err.msg);
    if ((int)l.count != n)
        fail_msg("split of [%s]: %zu words, want %d", s, l.count, n);
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++)
        assert_string_equal(l.items[i], va_arg(ap, const char *));
    va_end(ap);
    qs_eval_strlist_free(&l);
}

/* Expectations are what Python's shlex.split returns for the same strings. */
static void shell_split_matches_shlex(void **state)
{
    split_is("a b  c", 3, "a", "b", "c");
    split_is("'a b' \"c d\"", 2, "a b", "c d");
    split_is("a\"b c\"d", 1, "ab cd");
    split_is("\"a\\\"b\"", 1, "a\"b");
    split_is("\"a\\nb\"", 1, "a\\nb");
    split_is("\"a\\\\b\"", 1, "a\\b");
    split_is("a\\ b", 1, "a b");
    split_is("''", 1, "");
    split_is("x=\"\" y", 2, "x=", "y");
    split_is("'{\"k\": 1}'", 1, "{\"k\": 1}");
    split_is("\"it's\"", 1, "it's");
    split_is("'a\\b'", 1, "a\\b");
    split_is("", 0);
    split_is("\t x\n y ", 2, "x", "y");
}

static void shell_split_rejects_bad_quoting(void **state)
{
    qs_eval_strlist l = {0};
    qs_err err;
    assert_int_equal(qs_shell_split("--a \"abc", &l, &err), -1);
    assert_non_null(strstr(err.msg, "no closing quotation"));
    assert_non_null(strstr(err.msg, "column 5"));
    assert_int_equal(qs_shell_split("abc\\", &l, &err), -1);
    assert_non_null(strstr(err.msg, "no escaped character"));
    qs_eval_strlist_free(&l);
}

static void flag_values_and_quoting(void **state)
{
    qs_eval_strlist l = {0};
    qs_err err;
    assert_int_equal(qs_shell_split("--a 1 --served-model-name x --b --served-model-name=y z", &l, &err), 0);
    assert_string_equal(qs_eval_flag_value(&l, "--served-model-name"), "y");
    assert_string_equal(qs_eval_flag_value(&l, "--a"), "1");
    assert_null(qs_eval_flag_value(&l, "--c"));
    assert_null(qs_eval_flag_value(&l, "--served")); /* a prefix is not the flag */
    qs_eval_strlist_free(&l);
    /* Quoting then splitting gives the words back. */
    const char *words[] = {"plain", "two words", "it's", "{\"k\": [1, 2]}", ""};
    char line[512] = "";
    for (size_t i = 0; i < 5; i++) {
        char q[128];
        qs_shell_quote(words[i], q, sizeof q);
        snprintf(line + strlen(line), sizeof line - strlen(line), "%s%s", i ? " " : "", q);
    }
    assert_int_equal(qs_shell_split(line, &l, &err), 0);
    assert_int_equal(l.count, 5);
    for (size_t i = 0; i < 5; i++)
        assert_string_equal(l.items[i], words[i]);
    qs_eval_strlist_free(&l);
}

static void server_binary_lookup(void **state)
{
    char out[1024];
    qs_err err;
    assert_int_equal(qs_eval_find_server_binary("/nonexistent/qserve", out, sizeof out, &err), -1);
    assert_non_null(strstr(err.msg, "/nonexistent/qserve"));
    assert_int_equal(qs_eval_find_server_binary("sh", out, sizeof out, &err), 0); /* a bare name: PATH */
    assert_non_null(strstr(out, "/sh"));
    assert_int_equal(qs_eval_find_server_binary("qs-surely-not-in-path", out, sizeof out, &err), -1);
    assert_non_null(strstr(err.msg, "not in PATH"));
    int port = 0;
    assert_int_equal(qs_eval_free_port(&port, &err), 0);
    assert_true(port > 0 && port < 65536);
}

static void full_config_reads_every_key(void **state)
{
    setenv("QS_TEST_EVAL_MODEL", "/models/x", 1);
    const char *yaml = "model_name: \"${QS_TEST_EVAL_MODEL}\"\n"
                       "accuracy_threshold: 0.88\n"
                       "num_questions: 1319\n"
                       "num_fewshot: 5\n"
                       "server_args: >-\n"
                       "  --enforce-eager\n"
                       "  --max-model-len 8192\n"
                       "  --kernel-config '{\"linear_backend\": \"marlin\", \"moe_backend\": \"marlin\"}'\n"
                       "env:\n"
                       "  QSERVE_LOG_LEVEL: \"debug\"\n"
                       "  OMP_NUM_THREADS: 2\n"
                       "tolerance: 0.05\n"
                       "startup_max_wait_seconds: 60\n"
                       "max_tokens: 128\n"
                       "temperature: 0.5\n"
                       "seed: 7\n"
                       "request_timeout_seconds: 30.5\n"
                       "use_chat_completions: yes\n"
                       "max_concurrency: 8\n"
                       "gen_prefix: \" Let's think\"\n";
    qs_eval_config c;
    qs_err err;
    if (qs_eval_config_parse(yaml, "full.yaml", &c, &err) != 0)
        fail_msg("%s", err.msg);
    assert_string_equal(c.model_name, "/models/x");
    assert_true(c.accuracy_threshold == 0.88);
    assert_int_equal(c.num_questions, 1319);
    assert_int_equal(c.num_fewshot, 5);
    assert_int_equal(c.server_argv.count, 5);
    assert_string_equal(c.server_argv.items[0], "--enforce-eager");
    assert_string_equal(c.server_argv.items[2], "8192");
    assert_string_equal(c.server_argv.items[4], "{\"linear_backend\": \"marlin\", \"moe_backend\": \"marlin\"}");
    assert_int_equal(c.env.count, 2);
    assert_string_equal(c.env.items[0], "QSERVE_LOG_LEVEL=debug");
    assert_string_equal(c.env.items[1], "OMP_NUM_THREADS=2");
    assert_true(c.tolerance == 0.05);
    assert_true(c.startup_max_wait_seconds == 60);
    assert_int_equal(c.max_tokens, 128);
    assert_true(c.temperature == 0.5);
    assert_int_equal(c.seed, 7);
    assert_true(c.request_timeout_seconds == 30.5);
    assert_true(c.use_chat_completions);
    assert_int_equal(c.max_concurrency, 8);
    assert_string_equal(c.gen_prefix, " Let's think");
    assert_string_equal(c.warnings, "");
    qs_eval_config_free(&c);
}

static void defaults_follow_vllm(void **state)
{
    qs_eval_config c;
    qs_err err;
    assert_int_equal(qs_eval_config_parse(REQUIRED "max_concurrency: null\n", "d.yaml", &c, &err), 0);
    assert_true(c.tolerance == 0.08);
    assert_true(c.startup_max_wait_seconds == 1200);
    assert_int_equal(c.max_tokens, 256);
    assert_true(c.temperature == 0.0);
    assert_int_equal(c.seed, 42);
    assert_true(c.request_timeout_seconds == 600);
    assert_false(c.use_chat_completions);
    assert_int_equal(c.max_concurrency, 0);
    assert_string_equal(c.gen_prefix, "");
    assert_string_equal(c.server_args, "");
    assert_int_equal(c.server_argv.count, 0);
    assert_int_equal(c.env.count, 0);
    qs_eval_config_free(&c);
}

static void expect_error(const char *yaml, const char *part1, const char *part2)
{
    qs_eval_config c;
    qs_err err;
    if (qs_eval_config_parse(yaml, "bad.yaml", &c, &err) == 0)
        fail_msg("expected an error containing '%s' for:\n%s", part1, yaml);
    if (!strstr(err.msg, part1) || !strstr(err.msg, part2) || !strstr(err.msg, "bad.yaml"))
        fail_msg("error '%s' lacks '%s' / '%s' / the file name", err.msg, part1, part2);
    qs_eval_config_free(&c);
}

static void bad_configs_name_key_file_and_line(void **state)
{
    expect_error(REQUIRED "max_tokens: 1.5\n", "bad.yaml:5:", "'max_tokens' must be an integer, got '1.5'");
    expect_error("model_name: m\naccuracy_threshold: \"0.5\"\nnum_questions: 1\nnum_fewshot: 1\n", "bad.yaml:2:",
                 "'accuracy_threshold' must be a number, got the quoted string '0.5'");
    expect_error(REQUIRED "use_chat_completions: maybe\n", "bad.yaml:5:", "true or false");
    expect_error(REQUIRED "env: [a, b]\n", "bad.yaml:5:", "'env' must be a mapping");
    expect_error(REQUIRED "env:\n  A: ~\n", "bad.yaml:6:", "value of A must be a string");
    expect_error(REQUIRED "server_args: [--x]\n", "bad.yaml:5:", "'server_args' must be a string, got a list");
    expect_error("model_name: m\naccuracy_threshold: 0.5\nnum_questions: 1\n", "missing required key 'num_fewshot'",
                 "bad.yaml");
    expect_error("model_name: ~\naccuracy_threshold: 0.5\nnum_questions: 1\nnum_fewshot: 1\n", "bad.yaml:1:",
                 "'model_name' must be a string, not null");
    expect_error(REQUIRED "server_args: \"--max-model-len '4096\"\n", "bad.yaml:5: key 'server_args'",
                 "no closing quotation");
    expect_error(REQUIRED "server_args: \"--port 8000\"\n", "server_args", "must not set --port");
    expect_error(REQUIRED "server_args: \"--seed=3\"\n", "server_args", "--seed 0");
    expect_error(REQUIRED "num_questions: -1\n", "bad.yaml:5:", "'num_questions' must be at least 0");
    expect_error(REQUIRED "max_concurrency: 0\n", "bad.yaml:5:", "max_concurrency");
    expect_error("model_name: m\n  bad: [\n", "bad.yaml:", "YAML syntax error");
    expect_error("- a\n- b\n", "bad.yaml:1:", "top level must be a mapping");
    expect_error("", "bad.yaml", "empty");
    expect_error("model_name: \"${QS_TEST_SURELY_UNSET_VAR}\"\naccuracy_threshold: 0.5\nnum_questions: 1\n"
                 "num_fewshot: 1\n",
                 "bad.yaml:1: key 'model_name'", "QS_TEST_SURELY_UNSET_VAR is not set");
}

static void unknown_keys_warn_with_line(void **state)
{
    qs_eval_config c;
    qs_err err;
    assert_int_equal(qs_eval_config_parse(REQUIRED "num_shots: 3\nmin_acceptance_length: 2.5\n", "w.yaml", &c, &err), 0);
    assert_non_null(strstr(c.warnings, "w.yaml:5: unknown key 'num_shots' is ignored"));
    assert_non_null(strstr(c.warnings, "w.yaml:6: key 'min_acceptance_length' is read but not used"));
    assert_true(c.has_min_acceptance_length);
    qs_eval_config_free(&c);
}

static void env_defaults_expand(void **state)
{
    qs_err err;
    unsetenv("QS_TEST_EVAL_UNSET");
    char *s = qs_eval_expand_env("${QS_TEST_EVAL_UNSET:-/tmp/m}/x", &err);
    assert_string_equal(s, "/tmp/m/x");
    free(s);
    setenv("QS_TEST_EVAL_SET", "/data", 1);
    s = qs_eval_expand_env("a${QS_TEST_EVAL_SET:-/tmp}b$HOME", &err);
    assert_string_equal(s, "a/datab$HOME");
    free(s);
    assert_null(qs_eval_expand_env("${QS_TEST_EVAL_SET", &err));
}

static void write_text(const char *path, const char *text)
{
    qs_err err;
    assert_int_equal(qs_write_file(path, text, strlen(text), &err), 0);
}

static void config_list_resolves_relative_paths(void **state)
{
    char dir[] = "/tmp/qs_eval_list_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char list[256];
    snprintf(list, sizeof list, "%s/models.txt", dir);
    write_text(list, "# a comment\n\na.yaml\n  sub/b.yaml  \n/abs/c.yaml\r\n#d.yaml\n");
    qs_eval_strlist l = {0};
    qs_err err;
    assert_int_equal(qs_eval_read_config_list(list, &l, &err), 0);
    assert_int_equal(l.count, 3);
    char want[300];
    snprintf(want, sizeof want, "%s/a.yaml", dir);
    assert_string_equal(l.items[0], want);
    snprintf(want, sizeof want, "%s/sub/b.yaml", dir);
    assert_string_equal(l.items[1], want);
    assert_string_equal(l.items[2], "/abs/c.yaml");
    qs_eval_strlist_free(&l);
    unlink(list);
    rmdir(dir);
    assert_int_equal(qs_eval_read_config_list("/nonexistent/list.txt", &l, &err), -1);
    assert_non_null(strstr(err.msg, "/nonexistent/list.txt"));
}

static void unsupported_models_are_recognised(void **state)
{
    char why[512];
    char dir[] = "/tmp/qs_eval_arch_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char cfg[256];
    snprintf(cfg, sizeof cfg, "%s/config.json", dir);
    write_text(cfg, "{\"architectures\": [\"GPT2LMHeadModel\"]}");
    assert_true(qs_eval_model_dir_unsupported(dir, why, sizeof why));
    assert_non_null(strstr(why, "GPT2LMHeadModel"));
    assert_non_null(strstr(why, "Qwen3MoeForCausalLM"));
    write_text(cfg, "{\"architectures\": [\"Qwen3MoeForCausalLM\"]}");
    assert_false(qs_eval_model_dir_unsupported(dir, why, sizeof why));
    write_text(cfg, "{\"architectures\": [\"Llama4ForConditionalGeneration\"]}");
    assert_false(qs_eval_model_dir_unsupported(dir, why, sizeof why));
    unlink(cfg);
    assert_false(qs_eval_model_dir_unsupported(dir, why, sizeof why)); /* no config.json: the server decides */
    rmdir(dir);
}

/* Every shipped config parses cleanly, every list names existing configs, and the Marlin list holds
 * the six vLLM keeps with their thresholds. */
static void shipped_configs_are_valid(void **state)
{
    glob_t g;
    assert_int_equal(glob("evals/configs/*.yaml", 0, NULL, &g), 0);
    assert_true(g.gl_pathc >= 7);
    setenv("QSERVE_STORIES260K_DIR", "/tmp/unused-stories260K", 1);
    for (size_t i = 0; i < g.gl_pathc; i++) {
        qs_eval_config c;
        qs_err err;
        if (qs_eval_config_load(g.gl_pathv[i], &c, &err) != 0)
            fail_msg("%s", err.msg);
        if (c.warnings[0])
            fail_msg("%s: %s", g.gl_pathv[i], c.warnings);
        qs_eval_config_free(&c);
    }
    globfree(&g);
    assert_int_equal(glob("evals/configs/*.txt", 0, NULL, &g), 0);
    for (size_t i = 0; i < g.gl_pathc; i++) {
        qs_eval_strlist l = {0};
        qs_err err;
        assert_int_equal(qs_eval_read_config_list(g.gl_pathv[i], &l, &err), 0);
        assert_true(l.count > 0);
        for (size_t k = 0; k < l.count; k++)
            if (!qs_file_exists(l.items[k]))
                fail_msg("%s lists missing %s", g.gl_pathv[i], l.items[k]);
        qs_eval_strlist_free(&l);
    }
    globfree(&g);
    static const struct {
        const char *file, *model;
        double threshold;
    } marlin[] = {
        {"Qwen3-30B-A3B-Fp8-AutoFp8-marlin.yaml", "Qwen/Qwen3-Coder-30B-A3B-Instruct-FP8", 0.88},
        {"Qwen3-30B-A3B-Fp8-CT-Block-marlin.yaml", "RedHatAI/Qwen3-30B-A3B-FP8-block", 0.85},
        {"Qwen3-30B-A3B-Fp8-CT-Channel-marlin.yaml", "RedHatAI/Qwen3-30B-A3B-FP8-dynamic", 0.85},
        {"Qwen3-30B-A3B-NvFp4-ModelOpt-marlin.yaml", "nvidia/Qwen3-30B-A3B-NVFP4", 0.88},
        {"Qwen3-30B-A3B-NvFp4-CT-marlin.yaml", "RedHatAI/Qwen3-30B-A3B-NVFP4", 0.88},
        {"Llama-4-Scout-Fp8-ModelOpt-marlin.yaml", "nvidia/Llama-4-Scout-17B-16E-Instruct-FP8", 0.92},
    };
    qs_eval_strlist l = {0};
    qs_err err;
    assert_int_equal(qs_eval_read_config_list("evals/configs/models-marlin.txt", &l, &err), 0);
    assert_int_equal(l.count, 6);
    for (size_t i = 0; i < 6; i++) {
        char path[256];
        snprintf(path, sizeof path, "evals/configs/%s", marlin[i].file);
        assert_string_equal(l.items[i], path);
        qs_eval_config c;
        assert_int_equal(qs_eval_config_load(path, &c, &err), 0);
        assert_string_equal(c.model_name, marlin[i].model);
        assert_true(c.accuracy_threshold == marlin[i].threshold);
        assert_int_equal(c.num_questions, 1319);
        assert_int_equal(c.num_fewshot, 5);
        assert_non_null(strstr(c.server_args, "--linear-backend marlin --moe-backend marlin"));
        qs_eval_config_free(&c);
    }
    qs_eval_strlist_free(&l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(shell_split_matches_shlex),
        cmocka_unit_test(shell_split_rejects_bad_quoting),
        cmocka_unit_test(flag_values_and_quoting),
        cmocka_unit_test(server_binary_lookup),
        cmocka_unit_test(full_config_reads_every_key),
        cmocka_unit_test(defaults_follow_vllm),
        cmocka_unit_test(bad_configs_name_key_file_and_line),
        cmocka_unit_test(unknown_keys_warn_with_line),
        cmocka_unit_test(env_defaults_expand),
        cmocka_unit_test(config_list_resolves_relative_paths),
        cmocka_unit_test(unsupported_models_are_recognised),
        cmocka_unit_test(shipped_configs_are_valid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
