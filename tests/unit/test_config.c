/* test_config.c — struct qs_config from defaults, environment, YAML and CLI (src/config): every
 * serve flag, value normalisation, --kernel-config JSON, precedence, and the errors for unknown
 * flags, keys, names and wrong types. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <glob.h>
#include <unistd.h>

#include "config/config.h"
#include "util/fileio.h"

#define ARGC(a) ((int)(sizeof(a) / sizeof((a)[0])))

static int setup(void **state)
{
    unsetenv("QSERVE_DISABLED_KERNELS");
    unsetenv("QSERVE_BATCH_INVARIANT");
    unsetenv("QSERVE_API_KEY");
    return 0;
}

/* Writes text to a fresh temporary .yaml file; path receives its name. */
static void write_yaml(char path[64], const char *text)
{
    snprintf(path, 64, "/tmp/qs_test_config_XXXXXX.yaml");
    int fd = mkstemps(path, 5);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
}

static void defaults_are_vllm_like(void **state)
{
    qs_config c;
    char *argv[] = {"serve", "models/tiny"};
    qs_err e;
    assert_int_equal(qs_config_parse_args(ARGC(argv), argv, &c, &e), 0);
    assert_string_equal(c.model_dir, "models/tiny");
    assert_string_equal(c.served_model_name, "models/tiny");
    assert_string_equal(c.host, "0.0.0.0");
    assert_int_equal(c.port, 8000);
    assert_int_equal(c.tensor_parallel_size, 1);
    assert_int_equal(c.device, QS_DEVICE_AUTO);
    assert_true(c.gpu_memory_utilization == 0.9);
    assert_int_equal(c.max_num_queued_reqs, 1024);
    assert_int_equal(qs_config_max_num_seqs(&c, true), 256);
    assert_int_equal(qs_config_max_num_seqs(&c, false), 16);
    assert_string_equal(c.kernels.linear_backend, "auto");
    assert_string_equal(c.kernels.moe_backend, "auto");
    assert_false(c.kernels.batch_invariant);
    assert_int_equal(c.kernels.n_disabled, 0);
}

static void every_serve_flag_sets_its_field(void **state)
{
    qs_config c;
    qs_err e;
    char *argv[] = {"serve", "--host", "127.0.0.1", "--port=9001", "--served-model-name", "tiny",
                    "--max-model-len", "4096", "--max-num-seqs", "8", "--max-num-batched-tokens", "2048",
                    "--max-num-queued-reqs", "64", "--kv-cache-memory", "512M", "--gpu-memory-utilization", "0.5",
                    "--api-key", "sk-test", "--seed", "1234567890123", "--device", "CPU", "--quantization", "FP8",
                    "--threads", "3", "--tensor-parallel-size", "1", "--linear-backend", "Marlin",
                    "--moe-backend=EMULATION", "--batch-invariant", "model_dir"};
    assert_int_equal(qs_config_parse_args(ARGC(argv), argv, &c, &e), 0);
    assert_string_equal(c.host, "127.0.0.1");
    assert_int_equal(c.port, 9001);
    assert_string_equal(c.served_model_name, "tiny");
    assert_int_equal(c.max_model_len, 4096);
    assert_int_equal(c.max_num_seqs, 8);
    assert_int_equal(c.max_num_batched_tokens, 2048);
    assert_int_equal(c.max_num_queued_reqs, 64);
    assert_int_equal(c.kv_cache_memory, 512u * 1024 * 1024);
    assert_true(c.gpu_memory_utilization == 0.5);
    assert_string_equal(c.api_key, "sk-test");
    assert_true(c.seed == 1234567890123LL);
    assert_int_equal(c.device, QS_DEVICE_CPU);
    assert_string_equal(c.quantization, "fp8");
    assert_int_equal(c.threads, 3);
    assert_string_equal(c.kernels.linear_backend, "marlin");
    assert_string_equal(c.kernels.moe_backend, "emulation");
    assert_true(c.kernels.batch_invariant);
    assert_string_equal(c.model_dir, "model_dir");
}

