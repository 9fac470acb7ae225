/* test_quant_config.c — quantization config parsing (compressed-tensors, fp8, ModelOpt) and the
 * per-layer scheme detection of qs_linear_desc_build on small checkpoints written to a temporary
 * folder: scale layouts, inverted compressed-tensors global scales, ignore lists, missing or
 * mis-shaped scales, headers-only checkpoints, MoE experts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/safetensors_writer.h"
#include "quant/linear_desc.h"
#include "quant/quant_config.h"
#include "util/fileio.h"

static char dir[64];

static int setup(void **state)
{
    snprintf(dir, sizeof dir, "/tmp/qs_quant_cfg_XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static void rm_files(void)
{
    const char *names[] = {"model.safetensors", "hf_quant_config.json"};
    char p[256];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        unlink(qs_path_join(p, sizeof p, dir, names[i]));
}

static int teardown(void **state)
{
    rm_files();
    rmdir(dir);
    return 0;
}

/* A tiny tensor list for a checkpoint. */
typedef struct {
    const char *name;
    qs_dtype dt;
    int ndim;
    int64_t shape[4];
    float fill;  /* every element (converted to dt) */
} tdef;

static qs_checkpoint *write_ckpt(const tdef *defs, int n, bool headers_only)
{
    qs_st_writer *w = qs_st_writer_new();
    qs_err err;
    for (int i = 0; i < n; i++) {
        int64_t numel = 1;
        for (int d = 0; d < defs[i].ndim; d++)
            numel *= defs[i].shape[d];
        size_t bytes = (size_t)(numel * qs_dtype_bits(defs[i].dt) / 8);
        uint8_t *buf = calloc(bytes ? bytes : 1, 1);
        for (int64_t e = 0; e < numel; e++) {
            float v = defs[i].fill;
            if (defs[i].dt == QS_DT_F32)
                memcpy(buf + e * 4, &v, 4);
            else if (defs[i].dt == QS_DT_BF16) {
                uint16_t h = qs_f32_to_bf16(v);
                memcpy(buf + e * 2, &h, 2);
            } else if (defs[i].dt == QS_DT_F8_E4M3 && v == 1.0f)
                buf[e] = 0x38;
        }
        if (qs_st_writer_add_copy(w, defs[i].name, defs[i].dt, defs[i].ndim, defs[i].shape, buf, bytes, &err))
            fail_msg("add %s: %s", defs[i].name, err.msg);
        free(buf);
    }
    char path[256];
    if (qs_st_writer_write(w, qs_path_join(path, sizeof path, dir, "model.safetensors"), &err))
        fail_msg("write: %s", err.msg);
    qs_st_writer_free(w);
    qs_checkpoint *ck;
    if (qs_checkpoint_open(dir, headers_only, &ck, &err))
        fail_msg("open: %s", err.msg);
    return ck;
}

static const char *CT_FP8_DYNAMIC =
    "{\"quant_method\": \"compressed-tensors\", \"format\": \"float-quantized\", \"quantization_status\": "
    "\"compressed\", \"config_groups\": {\"group_0\": {\"targets\": [\"Linear\"], \"weights\": {\"num_bits\": 8, "
    "\"type\": \"float\", \"symmetric\": true, \"strategy\": \"channel\", \"dynamic\": false}, "
    "\"input_activations\": {\"num_bits\": 8, \"type\": \"float\", \"symmetric\": true, \"strategy\": \"token\", "
    "\"dynamic\": true}}}, \"ignore\": [\"lm_head\", \"re:.*mlp.gate$\"], \"kv_cache_scheme\": null}";

