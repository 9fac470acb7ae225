/* test_model_config.c — config.json for the six architectures (minimal real-shaped configs),
 * llama3 rope scaling, transformers-v5 rope_parameters, MoE fields, error messages naming the
 * file and field, and generation_config.json. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/model_config.h"
#include "model/model_config_load.h"
#include "util/fileio.h"

#define BASE "\"vocab_size\": 128256, \"hidden_size\": 4096, \"intermediate_size\": 14336, " \
             "\"num_hidden_layers\": 32, \"num_attention_heads\": 32, \"num_key_value_heads\": 8, " \
             "\"rms_norm_eps\": 1e-05, \"max_position_embeddings\": 131072, \"hidden_act\": \"silu\""

static qs_model_config parse_ok(const char *json)
{
    qs_model_config c;
    qs_err e = {{0}};
    int rc = qs_model_config_parse(json, "m/config.json", &c, &e);
    if (rc)
        fail_msg("unexpected error: %s", e.msg);
    return c;
}

/* Parses json expecting failure; the message must contain every given fragment. */
static void parse_fails(const char *json, const char *frag1, const char *frag2)
{
    qs_model_config c;
    qs_err e = {{0}};
    assert_int_equal(qs_model_config_parse(json, "m/config.json", &c, &e), -1);
    if (!strstr(e.msg, "m/config.json") || !strstr(e.msg, frag1) || (frag2 && !strstr(e.msg, frag2)))
        fail_msg("message '%s' lacks the file or '%s' / '%s'", e.msg, frag1, frag2 ? frag2 : "");
    assert_null(c.quantization_config_json);
}

static void llama31(void **state)
{
    qs_model_config c = parse_ok(
        "{\"architectures\": [\"LlamaForCausalLM\"], \"model_type\": \"llama\", " BASE ", \"rope_theta\": 500000.0, "
        "\"rope_scaling\": {\"factor\": 8.0, \"low_freq_factor\": 1.0, \"high_freq_factor\": 4.0, "
        "\"original_max_position_embeddings\": 8192, \"rope_type\": \"llama3\"}, \"tie_word_embeddings\": false, "
        "\"bos_token_id\": 128000, \"eos_token_id\": [128001, 128008, 128009], \"torch_dtype\": \"bfloat16\", "
        "\"attention_bias\": false, \"mlp_bias\": false}");
    assert_int_equal(c.arch, QS_ARCH_LLAMA);
    assert_string_equal(c.arch_name, "LlamaForCausalLM");
    assert_string_equal(c.model_type, "llama");
    assert_int_equal(c.vocab_size, 128256);
    assert_int_equal(c.hidden_size, 4096);
    assert_int_equal(c.intermediate_size, 14336);
    assert_int_equal(c.num_layers, 32);
    assert_int_equal(c.num_heads, 32);
    assert_int_equal(c.num_kv_heads, 8);
    assert_int_equal(c.head_dim, 128);
    assert_int_equal(c.max_position_embeddings, 131072);
    assert_float_equal(c.rms_norm_eps, 1e-5f, 1e-12);
    assert_float_equal(c.rope_theta, 500000.0, 0);
    assert_int_equal(c.rope_type, QS_ROPE_LLAMA3);
    assert_float_equal(c.rope_factor, 8.0, 0);
    assert_float_equal(c.rope_low_freq_factor, 1.0, 0);
    assert_float_equal(c.rope_high_freq_factor, 4.0, 0);
    assert_int_equal(c.rope_original_max_position, 8192);
    assert_false(c.tie_word_embeddings);
    assert_false(c.attention_bias);
    assert_false(c.qk_norm);
    assert_int_equal(c.num_experts, 0);
    assert_int_equal(c.bos_token_id, 128000);
    assert_int_equal(c.n_eos, 3);
    assert_int_equal(c.eos_token_ids[2], 128009);
    assert_string_equal(c.torch_dtype, "bfloat16");
    assert_null(c.quantization_config_json);
    assert_false(qs_model_layer_is_moe(&c, 0));
    qs_model_config_free(&c);
}