static void byte_sizes_parse(void **state)
{
    size_t b;
    assert_int_equal(qs_parse_bytes("4GiB", &b), 0);
    assert_int_equal(b, 4ull << 30);
    assert_int_equal(qs_parse_bytes("512M", &b), 0);
    assert_int_equal(b, 512ull << 20);
    assert_int_equal(qs_parse_bytes("1073741824", &b), 0);
    assert_int_equal(b, 1ull << 30);
    assert_int_equal(qs_parse_bytes("1.5k", &b), 0);
    assert_int_equal(b, 1536);
    assert_int_equal(qs_parse_bytes("2 GB", &b), 0);
    assert_int_equal(b, 2ull << 30);
    assert_int_equal(qs_parse_bytes("4XB", &b), -1);
    assert_int_equal(qs_parse_bytes("-1G", &b), -1);
    assert_int_equal(qs_parse_bytes("", &b), -1);
    assert_int_equal(qs_parse_bytes("0.3", &b), -1);

    qs_config c;
    qs_err e;
    char *argv[] = {"serve", "m", "--kv-cache-memory", "lots"};
    assert_int_equal(qs_config_parse_args(ARGC(argv), argv, &c, &e), -1);
    assert_non_null(strstr(e.msg, "--kv-cache-memory"));
    assert_non_null(strstr(e.msg, "lots"));
}

static void tensor_parallel_flags(void **state)
{
    qs_config c;
    qs_err e;
    char *argv[] = {"serve", "m", "--tensor-parallel-size", "2"};
    assert_int_equal(qs_config_parse_args(ARGC(argv), argv, &c, &e), 0);
    assert_int_equal(c.tensor_parallel_size, 2);
    char *short_form[] = {"serve", "m", "-tp", "4"};
    assert_int_equal(qs_config_parse_args(ARGC(short_form), short_form, &c, &e), 0);
    assert_int_equal(c.tensor_parallel_size, 4);
    assert_string_equal(c.model_dir, "m");
    char *pp[] = {"serve", "m", "--pipeline-parallel-size", "2"};
    assert_int_equal(qs_config_parse_args(ARGC(pp), pp, &c, &e), -1);
    assert_non_null(strstr(e.msg, "--pipeline-parallel-size 2: pipeline parallelism is not implemented"));
    char *ep[] = {"serve", "m", "-tp", "2", "--enable-expert-parallel"};
    assert_int_equal(qs_config_parse_args(ARGC(ep), ep, &c, &e), 0);
    assert_true(c.enable_expert_parallel);
    char *ep1[] = {"serve", "m", "--enable-expert-parallel"};
    assert_int_equal(qs_config_parse_args(ARGC(ep1), ep1, &c, &e), -1);
    assert_non_null(strstr(e.msg, "--enable-expert-parallel needs --tensor-parallel-size > 1"));
    char *bad[] = {"serve", "m", "--tensor-parallel-size", "two"};
    assert_int_equal(qs_config_parse_args(ARGC(bad), bad, &c, &e), -1);
    assert_non_null(strstr(e.msg, "expected an integer"));
}

static void unknown_flags_suggest_close_matches(void **state)
{
    qs_config c;
    qs_err e;
    char *argv[] = {"serve", "m", "--max-model-length", "10"};
    assert_int_equal(qs_config_parse_args(ARGC(argv), argv, &c, &e), -1);
    assert_non_null(strstr(e.msg, "--max-model-length"));
    assert_non_null(strstr(e.msg, "did you mean"));
    assert_non_null(strstr(e.msg, "--max-model-len"));
    char *far[] = {"serve", "m", "--zzqqxx"};
    assert_int_equal(qs_config_parse_args(ARGC(far), far, &c, &e), -1);
    assert_non_null(strstr(e.msg, "valid flags:"));
    assert_non_null(strstr(e.msg, "--linear-backend"));
    char *missing[] = {"serve", "m", "--port"};
    assert_int_equal(qs_config_parse_args(ARGC(missing), missing, &c, &e), -1);
    assert_non_null(strstr(e.msg, "--port needs a value"));
}

static void vllm_flags_are_accepted(void **state)
{
    qs_config c;
    qs_err e;
    char *argv[] = {"serve", "--enforce-eager", "m", "--trust-remote-code", "--disable-uvicorn-access-log",
                    "--disable-log-requests", "--dtype", "auto", "--max-model-len", "8192"};
    assert_int_equal(qs_config_parse_args(ARGC(argv), argv, &c, &e), 0);
    assert_string_equal(c.model_dir, "m");
    assert_int_equal(c.max_model_len, 8192);
    assert_true(c.enforce_eager); /* not ignored: it turns the decode graphs off */
}