static void ct_fp8_dynamic_per_channel(void **state)
{
    qs_quant_config qc;
    qs_err err;
    assert_int_equal(qs_quant_config_parse(CT_FP8_DYNAMIC, NULL, &qc, &err), 0);
    assert_int_equal(qc.method, QS_QMETHOD_COMPRESSED_TENSORS);
    assert_true(qs_quant_config_is_ignored(&qc, "lm_head"));
    assert_true(qs_quant_config_is_ignored(&qc, "model.layers.3.mlp.gate"));
    assert_false(qs_quant_config_is_ignored(&qc, "model.layers.3.mlp.gate_proj"));
    tdef defs[] = {
        {"model.layers.0.self_attn.q_proj.weight", QS_DT_F8_E4M3, 2, {8, 32}, 1.0f},
        {"model.layers.0.self_attn.q_proj.weight_scale", QS_DT_BF16, 2, {8, 1}, 0.5f},
        {"model.layers.0.self_attn.q_proj.bias", QS_DT_BF16, 1, {8}, 0.25f},
        {"lm_head.weight", QS_DT_BF16, 2, {16, 32}, 0.0f},
        {"model.layers.0.mlp.up_proj.weight", QS_DT_F8_E4M3, 2, {8, 32}, 1.0f},
    };
    qs_checkpoint *ck = write_ckpt(defs, 5, false);
    qs_linear_desc d;
    assert_int_equal(qs_linear_desc_build(ck, &qc, "model.layers.0.self_attn.q_proj", &d, &err), 0);
    assert_int_equal(d.scheme, QS_SCHEME_FP8_W8A8);
    assert_int_equal(d.wscale, QS_WSCALE_CHANNEL);
    assert_int_equal(d.aquant, QS_AQUANT_DYNAMIC_TOKEN);
    assert_int_equal(d.n, 8);
    assert_int_equal(d.k, 32);
    assert_non_null(d.bias);
    assert_true(qs_scale_get(d.weight_scale, 3) == 0.5f);
    assert_int_equal(qs_linear_desc_build(ck, &qc, "lm_head", &d, &err), 0);
    assert_int_equal(d.scheme, QS_SCHEME_BF16);
    /* an FP8 weight without its scale: the error names the tensor */
    assert_int_equal(qs_linear_desc_build(ck, &qc, "model.layers.0.mlp.up_proj", &d, &err), -1);
    assert_non_null(strstr(err.msg, "model.layers.0.mlp.up_proj.weight_scale"));
    assert_int_equal(qs_linear_desc_build(ck, &qc, "model.layers.9.mlp.up_proj", &d, &err), -1);
    assert_non_null(strstr(err.msg, "model.layers.9.mlp.up_proj.weight"));
    qs_checkpoint_close(ck);
    qs_quant_config_free(&qc);
}

static void ct_fp8_static_needs_input_scale(void **state)
{
    const char *cfg = "{\"quant_method\": \"compressed-tensors\", \"format\": \"float-quantized\", \"config_groups\": "
                      "{\"g\": {\"targets\": [\"Linear\"], \"weights\": {\"num_bits\": 8, \"type\": \"float\", "
                      "\"strategy\": \"tensor\"}, \"input_activations\": {\"num_bits\": 8, \"type\": \"float\", "
                      "\"strategy\": \"tensor\", \"dynamic\": false}}}, \"ignore\": [\"lm_head\"]}";
    qs_quant_config qc;
    qs_err err;
    assert_int_equal(qs_quant_config_parse(cfg, NULL, &qc, &err), 0);
    tdef defs[] = {
        {"a.weight", QS_DT_F8_E4M3, 2, {4, 16}, 1.0f},
        {"a.weight_scale", QS_DT_F32, 1, {1}, 0.5f},
        {"a.input_scale", QS_DT_F32, 1, {1}, 0.125f},
        {"b.weight", QS_DT_F8_E4M3, 2, {4, 16}, 1.0f},
        {"b.weight_scale", QS_DT_F32, 2, {4, 1}, 0.5f},
    };
    qs_checkpoint *ck = write_ckpt(defs, 5, false);
    qs_linear_desc d;
    assert_int_equal(qs_linear_desc_build(ck, &qc, "a", &d, &err), 0);
    assert_int_equal(d.scheme, QS_SCHEME_FP8_W8A8);
    assert_int_equal(d.aquant, QS_AQUANT_STATIC_TENSOR);
    assert_true(d.input_scale == 0.125f);
    /* per-tensor config but a [4,1] scale: mis-shaped, named with the expected shape */
    assert_int_equal(qs_linear_desc_build(ck, &qc, "b", &d, &err), -1);
    assert_non_null(strstr(err.msg, "b.weight_scale"));
    assert_non_null(strstr(err.msg, "[] or [1]"));
    qs_checkpoint_close(ck);
    qs_quant_config_free(&qc);
}