static void llama_old_type_key_and_defaults(void **state)
{
    /* "type" instead of "rope_type"; no num_key_value_heads / rope_theta / head_dim. */
    qs_model_config c = parse_ok(
        "{\"architectures\": [\"LlamaForCausalLM\"], \"vocab_size\": 32000, \"hidden_size\": 288, "
        "\"intermediate_size\": 768, \"num_hidden_layers\": 6, \"num_attention_heads\": 6, "
        "\"rope_scaling\": {\"type\": \"llama3\", \"factor\": 32.0, \"low_freq_factor\": 1.0, "
        "\"high_freq_factor\": 4.0, \"original_max_position_embeddings\": 8192}, \"tie_word_embeddings\": true, "
        "\"eos_token_id\": 2, \"head_dim\": null}");
    assert_int_equal(c.num_kv_heads, 6);
    assert_int_equal(c.head_dim, 48);
    assert_float_equal(c.rope_theta, 10000.0, 0);
    assert_int_equal(c.max_position_embeddings, 2048);
    assert_float_equal(c.rms_norm_eps, 1e-6f, 1e-12);
    assert_int_equal(c.rope_type, QS_ROPE_LLAMA3);
    assert_float_equal(c.rope_factor, 32.0, 0);
    assert_true(c.tie_word_embeddings);
    assert_int_equal(c.bos_token_id, -1);
    assert_int_equal(c.n_eos, 1);
    assert_int_equal(c.eos_token_ids[0], 2);
    qs_model_config_free(&c);
}

static void mistral(void **state)
{
    qs_model_config c = parse_ok(
        "{\"architectures\": [\"MistralForCausalLM\"], \"model_type\": \"mistral\", \"vocab_size\": 131072, "
        "\"hidden_size\": 5120, \"intermediate_size\": 14336, \"num_hidden_layers\": 40, "
        "\"num_attention_heads\": 32, \"num_key_value_heads\": 8, \"head_dim\": 128, \"rope_theta\": 1000000.0, "
        "\"sliding_window\": 4096, \"rms_norm_eps\": 1e-05, \"bos_token_id\": 1, \"eos_token_id\": 2}");
    assert_int_equal(c.arch, QS_ARCH_MISTRAL);
    assert_int_equal(c.head_dim, 128); /* explicit, though 5120/32 = 160 */
    assert_int_equal(c.sliding_window, 4096);
    assert_false(c.attention_bias);
    assert_int_equal(c.max_position_embeddings, 131072);
    qs_model_config_free(&c);
}

static void qwen2_has_implicit_bias(void **state)
{
    qs_model_config c = parse_ok(
        "{\"architectures\": [\"Qwen2ForCausalLM\"], \"model_type\": \"qwen2\", \"vocab_size\": 151936, "
        "\"hidden_size\": 896, \"intermediate_size\": 4864, \"num_hidden_layers\": 24, \"num_attention_heads\": 14, "
        "\"num_key_value_heads\": 2, \"rope_theta\": 1000000.0, \"rope_scaling\": null, \"sliding_window\": 32768, "
        "\"use_sliding_window\": false, \"max_window_layers\": 21, \"tie_word_embeddings\": true, "
        "\"torch_dtype\": \"bfloat16\", \"eos_token_id\": 151643, \"bos_token_id\": 151643}");
    assert_int_equal(c.arch, QS_ARCH_QWEN2);
    assert_true(c.attention_bias);
    assert_false(c.qk_norm);
    assert_int_equal(c.head_dim, 64);
    assert_int_equal(c.sliding_window, 0);
    assert_true(c.tie_word_embeddings);
    assert_int_equal(c.rope_type, QS_ROPE_DEFAULT);
    qs_model_config_free(&c);
}

static void qwen3_qk_norm_and_quant_config(void **state)
{
    qs_model_config c = parse_ok(
        "{\"architectures\": [\"Qwen3ForCausalLM\"], \"model_type\": \"qwen3\", \"vocab_size\": 151936, "
        "\"hidden_size\": 4096, \"intermediate_size\": 12288, \"num_hidden_layers\": 36, \"num_attention_heads\": 32, "
        "\"num_key_value_heads\": 8, \"head_dim\": 128, \"rope_theta\": 1000000, \"attention_bias\": false, "
        "\"max_position_embeddings\": 40960, \"rms_norm_eps\": 1e-06, \"eos_token_id\": 151645, "
        "\"quantization_config\": {\"quant_method\": \"fp8\", \"weight_block_size\": [128, 128], "
        "\"activation_scheme\": \"dynamic\"}}");
    assert_int_equal(c.arch, QS_ARCH_QWEN3);
    assert_true(c.qk_norm);
    assert_false(c.attention_bias);
    assert_int_equal(c.head_dim, 128);
    assert_non_null(c.quantization_config_json);
    assert_non_null(strstr(c.quantization_config_json, "\"quant_method\":\"fp8\""));
    assert_non_null(strstr(c.quantization_config_json, "\"weight_block_size\":[128,128]"));
    qs_model_config_free(&c);
    assert_null(c.quantization_config_json);
}