static void vllm_flags_with_one_meaning_refuse_other_values(void **state)
{
    qs_config c;
    qs_err e;
    char *ok[] = {"serve", "m", "--dtype", "bfloat16", "--load-format", "safetensors", "--block-size", "16",
                  "--distributed-executor-backend", "mp", "--enable-chunked-prefill", "--trust-remote-code=true"};
    assert_int_equal(qs_config_parse_args(ARGC(ok), ok, &c, &e), 0);
    struct {
        char *flag, *value, *says;
    } refused[] = {{"--dtype", "float16", "accepted: auto|bfloat16|bf16"},
                   {"--load-format", "gguf", "safetensors only"},
                   {"--block-size", "32", "16 tokens only"},
                   {"--distributed-executor-backend", "ray", "accepted: mp|uni"},
                   {"--enable-chunked-prefill=false", NULL, "chunked prefill is always on"},
                   {"--uvicorn-log-level", "loud", "unknown log level 'loud'"}};
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        char *argv[] = {"serve", "m", refused[i].flag, refused[i].value};
        assert_int_equal(qs_config_parse_args(refused[i].value ? 4 : 3, argv, &c, &e), -1);
        if (!strstr(e.msg, refused[i].says))
            fail_msg("%s %s: '%s' lacks '%s'", refused[i].flag, refused[i].value ? refused[i].value : "", e.msg,
                     refused[i].says);
    }
    /* nothing in the table is "ignored" any more */
    size_t n;
    const qs_option *opts = qs_config_options(&n);
    for (size_t i = 0; i < n; i++)
        if (strstr(opts[i].help, "ignored"))
            fail_msg("--%s says it is ignored: %s", opts[i].name, opts[i].help);
}

