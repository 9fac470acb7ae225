/* test_quant_roundtrip.c — `qserve quantize` end to end on tiny random checkpoints (Llama and
 * Qwen3-MoE): every scheme in every format it can be written in is quantized, loaded back through
 * the quantization config and qs_linear_desc_build, decoded by the reference kernel and compared
 * with the original weights element by element against the format's rounding bound:
 *   FP8:   |w - w'| <= 2^-4 |w| (3 mantissa bits, round to nearest) or 2^-10 · scale (subnormals)
 *   NVFP4: |w - w'| <= S · halfgap(|w| / S), S = E4M3 block scale × global scale, halfgap 0.25
 *          below 2, 0.5 below 4, 1 above (E2M1 grid 0 .5 1 1.5 2 3 4 6, saturation at 6).
 * Unquantized layers (lm_head, MoE router) must come back bit-identical and BF16. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/init_model.h"
#include "cpu/reference_linear_impl.h"
#include "io/safetensors.h"
#include "quant/linear_desc.h"
#include "quant/quant_config.h"
#include "quantize/quantize_checkpoint.h"
#include "util/fileio.h"

static char src[64], dst[96];

static void rm_dir(const char *d)
{
    const char *names[] = {"config.json", "tokenizer.json", "tokenizer_config.json", "generation_config.json",
                           "model.safetensors", "hf_quant_config.json"};
    char p[256];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        unlink(qs_path_join(p, sizeof p, d, names[i]));
    rmdir(d);
}

static int setup(void **state)
{
    snprintf(src, sizeof src, "/tmp/qs_roundtrip_XXXXXX");
    if (!mkdtemp(src))
        return -1;
    snprintf(dst, sizeof dst, "%s-out", src);
    return 0;
}

static int teardown(void **state)
{
    rm_dir(dst);
    rm_dir(src);
    return 0;
}

static void make_source(const char *shape)
{
    rm_dir(src);
    assert_int_equal(mkdir(src, 0755), 0);
    const qs_init_shape *s = qs_init_shape_find(shape);
    qs_err err;
    if (qs_init_write_config(src, s, QS_DT_BF16, &err) || qs_init_write_tokenizer(src, s, &err) ||
        qs_init_write_weights(src, s, 11, QS_DT_BF16, 0, &err))
        fail_msg("%s", err.msg);
}

static void load_quant_config(const char *dir, qs_quant_config *qc)
{
    char p[256], *text;
    qs_err err;
    assert_int_equal(qs_read_file(qs_path_join(p, sizeof p, dir, "config.json"), &text, NULL, &err), 0);
    cJSON *root = cJSON_Parse(text);
    free(text);
    char *qtext = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(root, "quantization_config"));
    cJSON_Delete(root);
    if (qs_quant_config_parse(qtext, dir, qc, &err))
        fail_msg("%s: %s", dir, err.msg);
    free(qtext);
}

static qs_scheme expected_scheme(qs_quant_target t)
{
    switch (t) {
    case QS_QTARGET_FP8_DYNAMIC: case QS_QTARGET_FP8_STATIC: return QS_SCHEME_FP8_W8A8;
    case QS_QTARGET_FP8_BLOCK: return QS_SCHEME_FP8_BLOCK_W8A8;
    case QS_QTARGET_NVFP4: return QS_SCHEME_NVFP4_W4A4;
    default: return QS_SCHEME_NVFP4_W4A16;
    }
}

static bool kept_unquantized(const char *module)
{
    size_t n = strlen(module);
    return strstr(module, "lm_head") || strstr(module, "embed_tokens") ||
           (n > 9 && !strcmp(module + n - 9, ".mlp.gate"));
}

/* Compares one quantized layer with its source weight; returns the number of elements checked. */
static int64_t check_layer(const qs_linear_desc *d, const qs_tensor *orig, qs_quant_target t)
{
    qs_ref_linear L;
    qs_err err;
    if (qs_ref_linear_init(&L, d, &err))
        fail_msg("%s: %s", d->name, err.msg);
    float *row = malloc(sizeof *row * (size_t)d->k);
    for (int64_t j = 0; j < d->n; j++) {
        qs_ref_decode_row(&L, j, row);
        for (int64_t c = 0; c < d->k; c++) {
            double w = qs_tensor_get_f32(orig, j * d->k + c), q = row[c], bound;
            if (qs_scheme_is_nvfp4(d->scheme)) {
                double S = L.block_scale[j * (d->k / 16) + c / 16], x = fabs(w) / S;
                bound = S * (x <= 2 ? 0.25 : x <= 4 ? 0.5 : 1.0) * (1 + 1e-6);
            } else {
                double S = L.row_scale ? L.row_scale[j]
                                       : L.block_scale[(j / L.block_n) * ((d->k + L.block_k - 1) / L.block_k) +
                                                       c / L.block_k];
                bound = fmax(fabs(w) / 16.0, S / 1024.0) * (1 + 1e-6);
            }
            if (fabs(w - q) > bound)
                fail_msg("%s %s [%lld][%lld]: original %.8g, dequantized %.8g, bound %.3g", qs_quant_target_name(t),
                         d->name, (long long)j, (long long)c, w, q, bound);
        }
    }
    free(row);
    qs_ref_linear_destroy(&L);
    return d->n * d->k;
}