static void qwen3_moe(void **state)
{
    qs_model_config c = parse_ok(
        "{\"architectures\": [\"Qwen3MoeForCausalLM\"], \"model_type\": \"qwen3_moe\", \"vocab_size\": 151936, "
        "\"hidden_size\": 2048, \"intermediate_size\": 6144, \"num_hidden_layers\": 48, \"num_attention_heads\": 32, "
        "\"num_key_value_heads\": 4, \"head_dim\": 128, \"num_experts\": 128, \"num_experts_per_tok\": 8, "
        "\"moe_intermediate_size\": 768, \"norm_topk_prob\": true, \"decoder_sparse_step\": 2, "
        "\"mlp_only_layers\": [3, 5], \"rope_parameters\": {\"rope_type\": \"default\", \"rope_theta\": 1000000.0}, "
        "\"dtype\": \"bfloat16\"}");
    assert_int_equal(c.arch, QS_ARCH_QWEN3_MOE);
    assert_true(c.qk_norm);
    assert_int_equal(c.num_experts, 128);
    assert_int_equal(c.num_experts_per_tok, 8);
    assert_int_equal(c.moe_intermediate_size, 768);
    assert_int_equal(c.intermediate_size, 6144);
    assert_true(c.norm_topk_prob);
    assert_int_equal(c.decoder_sparse_step, 2);
    assert_int_equal(c.n_mlp_only_layers, 2);
    assert_float_equal(c.rope_theta, 1e6, 0);
    assert_int_equal(c.rope_type, QS_ROPE_DEFAULT);
    assert_string_equal(c.torch_dtype, "bfloat16");
    assert_false(qs_model_layer_is_moe(&c, 0)); /* (0+1) % 2 != 0 */
    assert_true(qs_model_layer_is_moe(&c, 1));
    assert_false(qs_model_layer_is_moe(&c, 3)); /* mlp_only */
    assert_false(qs_model_layer_is_moe(&c, 5));
    assert_true(qs_model_layer_is_moe(&c, 7));
    assert_false(qs_model_layer_is_moe(&c, 48));
    qs_model_config_free(&c);
}

static void mixtral(void **state)
{
    qs_model_config c = parse_ok(
        "{\"architectures\": [\"MixtralForCausalLM\"], \"model_type\": \"mixtral\", \"vocab_size\": 32000, "
        "\"hidden_size\": 4096, \"intermediate_size\": 14336, \"num_hidden_layers\": 32, \"num_attention_heads\": 32, "
        "\"num_key_value_heads\": 8, \"num_local_experts\": 8, \"num_experts_per_tok\": 2, \"sliding_window\": null, "
        "\"router_aux_loss_coef\": 0.02}");
    assert_int_equal(c.arch, QS_ARCH_MIXTRAL);
    assert_int_equal(c.num_experts, 8);
    assert_int_equal(c.num_experts_per_tok, 2);
    assert_int_equal(c.moe_intermediate_size, 14336);
    assert_true(c.norm_topk_prob);
    assert_int_equal(c.sliding_window, 0);
    assert_float_equal(c.rope_theta, 1e6, 0);
    assert_float_equal(c.rms_norm_eps, 1e-5f, 1e-12);
    for (int i = 0; i < 32; i++)
        assert_true(qs_model_layer_is_moe(&c, i));
    qs_model_config_free(&c);
}

static void rope_parameters_llama3(void **state)
{
    qs_model_config c = parse_ok(
        "{\"architectures\": [\"LlamaForCausalLM\"], " BASE ", \"rope_parameters\": {\"rope_type\": \"llama3\", "
        "\"rope_theta\": 500000.0, \"factor\": 8.0, \"low_freq_factor\": 1.0, \"high_freq_factor\": 4.0, "
        "\"original_max_position_embeddings\": 8192}}");
    assert_float_equal(c.rope_theta, 500000.0, 0);
    assert_int_equal(c.rope_type, QS_ROPE_LLAMA3);
    assert_int_equal(c.rope_original_max_position, 8192);
    qs_model_config_free(&c);
}