static void server_flags_of_issue_36(void **state)
{
    qs_config c;
    qs_err e;
    char *def[] = {"serve", "m"};
    assert_int_equal(qs_config_parse_args(ARGC(def), def, &c, &e), 0);
    assert_string_equal(c.generation_config, "auto");
    assert_int_equal(c.max_logprobs, 20);
    assert_string_equal(c.response_role, "assistant");
    assert_string_equal(c.allowed_origins, "[\"*\"]");
    assert_int_equal(c.n_served_model_names, 1);
    assert_string_equal(c.served_model_names[0], "m");
    assert_false(c.enable_log_requests);

    char *argv[] = {"serve", "m", "--served-model-name", "first", "second", "third", "-tp", "1",
                    "--generation-config", "vllm", "--override-generation-config", "{\"temperature\": 0.5}",
                    "--max-logprobs", "5", "--response-role", "bot", "--allowed-origins", "[\"https://a.example\"]",
                    "--allowed-methods", "[\"GET\", \"POST\"]", "--allowed-headers", "[\"x-key\"]",
                    "--allow-credentials", "--root-path", "/api", "--enable-log-requests", "--disable-log-stats",
                    "--chat-template", "{{ messages[0].content }}"};
    assert_int_equal(qs_config_parse_args(ARGC(argv), argv, &c, &e), 0);
    assert_int_equal(c.n_served_model_names, 3);
    assert_string_equal(c.served_model_name, "first");
    assert_string_equal(c.served_model_names[2], "third");
    assert_string_equal(c.generation_config, "vllm");
    assert_string_equal(c.override_generation_config, "{\"temperature\": 0.5}");
    assert_int_equal(c.max_logprobs, 5);
    assert_string_equal(c.response_role, "bot");
    assert_true(c.allow_credentials);
    assert_string_equal(c.root_path, "/api");
    assert_true(c.enable_log_requests);
    assert_true(c.disable_log_stats);
    assert_string_equal(c.chat_template, "{{ messages[0].content }}");
    char *disable[] = {"serve", "m", "--enable-log-requests", "--disable-log-requests"};
    assert_int_equal(qs_config_parse_args(ARGC(disable), disable, &c, &e), 0);
    assert_false(c.enable_log_requests);

    char *tp[] = {"serve", "m", "-tp=2"};
    assert_int_equal(qs_config_parse_args(ARGC(tp), tp, &c, &e), 0);
    assert_int_equal(c.tensor_parallel_size, 2);
    char *names_first[] = {"serve", "--served-model-name", "a", "b"};
    assert_int_equal(qs_config_parse_args(ARGC(names_first), names_first, &c, &e), -1);
    assert_non_null(strstr(e.msg, "put MODEL first"));

    struct {
        char *flag, *value, *says;
    } bad[] = {{"--max-logprobs", "21", "--max-logprobs: must be in [0, 20]"},
               {"--allowed-origins", "*", "--allowed-origins: expected a JSON list of strings"},
               {"--allowed-headers", "[1]", "--allowed-headers: expected a JSON list of strings"},
               {"--override-generation-config", "[1]", "--override-generation-config: expected a JSON object"},
               {"--root-path", "api", "--root-path: 'api' must be a path starting with '/'"},
               {"--response-role", "", "--response-role: must not be empty"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *a[] = {"serve", "m", bad[i].flag, bad[i].value};
        assert_int_equal(qs_config_parse_args(ARGC(a), a, &c, &e), -1);
        if (!strstr(e.msg, bad[i].says))
            fail_msg("%s %s: '%s' lacks '%s'", bad[i].flag, bad[i].value, e.msg, bad[i].says);
    }

    char path[64];
    write_yaml(path, "served-model-name: [y1, y2]\nallowed-origins: [\"https://b.example\"]\n"
                     "generation-config: /some/folder\nmax_logprobs: 7\n");
    char *yaml[] = {"serve", "m", "--config", path};
    assert_int_equal(qs_config_parse_args(ARGC(yaml), yaml, &c, &e), 0);
    unlink(path);
    assert_int_equal(c.n_served_model_names, 2);
    assert_string_equal(c.served_model_names[1], "y2");
    assert_string_equal(c.allowed_origins, "[\"https://b.example\"]");
    assert_string_equal(c.generation_config, "/some/folder");
    assert_int_equal(c.max_logprobs, 7);
}

static void prefix_caching_and_kv_dtype_flags(void **state)
{
    qs_config c;
    qs_err e;
    char *def[] = {"serve", "m"};
    assert_int_equal(qs_config_parse_args(ARGC(def), def, &c, &e), 0);
    assert_true(c.enable_prefix_caching); /* on by default, as in vLLM */
    assert_string_equal(c.kv_cache_dtype, "auto");
    char *off[] = {"serve", "m", "--no-enable-prefix-caching", "--kv-cache-dtype", "FP8-E4M3"};
    assert_int_equal(qs_config_parse_args(ARGC(off), off, &c, &e), 0);
    assert_false(c.enable_prefix_caching);
    assert_string_equal(c.kv_cache_dtype, "fp8_e4m3");
    char *last[] = {"serve", "m", "--no-enable-prefix-caching", "--enable-prefix-caching", "--kv-cache-dtype=fp8"};
    assert_int_equal(qs_config_parse_args(ARGC(last), last, &c, &e), 0);
    assert_true(c.enable_prefix_caching); /* the last one wins */
    assert_string_equal(c.kv_cache_dtype, "fp8");
    char *bad[] = {"serve", "m", "--kv-cache-dtype", "int8"};
    assert_int_equal(qs_config_parse_args(ARGC(bad), bad, &c, &e), -1);
    assert_non_null(strstr(e.msg, "--kv-cache-dtype: unknown KV cache dtype 'int8'; expected auto, bf16, fp8 or fp8_e4m3"));
    char path[64];
    write_yaml(path, "model: m\nno_enable_prefix_caching: true\nkv_cache_dtype: bf16\n");
    char *yaml[] = {"serve", "--config", path};
    assert_int_equal(qs_config_parse_args(ARGC(yaml), yaml, &c, &e), 0);
    unlink(path);
    assert_false(c.enable_prefix_caching);
    assert_string_equal(c.kv_cache_dtype, "bf16");
}

static void value_errors_name_the_flag(void **state)
{
    qs_config c;
    qs_err e;
    char *port[] = {"serve", "m", "--port", "80a"};
    assert_int_equal(qs_config_parse_args(ARGC(port), port, &c, &e), -1);
    assert_non_null(strstr(e.msg, "--port"));
    char *dev[] = {"serve", "m", "--device", "tpu"};
    assert_int_equal(qs_config_parse_args(ARGC(dev), dev, &c, &e), -1);
    assert_non_null(strstr(e.msg, "auto, cpu or cuda"));
    char *gpu[] = {"serve", "m", "--gpu-memory-utilization", "1.5"};
    assert_int_equal(qs_config_parse_args(ARGC(gpu), gpu, &c, &e), -1);
    assert_non_null(strstr(e.msg, "--gpu-memory-utilization"));
    char *q[] = {"serve", "m", "--quantization", "awq"};
    assert_int_equal(qs_config_parse_args(ARGC(q), q, &c, &e), -1);
    assert_non_null(strstr(e.msg, "awq"));
    char *two[] = {"serve", "m", "n"};
    assert_int_equal(qs_config_parse_args(ARGC(two), two, &c, &e), -1);
    assert_non_null(strstr(e.msg, "unexpected argument 'n'"));
    char *none[] = {"serve", "--port", "1"};
    assert_int_equal(qs_config_parse_args(ARGC(none), none, &c, &e), -1);
    assert_non_null(strstr(e.msg, "MODEL"));
    char *help[] = {"serve", "--help"};
    assert_int_equal(qs_config_parse_args(ARGC(help), help, &c, &e), 0);
    assert_true(c.help_requested);
}

static void unknown_backend_names_are_explained(void **state)
{
    qs_config c;
    qs_err e;
    char *vllm[] = {"serve", "m", "--linear-backend", "flashinfer-cutlass"};
    assert_int_equal(qs_config_parse_args(ARGC(vllm), vllm, &c, &e), -1);
    assert_non_null(strstr(e.msg, "'flashinfer_cutlass' is a vLLM"));
    assert_non_null(strstr(e.msg, "qserve does not have"));
    assert_non_null(strstr(e.msg, "auto, cublaslt, marlin, emulation, reference"));
    char *typo[] = {"serve", "m", "--moe-backend", "marln"};
    assert_int_equal(qs_config_parse_args(ARGC(typo), typo, &c, &e), -1);
    assert_non_null(strstr(e.msg, "--moe-backend"));
    assert_non_null(strstr(e.msg, "did you mean marlin"));
    assert_non_null(strstr(e.msg, "auto, cublaslt, marlin, emulation, reference"));
    char *machete[] = {"serve", "m", "--linear-backend", "machete"};
    assert_int_equal(qs_config_parse_args(ARGC(machete), machete, &c, &e), -1);
    assert_non_null(strstr(e.msg, "vLLM"));
}

static void kernel_config_json_fills_every_key(void **state)
{
    qs_config c;
    qs_err e;
    char *argv[] = {"serve", "m", "--kernel-config",
                    "{\"linear_backend\":\"emulation\",\"moe-backend\":\"Marlin\",\"linear_backend_per_quant\":"
                    "{\"fp8_w8a8\":\"marlin\",\"NVFP4-W4A16\":\"emulation\"},\"batch_invariant\":true,"
                    "\"disabled_kernels\":[\"cublaslt\"]}"};
    assert_int_equal(qs_config_parse_args(ARGC(argv), argv, &c, &e), 0);
    assert_string_equal(c.kernels.linear_backend, "emulation");
    assert_string_equal(c.kernels.moe_backend, "marlin");
    assert_string_equal(c.kernels.linear_backend_per_quant[QS_SCHEME_FP8_W8A8], "marlin");
    assert_string_equal(c.kernels.linear_backend_per_quant[QS_SCHEME_NVFP4_W4A16], "emulation");
    assert_string_equal(c.kernels.linear_backend_per_quant[QS_SCHEME_BF16], "");
    assert_true(c.kernels.batch_invariant);
    assert_true(qs_kernel_config_is_disabled(&c.kernels, "cublaslt"));
    assert_string_equal(qs_kernel_config_backend_for(&c.kernels, false, QS_SCHEME_FP8_W8A8), "marlin");
    assert_string_equal(qs_kernel_config_backend_for(&c.kernels, false, QS_SCHEME_BF16), "emulation");
    assert_string_equal(qs_kernel_config_backend_for(&c.kernels, true, QS_SCHEME_FP8_W8A8), "marlin");
}

static void explicit_flags_beat_kernel_config_in_any_order(void **state)
{
    qs_config c;
    qs_err e;
    char *argv[] = {"serve", "m", "--linear-backend", "cublaslt", "--kernel-config",
                    "{\"linear_backend\":\"marlin\",\"moe_backend\":\"emulation\"}"};
    assert_int_equal(qs_config_parse_args(ARGC(argv), argv, &c, &e), 0);
    assert_string_equal(c.kernels.linear_backend, "cublaslt");
    assert_string_equal(c.kernels.moe_backend, "emulation");
}

static void kernel_config_errors_name_the_key(void **state)
{
    qs_kernel_config kc;
    qs_err e;
    qs_kernel_config_defaults(&kc);
    assert_int_equal(qs_kernel_config_apply_json(&kc, "{\"linear_backnd\":\"marlin\"}", &e), -1);
    assert_non_null(strstr(e.msg, "linear_backnd"));
    assert_non_null(strstr(e.msg, "linear_backend_per_quant"));
    assert_int_equal(qs_kernel_config_apply_json(&kc, "{\"linear_backend_per_quant\":{\"int8_w8a8\":\"marlin\"}}", &e),
                     -1);
    assert_non_null(strstr(e.msg, "int8_w8a8"));
    assert_non_null(strstr(e.msg, "nvfp4_w4a16"));
    assert_int_equal(qs_kernel_config_apply_json(&kc, "{\"batch_invariant\":\"yes\"}", &e), -1);
    assert_non_null(strstr(e.msg, "batch_invariant"));
    assert_int_equal(qs_kernel_config_apply_json(&kc, "{\"linear_backend\":", &e), -1);
    assert_non_null(strstr(e.msg, "invalid JSON"));
    assert_int_equal(qs_kernel_config_apply_json(&kc, "[1]", &e), -1);
    assert_non_null(strstr(e.msg, "JSON object"));
    assert_int_equal(qs_kernel_config_apply_json(&kc, "{\"moe_backend\":\"deep_gemm\"}", &e), -1);
    assert_non_null(strstr(e.msg, "vLLM"));
    /* A failing JSON leaves the config as it was. */
    assert_int_equal(qs_kernel_config_apply_json(&kc, "{\"linear_backend\":\"marlin\",\"x\":1}", &e), -1);
    assert_string_equal(kc.linear_backend, "auto");
}

static void environment_sets_kernel_options(void **state)
{
    setenv("QSERVE_DISABLED_KERNELS", "Marlin, emulation,marlin", 1);
    setenv("QSERVE_BATCH_INVARIANT", "1", 1);
    setenv("QSERVE_API_KEY", "from-env", 1);
    qs_config c;
    qs_err e;
    char *argv[] = {"serve", "m"};
    assert_int_equal(qs_config_parse_args(ARGC(argv), argv, &c, &e), 0);
    assert_int_equal(c.kernels.n_disabled, 2);
    assert_true(qs_kernel_config_is_disabled(&c.kernels, "marlin"));
    assert_true(qs_kernel_config_is_disabled(&c.kernels, "emulation"));
    assert_true(c.kernels.batch_invariant);
    assert_string_equal(c.api_key, "from-env");
    char *cli[] = {"serve", "m", "--api-key", "from-cli", "--disabled-kernels", "cublaslt"};
    assert_int_equal(qs_config_parse_args(ARGC(cli), cli, &c, &e), 0);
    assert_string_equal(c.api_key, "from-cli");
    assert_int_equal(c.kernels.n_disabled, 3);

    setenv("QSERVE_DISABLED_KERNELS", "marlinn", 1);
    assert_int_equal(qs_config_parse_args(ARGC(argv), argv, &c, &e), -1);
    assert_non_null(strstr(e.msg, "QSERVE_DISABLED_KERNELS"));
    assert_non_null(strstr(e.msg, "marlinn"));
    setenv("QSERVE_DISABLED_KERNELS", "", 1);
    setenv("QSERVE_BATCH_INVARIANT", "maybe", 1);
    assert_int_equal(qs_config_parse_args(ARGC(argv), argv, &c, &e), -1);
    assert_non_null(strstr(e.msg, "QSERVE_BATCH_INVARIANT"));
    setup(state);
}

static void yaml_is_overridden_by_cli(void **state)
{
    char path[64];
    write_yaml(path, "# serve config\n"
                     "model: models/from-yaml\n"
                     "port: 8123\n"
                     "max_model_len: 2048\n"
                     "max-num-seqs: 4\n"
                     "kv-cache-memory: 1GiB\n"
                     "device: cpu\n"
                     "linear-backend: Marlin\n"
                     "enforce-eager: true\n"
                     "disabled-kernels: [emulation]\n"
                     "kernel_config:\n"
                     "  moe_backend: emulation\n"
                     "  batch_invariant: true\n"
                     "  linear_backend_per_quant:\n"
                     "    fp8_block_w8a8: emulation\n");
    qs_config c;
    qs_err e;
    char *argv[] = {"serve", "--config", path, "--port", "9000"};
    int rc = qs_config_parse_args(ARGC(argv), argv, &c, &e);
    if (rc)
        print_error("%s\n", e.msg);
    assert_int_equal(rc, 0);
    assert_string_equal(c.config_file, path);
    assert_string_equal(c.model_dir, "models/from-yaml");
    assert_int_equal(c.port, 9000);
    assert_int_equal(c.max_model_len, 2048);
    assert_int_equal(c.max_num_seqs, 4);
    assert_int_equal(c.kv_cache_memory, 1u << 30);
    assert_int_equal(c.device, QS_DEVICE_CPU);
    assert_string_equal(c.kernels.linear_backend, "marlin");
    assert_string_equal(c.kernels.moe_backend, "emulation");
    assert_true(c.kernels.batch_invariant);
    assert_string_equal(c.kernels.linear_backend_per_quant[QS_SCHEME_FP8_BLOCK_W8A8], "emulation");
    assert_true(qs_kernel_config_is_disabled(&c.kernels, "emulation"));
    char *over[] = {"serve", "other", "--config=", "--linear-backend", "auto"};
    over[2] = malloc(80);
    snprintf(over[2], 80, "--config=%s", path);
    assert_int_equal(qs_config_parse_args(ARGC(over), over, &c, &e), 0);
    assert_string_equal(c.model_dir, "other");
    assert_string_equal(c.kernels.linear_backend, "auto");
    free(over[2]);
    unlink(path);
}

static void yaml_errors_name_file_line_and_key(void **state)
{
    struct {
        const char *text, *want1, *want2;
    } cases[] = {
        {"port: 8000\nprot: 9000\n", ":2:", "prot"},
        {"port: 8000\nmax_model_len: lots\n", ":2:", "max_model_len"},
        {"port: 1\nhost:\n  a: b\n", ":2:", "host"},
        {"kernel_config:\n  linear_backend: marlin\n  flavour: x\n", ":3:", "flavour"},
        {"kernel_config:\n  linear_backend_per_quant:\n    int4: marlin\n", ":3:", "int4"},
        {"linear_backend: cutlass\n", ":1:", "vLLM"},
        {"port: [1, 2\n", ":", "invalid YAML"},
        {"- port\n- 8000\n", ":1:", "mapping"},
        {"batch-invariant: sometimes\n", ":1:", "batch-invariant"},
        {"config: other.yaml\n", ":1:", "another config file"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[64];
        write_yaml(path, cases[i].text);
        qs_config c;
        qs_err e;
        char *argv[] = {"serve", "m", "--config", path};
        assert_int_equal(qs_config_parse_args(ARGC(argv), argv, &c, &e), -1);
        if (!strstr(e.msg, path) || !strstr(e.msg, cases[i].want1) || !strstr(e.msg, cases[i].want2))
            fail_msg("case %zu: message '%s' lacks the file, '%s' or '%s'", i, e.msg, cases[i].want1, cases[i].want2);
        unlink(path);
    }
    qs_config c;
    qs_err e;
    char *argv[] = {"serve", "m", "--config", "/nonexistent/serve.yaml"};
    assert_int_equal(qs_config_parse_args(ARGC(argv), argv, &c, &e), -1);
    assert_non_null(strstr(e.msg, "/nonexistent/serve.yaml"));
}

static void help_lists_every_option(void **state)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    qs_config_print_help(f);
    fclose(f);
    size_t n;
    const qs_option *opts = qs_config_options(&n);
    assert_true(n >= 20);
    for (size_t i = 0; i < n; i++) {
        char flag[96];
        snprintf(flag, sizeof flag, "--%s", opts[i].name);
        if (!strstr(buf, flag))
            fail_msg("--help lacks %s", flag);
        assert_non_null(opts[i].help);
    }
    free(buf);
}

static void docs_cli_lists_every_option(void **state)
{
    char *doc;
    qs_err e;
    if (qs_read_file("docs/cli.md", &doc, NULL, &e)) {
        print_message("docs/cli.md not readable from %s: %s\n", getcwd((char[512]){0}, 512), e.msg);
        skip();
    }
    size_t n;
    const qs_option *opts = qs_config_options(&n);
    for (size_t i = 0; i < n; i++) {
        char flag[96];
        snprintf(flag, sizeof flag, "--%s", opts[i].name);
        if (!strstr(doc, flag))
            fail_msg("docs/cli.md does not document %s", flag);
    }
    free(doc);
}

static void example_configs_parse(void **state)
{
    glob_t g;
    if (glob("configs/*.yaml", 0, NULL, &g) != 0) {
        print_message("no configs/*.yaml under the working directory\n");
        skip();
    }
    for (size_t i = 0; i < g.gl_pathc; i++) {
        qs_config c;
        qs_err e;
        char *argv[] = {"serve", "m", "--config", g.gl_pathv[i]};
        if (qs_config_parse_args(ARGC(argv), argv, &c, &e))
            fail_msg("%s: %s", g.gl_pathv[i], e.msg);
    }
    assert_true(g.gl_pathc >= 5);
    globfree(&g);
}

static void options_are_found_in_any_spelling(void **state)
{
    assert_non_null(qs_config_find_option("max_num_seqs"));
    assert_non_null(qs_config_find_option("--max-num-seqs"));
    assert_ptr_equal(qs_config_find_option("kernel_config"), qs_config_find_option("kernel-config"));
    assert_null(qs_config_find_option("max-num-seq"));
    char name[] = "FlashInfer-CUTLASS";
    qs_normalize_name(name);
    assert_string_equal(name, "flashinfer_cutlass");
    assert_int_equal(qs_edit_distance("marln", "marlin"), 1);
    assert_int_equal(qs_edit_distance("max-model-len", "max_model_len"), 0);
}

/* An API key has no length cap: the environment, the flag and YAML keep a 100,000-byte key whole. */
static void api_key_of_any_length(void **state)
{
    enum { N = 100000 };
    char *key = malloc(N + 1);
    assert_non_null(key);
    for (int i = 0; i < N; i++)
        key[i] = (char)('a' + i % 26);
    key[N] = 0;
    qs_config c;
    qs_err e;
    setenv("QSERVE_API_KEY", key, 1);
    char *argv[] = {"serve", "m"};
    assert_int_equal(qs_config_parse_args(ARGC(argv), argv, &c, &e), 0);
    assert_int_equal(strlen(c.api_key), N);
    assert_string_equal(c.api_key, key);
    unsetenv("QSERVE_API_KEY");
    key[0] = 'Z';
    char *cli[] = {"serve", "m", "--api-key", key};
    assert_int_equal(qs_config_parse_args(ARGC(cli), cli, &c, &e), 0);
    assert_string_equal(c.api_key, key);
    key[0] = 'Y';
    char *text = malloc(N + 64), path[64];
    assert_non_null(text);
    snprintf(text, N + 64, "model: m\napi_key: %s\n", key);
    write_yaml(path, text);
    char *yaml[] = {"serve", "--config", path};
    assert_int_equal(qs_config_parse_args(ARGC(yaml), yaml, &c, &e), 0);
    assert_string_equal(c.api_key, key);
    qs_config copy = c; /* a plain value: the copy shares the interned key */
    assert_ptr_equal(copy.api_key, c.api_key);
    unlink(path);
    free(text);
    free(key);
    qs_config_defaults(&c);
    assert_string_equal(c.api_key, "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(defaults_are_vllm_like, setup),
        cmocka_unit_test_setup(every_serve_flag_sets_its_field, setup),
        cmocka_unit_test_setup(byte_sizes_parse, setup),
        cmocka_unit_test_setup(tensor_parallel_flags, setup),
        cmocka_unit_test_setup(unknown_flags_suggest_close_matches, setup),
        cmocka_unit_test_setup(vllm_flags_are_accepted, setup),
        cmocka_unit_test_setup(vllm_flags_with_one_meaning_refuse_other_values, setup),
        cmocka_unit_test_setup(server_flags_of_issue_36, setup),
        cmocka_unit_test_setup(prefix_caching_and_kv_dtype_flags, setup),
        cmocka_unit_test_setup(value_errors_name_the_flag, setup),
        cmocka_unit_test_setup(unknown_backend_names_are_explained, setup),
        cmocka_unit_test_setup(kernel_config_json_fills_every_key, setup),
        cmocka_unit_test_setup(explicit_flags_beat_kernel_config_in_any_order, setup),
        cmocka_unit_test_setup(kernel_config_errors_name_the_key, setup),
        cmocka_unit_test_setup(environment_sets_kernel_options, setup),
        cmocka_unit_test_setup(api_key_of_any_length, setup),
        cmocka_unit_test_setup(yaml_is_overridden_by_cli, setup),
        cmocka_unit_test_setup(yaml_errors_name_file_line_and_key, setup),
        cmocka_unit_test_setup(help_lists_every_option, setup),
        cmocka_unit_test_setup(docs_cli_lists_every_option, setup),
        cmocka_unit_test_setup(example_configs_parse, setup),
        cmocka_unit_test_setup(options_are_found_in_any_spelling, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