static void fp8_block_weight_scale_inv(void **state)
{
    const char *cfg = "{\"quant_method\": \"fp8\", \"activation_scheme\": \"dynamic\", \"fmt\": \"e4m3\", "
                      "\"weight_block_size\": [128, 128]}";
    qs_quant_config qc;
    qs_err err;
    assert_int_equal(qs_quant_config_parse(cfg, NULL, &qc, &err), 0);
    tdef defs[] = {
        {"x.weight", QS_DT_F8_E4M3, 2, {200, 300}, 1.0f},
        {"x.weight_scale_inv", QS_DT_F32, 2, {2, 3}, 2.0f},
        {"y.weight", QS_DT_F8_E4M3, 2, {200, 300}, 1.0f},
        {"y.weight_scale_inv", QS_DT_F32, 2, {2, 2}, 2.0f},
    };
    qs_checkpoint *ck = write_ckpt(defs, 4, false);
    qs_linear_desc d;
    assert_int_equal(qs_linear_desc_build(ck, &qc, "x", &d, &err), 0);
    assert_int_equal(d.scheme, QS_SCHEME_FP8_BLOCK_W8A8);
    assert_int_equal(d.wscale, QS_WSCALE_BLOCK);
    assert_int_equal(d.block_n, 128);
    assert_int_equal(d.aquant, QS_AQUANT_DYNAMIC_GROUP);
    assert_int_equal(d.act_group_size, 128);
    assert_int_equal(qs_linear_desc_build(ck, &qc, "y", &d, &err), -1);
    assert_non_null(strstr(err.msg, "y.weight_scale_inv"));
    assert_non_null(strstr(err.msg, "[2, 3]"));
    qs_checkpoint_close(ck);
    qs_quant_config_free(&qc);
}

static const char *CT_NVFP4 =
    "{\"quant_method\": \"compressed-tensors\", \"format\": \"nvfp4-pack-quantized\", \"config_groups\": {\"group_0\": "
    "{\"targets\": [\"Linear\"], \"weights\": {\"num_bits\": 4, \"type\": \"float\", \"strategy\": \"tensor_group\", "
    "\"group_size\": 16, \"symmetric\": true, \"dynamic\": false, \"scale_dtype\": \"torch.float8_e4m3fn\"}, "
    "\"input_activations\": {\"num_bits\": 4, \"type\": \"float\", \"strategy\": \"tensor_group\", \"group_size\": 16, "
    "\"symmetric\": true, \"dynamic\": \"local\"}}}, \"ignore\": [\"lm_head\"]}";

static void ct_nvfp4_inverts_global_scales(void **state)
{
    qs_quant_config qc;
    qs_err err;
    assert_int_equal(qs_quant_config_parse(CT_NVFP4, NULL, &qc, &err), 0);
    tdef defs[] = {
        {"model.layers.0.mlp.experts.1.w1.weight_packed", QS_DT_U8, 2, {8, 16}, 0},
        {"model.layers.0.mlp.experts.1.w1.weight_scale", QS_DT_F8_E4M3, 2, {8, 2}, 1.0f},
        {"model.layers.0.mlp.experts.1.w1.weight_global_scale", QS_DT_F32, 1, {1}, 4.0f},
        {"model.layers.0.mlp.experts.1.w1.input_global_scale", QS_DT_F32, 1, {1}, 2.0f},
        {"model.layers.0.mlp.experts.1.w3.weight_packed", QS_DT_U8, 2, {8, 16}, 0},
        {"model.layers.0.mlp.experts.1.w3.weight_scale", QS_DT_F8_E4M3, 2, {8, 2}, 1.0f},
        {"model.layers.0.mlp.experts.1.w3.weight_global_scale", QS_DT_F32, 1, {1}, 4.0f},
    };
    qs_checkpoint *ck = write_ckpt(defs, 7, false);
    qs_linear_desc d;
    assert_int_equal(qs_linear_desc_build(ck, &qc, "model.layers.0.mlp.experts.1.w1", &d, &err), 0);
    assert_int_equal(d.scheme, QS_SCHEME_NVFP4_W4A4);
    assert_int_equal(d.k, 32);
    assert_true(d.weight_global_scale == 0.25f);
    assert_true(d.input_scale == 0.5f);
    /* the config quantizes activations but the input global scale is missing */
    assert_int_equal(qs_linear_desc_build(ck, &qc, "model.layers.0.mlp.experts.1.w3", &d, &err), -1);
    assert_non_null(strstr(err.msg, "model.layers.0.mlp.experts.1.w3.input_global_scale"));
    qs_checkpoint_close(ck);
    /* headers only: shapes and schemes, no values */
    ck = write_ckpt(defs, 4, true);
    assert_int_equal(qs_linear_desc_build(ck, &qc, "model.layers.0.mlp.experts.1.w1", &d, &err), 0);
    assert_int_equal(d.scheme, QS_SCHEME_NVFP4_W4A4);
    assert_true(d.input_scale == 0.0f);
    qs_checkpoint_close(ck);
    qs_quant_config_free(&qc);
}