static void errors_name_file_and_field(void **state)
{
    parse_fails("{\"architectures\": [\"GPT2LMHeadModel\"], " BASE "}", "GPT2LMHeadModel",
                "LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, Qwen3MoeForCausalLM, MixtralForCausalLM");
    parse_fails("{" BASE "}", "'architectures'", "LlamaForCausalLM");
    parse_fails("{\"architectures\": [\"LlamaForCausalLM\"], \"vocab_size\": 10, \"hidden_size\": 64, "
                "\"num_hidden_layers\": 2, \"num_attention_heads\": 4}", "'intermediate_size'", "missing");
    parse_fails("{\"architectures\": [\"LlamaForCausalLM\"], \"vocab_size\": \"32000\", \"hidden_size\": 64, "
                "\"intermediate_size\": 128, \"num_hidden_layers\": 2, \"num_attention_heads\": 4}",
                "'vocab_size'", "must be an integer, got a string");
    parse_fails("{\"architectures\": [\"LlamaForCausalLM\"], " BASE ", \"hidden_size\": 4096.5}", "'hidden_size'", "integer");
    parse_fails("{\"architectures\": [\"LlamaForCausalLM\"], " BASE ", \"tie_word_embeddings\": 1}",
                "'tie_word_embeddings'", "true or false");
    parse_fails("{\"architectures\": [\"LlamaForCausalLM\"], " BASE ", \"rope_theta\": \"1e4\"}", "'rope_theta'", "number");
    parse_fails("{\"architectures\": [\"LlamaForCausalLM\"], " BASE ", \"rope_scaling\": {\"rope_type\": \"yarn\", "
                "\"factor\": 4.0}}", "'yarn'", "rope_scaling.rope_type");
    parse_fails("{\"architectures\": [\"LlamaForCausalLM\"], " BASE ", \"rope_scaling\": {\"rope_type\": \"llama3\", "
                "\"factor\": 8.0, \"low_freq_factor\": 1.0, \"high_freq_factor\": 4.0}}",
                "'rope_scaling.original_max_position_embeddings'", "missing");
    parse_fails("{\"architectures\": [\"LlamaForCausalLM\"], " BASE ", \"eos_token_id\": [1, \"x\"]}", "'eos_token_id[1]'", NULL);
    parse_fails("{\"architectures\": [\"LlamaForCausalLM\"], " BASE ", \"num_key_value_heads\": 5}", "'num_key_value_heads'", NULL);
    parse_fails("{\"architectures\": [\"LlamaForCausalLM\"], " BASE ", \"hidden_act\": \"gelu\"}", "'hidden_act'", "gelu");
    parse_fails("{\"architectures\": [\"LlamaForCausalLM\"], " BASE ", \"quantization_config\": \"fp8\"}",
                "'quantization_config'", "object");
    parse_fails("{\"architectures\": [\"Qwen3MoeForCausalLM\"], " BASE ", \"num_experts\": 8, \"num_experts_per_tok\": 2}",
                "'moe_intermediate_size'", "missing");
    parse_fails("{\"architectures\": [\"Qwen3MoeForCausalLM\"], " BASE ", \"num_experts\": 8, \"num_experts_per_tok\": 2, "
                "\"moe_intermediate_size\": 64, \"mlp_only_layers\": [40]}", "'mlp_only_layers[0]'", NULL);
    parse_fails("{\"architectures\": [\"MixtralForCausalLM\"], " BASE ", \"num_experts_per_tok\": 2}",
                "'num_local_experts'", "missing");
    parse_fails("{\"architectures\": [\"Qwen2ForCausalLM\"], " BASE ", \"use_sliding_window\": true}",
                "'use_sliding_window'", NULL);
    parse_fails("{\"architectures\": [\"LlamaForCausalLM\"], " BASE ",}", "not valid JSON", NULL);
}

static char *tmpdir(void)
{
    char *d = strdup("/tmp/qs_test_mc_XXXXXX");
    assert_non_null(mkdtemp(d));
    return d;
}

static void put(const char *dir, const char *name, const char *text)
{
    char p[512];
    qs_err e;
    assert_int_equal(qs_write_file(qs_path_join(p, sizeof p, dir, name), text, strlen(text), &e), 0);
}