static void roundtrip(const char *shape)
{
    make_source(shape);
    for (int t = 0; t < QS_QTARGET_COUNT; t++)
        for (int f = 0; f < QS_QFORMAT_COUNT; f++) {
            bool fp4 = t == QS_QTARGET_NVFP4 || t == QS_QTARGET_NVFP4_W4A16;
            bool valid = !(f == QS_QFORMAT_FP8 && fp4) && !(f == QS_QFORMAT_MODELOPT && t == QS_QTARGET_FP8_BLOCK);
            rm_dir(dst);
            qs_quantize_options opt = {.target = (qs_quant_target)t, .format = (qs_quant_format)f};
            qs_err err;
            int rc = qs_quantize_checkpoint(src, dst, &opt, &err);
            if (!valid) {
                assert_int_equal(rc, -1);
                continue;
            }
            if (rc)
                fail_msg("%s %s: %s", qs_quant_target_name(t), qs_quant_format_name(f), err.msg);
            qs_quant_config qc;
            load_quant_config(dst, &qc);
            qs_checkpoint *a, *b;
            assert_int_equal(qs_checkpoint_open(src, false, &a, &err), 0);
            assert_int_equal(qs_checkpoint_open(dst, false, &b, &err), 0);
            int64_t checked = 0;
            int layers = 0;
            for (size_t i = 0; i < qs_checkpoint_count(a); i++) {
                const qs_tensor *ten = qs_checkpoint_tensor(a, i);
                size_t len = strlen(ten->name);
                if (ten->ndim != 2 || len < 8 || strcmp(ten->name + len - 7, ".weight"))
                    continue;
                char module[256];
                snprintf(module, sizeof module, "%.*s", (int)(len - 7), ten->name);
                if (strstr(module, "embed_tokens"))
                    continue;
                qs_linear_desc d;
                if (qs_linear_desc_build(b, &qc, module, &d, &err))
                    fail_msg("%s %s: %s", qs_quant_target_name(t), qs_quant_format_name(f), err.msg);
                if (kept_unquantized(module)) {
                    assert_int_equal(d.scheme, QS_SCHEME_BF16);
                    assert_memory_equal(d.weight->data, ten->data, ten->nbytes);
                    continue;
                }
                if (d.scheme != expected_scheme((qs_quant_target)t))
                    fail_msg("%s %s: %s loaded as %s", qs_quant_target_name(t), qs_quant_format_name(f), module,
                             qs_scheme_name(d.scheme));
                if (t == QS_QTARGET_FP8_STATIC || t == QS_QTARGET_NVFP4)
                    assert_true(d.input_scale > 0.0f && isfinite(d.input_scale));
                if (t == QS_QTARGET_FP8_DYNAMIC)
                    assert_int_equal(d.aquant, QS_AQUANT_DYNAMIC_TOKEN);
                checked += check_layer(&d, ten, (qs_quant_target)t);
                layers++;
            }
            assert_true(layers >= 14);
            /* fused siblings share their per-tensor scales (calibrated inputs are the same tensor) */
            if (t == QS_QTARGET_FP8_STATIC || t == QS_QTARGET_NVFP4) {
                const char *sib[3] = {"model.layers.1.self_attn.q_proj", "model.layers.1.self_attn.k_proj",
                                      "model.layers.1.self_attn.v_proj"};
                qs_linear_desc d0, di;
                assert_int_equal(qs_linear_desc_build(b, &qc, sib[0], &d0, &err), 0);
                for (int si = 1; si < 3; si++) {
                    assert_int_equal(qs_linear_desc_build(b, &qc, sib[si], &di, &err), 0);
                    assert_true(di.input_scale == d0.input_scale);
                    if (t == QS_QTARGET_NVFP4)
                        assert_true(di.weight_global_scale == d0.weight_global_scale);
                    else
                        assert_true(qs_scale_get(di.weight_scale, 0) == qs_scale_get(d0.weight_scale, 0));
                }
            }
            assert_true(checked > 10000);
            qs_checkpoint_close(a);
            qs_checkpoint_close(b);
            qs_quant_config_free(&qc);
            char p[256];
            assert_true(qs_file_exists(qs_path_join(p, sizeof p, dst, "tokenizer.json")));
            assert_int_equal(qs_file_exists(qs_path_join(p, sizeof p, dst, "hf_quant_config.json")),
                             f == QS_QFORMAT_MODELOPT);
        }
}

static void llama_roundtrips_in_every_format(void **state) { roundtrip("tiny-llama"); }
static void qwen3_moe_roundtrips_in_every_format(void **state) { roundtrip("tiny-qwen3-moe"); }

static void quantized_input_is_refused(void **state)
{
    make_source("tiny-qwen2");
    rm_dir(dst);
    qs_quantize_options opt = {.target = QS_QTARGET_FP8_DYNAMIC, .format = QS_QFORMAT_COMPRESSED_TENSORS};
    qs_err err;
    assert_int_equal(qs_quantize_checkpoint(src, dst, &opt, &err), 0);
    char again[128];
    snprintf(again, sizeof again, "%s-again", src);
    assert_int_equal(qs_quantize_checkpoint(dst, again, &opt, &err), -1);
    assert_non_null(strstr(err.msg, "already quantized"));
    /* Qwen2 biases travel with their layers */
    qs_checkpoint *b;
    assert_int_equal(qs_checkpoint_open(dst, false, &b, &err), 0);
    assert_non_null(qs_checkpoint_find(b, "model.layers.1.self_attn.k_proj.bias"));
    assert_non_null(qs_checkpoint_find(b, "model.layers.1.self_attn.k_proj.weight_scale"));
    qs_checkpoint_close(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(llama_roundtrips_in_every_format),
        cmocka_unit_test(qwen3_moe_roundtrips_in_every_format),
        cmocka_unit_test(quantized_input_is_refused),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