static void modelopt_nvfp4_from_hf_quant_config(void **state)
{
    char p[256];
    const char *hf = "{\"producer\": {\"name\": \"modelopt\", \"version\": \"0.29\"}, \"quantization\": "
                     "{\"quant_algo\": \"NVFP4\", \"kv_cache_quant_algo\": null, \"group_size\": 16, "
                     "\"exclude_modules\": [\"lm_head\", \"model.layers.*.mlp.gate\"]}}";
    qs_err err;
    assert_int_equal(qs_write_file(qs_path_join(p, sizeof p, dir, "hf_quant_config.json"), hf, strlen(hf), &err), 0);
    qs_quant_config qc;
    assert_int_equal(qs_quant_config_parse(NULL, dir, &qc, &err), 0);
    assert_int_equal(qc.method, QS_QMETHOD_MODELOPT);
    assert_true(qs_quant_config_is_ignored(&qc, "model.layers.12.mlp.gate"));
    assert_false(qs_quant_config_is_ignored(&qc, "model.layers.12.mlp.gate_proj"));
    tdef defs[] = {
        {"q.weight", QS_DT_U8, 2, {4, 16}, 0},
        {"q.weight_scale", QS_DT_F8_E4M3, 2, {4, 2}, 1.0f},
        {"q.weight_scale_2", QS_DT_F32, 0, {0}, 0.125f},
        {"q.input_scale", QS_DT_F32, 0, {0}, 0.5f},
        {"k.weight", QS_DT_U8, 2, {4, 16}, 0},
        {"k.weight_scale", QS_DT_F8_E4M3, 2, {4, 2}, 1.0f},
        {"k.weight_scale_2", QS_DT_F32, 0, {0}, 0.125f},
        {"v.weight", QS_DT_U8, 2, {4, 16}, 0},
        {"v.weight_scale", QS_DT_F8_E4M3, 2, {4, 3}, 1.0f},
        {"v.weight_scale_2", QS_DT_F32, 0, {0}, 0.125f},
    };
    qs_checkpoint *ck = write_ckpt(defs, 10, false);
    qs_linear_desc d;
    assert_int_equal(qs_linear_desc_build(ck, &qc, "q", &d, &err), 0);
    assert_int_equal(d.scheme, QS_SCHEME_NVFP4_W4A4);
    assert_true(d.weight_global_scale == 0.125f);
    assert_true(d.input_scale == 0.5f);
    assert_int_equal(qs_linear_desc_build(ck, &qc, "k", &d, &err), 0);
    assert_int_equal(d.scheme, QS_SCHEME_NVFP4_W4A16); /* no input_scale: weight-only */
    assert_int_equal(qs_linear_desc_build(ck, &qc, "v", &d, &err), -1);
    assert_non_null(strstr(err.msg, "v.weight_scale"));
    assert_non_null(strstr(err.msg, "[4, 2]"));
    qs_checkpoint_close(ck);
    qs_quant_config_free(&qc);
    rm_files();
}

static void modelopt_fp8_in_config_json(void **state)
{
    const char *cfg = "{\"quant_method\": \"modelopt\", \"quant_algo\": \"FP8\", \"ignore\": [\"lm_head\"]}";
    qs_quant_config qc;
    qs_err err;
    assert_int_equal(qs_quant_config_parse(cfg, dir, &qc, &err), 0);
    tdef defs[] = {
        {"o.weight", QS_DT_F8_E4M3, 2, {4, 16}, 1.0f},
        {"o.weight_scale", QS_DT_F32, 0, {0}, 0.5f},
        {"o.input_scale", QS_DT_F32, 0, {0}, 0.25f},
    };
    qs_checkpoint *ck = write_ckpt(defs, 3, false);
    qs_linear_desc d;
    assert_int_equal(qs_linear_desc_build(ck, &qc, "o", &d, &err), 0);
    assert_int_equal(d.scheme, QS_SCHEME_FP8_W8A8);
    assert_int_equal(d.wscale, QS_WSCALE_TENSOR);
    assert_int_equal(d.aquant, QS_AQUANT_STATIC_TENSOR);
    assert_true(d.input_scale == 0.25f);
    qs_checkpoint_close(ck);
    qs_quant_config_free(&qc);
}