static void rm(const char *dir, const char *name)
{
    char p[512];
    unlink(qs_path_join(p, sizeof p, dir, name));
}

static void load_from_folder(void **state)
{
    char *d = tmpdir();
    qs_model_config c;
    qs_err e;
    assert_int_equal(qs_model_config_load(d, &c, &e), -1);
    assert_non_null(strstr(e.msg, "config.json"));
    put(d, "config.json", "{\"architectures\": [\"Qwen3ForCausalLM\"], \"hidden_size\": 64}");
    assert_int_equal(qs_model_config_load(d, &c, &e), -1);
    assert_non_null(strstr(e.msg, d));
    assert_non_null(strstr(e.msg, "'vocab_size'"));
    put(d, "config.json", "{\"architectures\": [\"Qwen3ForCausalLM\"], " BASE "}");
    assert_int_equal(qs_model_config_load(d, &c, &e), 0);
    assert_int_equal(c.arch, QS_ARCH_QWEN3);
    qs_model_config_free(&c);
    rm(d, "config.json");
    rmdir(d);
    free(d);
}

static void generation_config(void **state)
{
    char *d = tmpdir();
    qs_generation_config g;
    qs_err e;
    /* absent: defaults, not an error */
    assert_int_equal(qs_generation_config_load(d, &g, &e), 0);
    assert_int_equal(g.n_eos, 0);
    assert_int_equal(g.bos_token_id, -1);
    assert_false(g.has_temperature);
    put(d, "generation_config.json",
        "{\"bos_token_id\": 128000, \"do_sample\": true, \"eos_token_id\": [128001, 128008, 128009], "
        "\"temperature\": 0.6, \"top_p\": 0.9, \"top_k\": 20, \"min_p\": 0.0, \"repetition_penalty\": 1.05, "
        "\"transformers_version\": \"4.45.0\"}");
    assert_int_equal(qs_generation_config_load(d, &g, &e), 0);
    assert_int_equal(g.bos_token_id, 128000);
    assert_int_equal(g.n_eos, 3);
    assert_int_equal(g.eos_token_ids[1], 128008);
    assert_true(g.do_sample);
    assert_true(g.has_temperature && g.has_top_p && g.has_top_k && g.has_min_p && g.has_repetition_penalty);
    assert_float_equal(g.temperature, 0.6, 1e-12);
    assert_float_equal(g.top_p, 0.9, 1e-12);
    assert_int_equal(g.top_k, 20);
    assert_float_equal(g.min_p, 0.0, 0);
    assert_float_equal(g.repetition_penalty, 1.05, 1e-12);
    put(d, "generation_config.json", "{\"eos_token_id\": 2}");
    assert_int_equal(qs_generation_config_load(d, &g, &e), 0);
    assert_int_equal(g.n_eos, 1);
    assert_int_equal(g.eos_token_ids[0], 2);
    assert_false(g.do_sample);
    assert_false(g.has_top_k);
    put(d, "generation_config.json", "{\"temperature\": \"hot\"}");
    assert_int_equal(qs_generation_config_load(d, &g, &e), -1);
    assert_non_null(strstr(e.msg, "generation_config.json"));
    assert_non_null(strstr(e.msg, "'temperature'"));
    put(d, "generation_config.json", "{\"do_sample\": \"yes\"}");
    assert_int_equal(qs_generation_config_load(d, &g, &e), -1);
    assert_non_null(strstr(e.msg, "'do_sample'"));
    rm(d, "generation_config.json");
    rmdir(d);
    free(d);
}

static void names(void **state)
{
    assert_string_equal(qs_arch_name(QS_ARCH_QWEN3_MOE), "Qwen3MoeForCausalLM");
    assert_non_null(strstr(qs_supported_architectures(), "MixtralForCausalLM"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(llama31),
        cmocka_unit_test(llama_old_type_key_and_defaults),
        cmocka_unit_test(mistral),
        cmocka_unit_test(qwen2_has_implicit_bias),
        cmocka_unit_test(qwen3_qk_norm_and_quant_config),
        cmocka_unit_test(qwen3_moe),
        cmocka_unit_test(mixtral),
        cmocka_unit_test(rope_parameters_llama3),
        cmocka_unit_test(errors_name_file_and_field),
        cmocka_unit_test(load_from_folder),
        cmocka_unit_test(generation_config),
        cmocka_unit_test(names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