static void unsupported_configs_are_named(void **state)
{
    qs_quant_config qc;
    qs_err err;
    assert_int_equal(qs_quant_config_parse("{\"quant_method\": \"awq\", \"bits\": 4}", NULL, &qc, &err), -1);
    assert_non_null(strstr(err.msg, "\"awq\""));
    assert_non_null(strstr(err.msg, "compressed-tensors, fp8, modelopt"));
    assert_int_equal(qs_quant_config_parse("{\"quant_method\": \"compressed-tensors\", \"format\": \"pack-quantized\", "
                                           "\"config_groups\": {}}", NULL, &qc, &err), -1);
    assert_non_null(strstr(err.msg, "pack-quantized"));
    assert_non_null(strstr(err.msg, "float-quantized"));
    assert_int_equal(qs_quant_config_parse("{\"quant_method\": \"compressed-tensors\", \"format\": \"int-quantized\", "
                                           "\"config_groups\": {\"g\": {\"targets\": [\"Linear\"], \"weights\": "
                                           "{\"num_bits\": 8, \"type\": \"int\"}}}}", NULL, &qc, &err), -1);
    assert_non_null(strstr(err.msg, "int-quantized"));
    assert_int_equal(qs_quant_config_parse("{\"quant_method\": \"compressed-tensors\", \"config_groups\": {\"g\": "
                                           "{\"targets\": [\"Linear\"], \"weights\": {\"num_bits\": 4, \"type\": "
                                           "\"float\", \"strategy\": \"group\", \"group_size\": 32}}}}", NULL, &qc,
                                           &err), -1);
    assert_non_null(strstr(err.msg, "config_groups.g.weights"));
    assert_int_equal(qs_quant_config_parse("{\"quant_method\": \"modelopt\", \"quant_algo\": \"INT4_AWQ\"}", NULL, &qc,
                                           &err), -1);
    assert_non_null(strstr(err.msg, "INT4_AWQ"));
    assert_non_null(strstr(err.msg, "W4A16_NVFP4"));
    assert_int_equal(qs_quant_config_parse("{\"quant_method\": \"compressed-tensors\", \"config_groups\": {\"g\": "
                                           "{\"targets\": [\"re:(unclosed\"], \"weights\": {\"num_bits\": 8, "
                                           "\"type\": \"float\", \"strategy\": \"channel\"}}}}", NULL, &qc, &err), -1);
    assert_non_null(strstr(err.msg, "(unclosed"));
    assert_int_equal(qs_quant_config_parse("{\"quant_method\": \"fp8\", \"fmt\": \"e5m2\"}", NULL, &qc, &err), -1);
    assert_non_null(strstr(err.msg, "e5m2"));
    assert_int_equal(qs_quant_config_parse("not json", NULL, &qc, &err), -1);
    /* no config at all: unquantized */
    assert_int_equal(qs_quant_config_parse(NULL, NULL, &qc, &err), 0);
    assert_int_equal(qc.method, QS_QMETHOD_NONE);
    qs_quant_config_free(&qc);
}

static void mixtral_experts_become_a_moe_desc(void **state)
{
    qs_quant_config qc;
    qs_err err;
    assert_int_equal(qs_quant_config_parse(CT_FP8_DYNAMIC, NULL, &qc, &err), 0);
    tdef defs[12];
    char names[12][96];
    const char *proj[3] = {"w1", "w3", "w2"};
    int nd = 0;
    for (int e = 0; e < 2; e++)
        for (int p = 0; p < 3; p++) {
            int64_t n = p == 2 ? 16 : 24, k = p == 2 ? 24 : 16;
            snprintf(names[nd], sizeof names[nd], "model.layers.1.block_sparse_moe.experts.%d.%s.weight", e, proj[p]);
            defs[nd] = (tdef){names[nd], QS_DT_F8_E4M3, 2, {n, k}, 1.0f};
            nd++;
            snprintf(names[nd], sizeof names[nd], "model.layers.1.block_sparse_moe.experts.%d.%s.weight_scale", e,
                     proj[p]);
            defs[nd] = (tdef){names[nd], QS_DT_F32, 2, {n, 1}, 0.5f};
            nd++;
        }
    qs_checkpoint *ck = write_ckpt(defs, nd, false);
    qs_moe_desc md;
    assert_int_equal(qs_moe_desc_build(ck, &qc, "model.layers.1.block_sparse_moe.experts", "w1", "w3", "w2", 2, 2,
                                       &md, &err), 0);
    assert_int_equal(md.scheme, QS_SCHEME_FP8_W8A8);
    assert_int_equal(md.hidden, 16);
    assert_int_equal(md.inter, 24);
    assert_string_equal(md.down[1].name, "model.layers.1.block_sparse_moe.experts.1.w2");
    qs_moe_desc_free(&md);
    assert_int_equal(qs_moe_desc_build(ck, &qc, "model.layers.1.block_sparse_moe.experts", "w1", "w3", "w2", 3, 2,
                                       &md, &err), -1);
    assert_non_null(strstr(err.msg, "experts.2.w1"));
    qs_checkpoint_close(ck);
    qs_quant_config_free(&qc);
}

static void mixed_precision_configs_pick_per_module(void **state)
{
    const char *ct = "{\"quant_method\": \"compressed-tensors\", \"format\": \"mixed-precision\", \"config_groups\": {"
                     "\"attn\": {\"targets\": [\"re:.*self_attn\\\\..*_proj$\"], \"format\": \"float-quantized\", \"weights\": "
                     "{\"num_bits\": 8, \"type\": \"float\", \"strategy\": \"channel\"}, \"input_activations\": {\"num_bits\": 8, "
                     "\"type\": \"float\", \"strategy\": \"token\", \"dynamic\": true}}, \"experts\": {\"targets\": "
                     "[\"re:.*mlp\\\\.experts\\\\..*\"], \"format\": \"nvfp4-pack-quantized\", \"weights\": {\"num_bits\": 4, \"type\": "
                     "\"float\", \"strategy\": \"tensor_group\", \"group_size\": 16}}}, \"ignore\": [\"lm_head\"]}";
    qs_quant_config qc;
    qs_err err;
    if (qs_quant_config_parse(ct, NULL, &qc, &err))
        fail_msg("%s", err.msg);
    qs_layer_quant lq;
    qs_quant_config_layer(&qc, "model.layers.2.self_attn.o_proj", &lq);
    assert_int_equal(lq.format, QS_LQ_FP8);
    assert_int_equal(lq.weights.strategy, QS_QSTRAT_CHANNEL);
    assert_string_equal(lq.source, "config_groups.attn");
    qs_quant_config_layer(&qc, "model.layers.2.mlp.experts.17.down_proj", &lq);
    assert_int_equal(lq.format, QS_LQ_NVFP4);
    assert_false(lq.input.present);
    qs_quant_config_layer(&qc, "model.layers.2.mlp.gate", &lq);
    assert_int_equal(lq.format, QS_LQ_NONE);
    qs_quant_config_free(&qc);

    const char *mo = "{\"quant_method\": \"modelopt\", \"quant_algo\": \"MIXED_PRECISION\", \"quantized_layers\": "
                     "{\"model.layers.0.self_attn.q_proj\": {\"quant_algo\": \"FP8\"}, \"model.layers.0.mlp.experts.0.up_proj\": "
                     "{\"quant_algo\": \"NVFP4\", \"group_size\": 16}}, \"exclude_modules\": [\"lm_head\"]}";
    if (qs_quant_config_parse(mo, NULL, &qc, &err))
        fail_msg("%s", err.msg);
    qs_quant_config_layer(&qc, "model.layers.0.self_attn.q_proj", &lq);
    assert_int_equal(lq.format, QS_LQ_FP8);
    assert_true(lq.input.present && !lq.input.dynamic);
    qs_quant_config_layer(&qc, "model.layers.0.mlp.experts.0.up_proj", &lq);
    assert_int_equal(lq.format, QS_LQ_NVFP4);
    qs_quant_config_layer(&qc, "model.layers.0.self_attn.k_proj", &lq);
    assert_int_equal(lq.format, QS_LQ_NONE);
    qs_quant_config_free(&qc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ct_fp8_dynamic_per_channel),
        cmocka_unit_test(ct_fp8_static_needs_input_scale),
        cmocka_unit_test(fp8_block_weight_scale_inv),
        cmocka_unit_test(ct_nvfp4_inverts_global_scales),
        cmocka_unit_test(modelopt_nvfp4_from_hf_quant_config),
        cmocka_unit_test(modelopt_fp8_in_config_json),
        cmocka_unit_test(unsupported_configs_are_named),
        cmocka_unit_test(mixtral_experts_become_a_moe_desc),
        cmocka_unit_test(mixed_precision_configs_pick_per_module),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
