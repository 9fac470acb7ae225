/* test_fuse_projections.c — q/k/v and gate/up fusion at load (model/projection_fusion.h,
 * quant/projection_fusion_exact.h, projection_fusion_load.c).
 *  - The rules, on hand-made layer descriptions: what fuses, what stays separate and why, and that
 *    the fused tensors are the parts' bytes and scales one after the other; a kernel that refuses
 *    per-channel scales keeps per-tensor scales that differ apart.
 *  - Real models, each loaded twice (fused, and with fusion off): a prefill and 16 greedy decode
 *    steps must give bitwise the same logits (so the same tokens), and fusion must have happened
 *    exactly where the rules allow. Models: stories260K (skipped without ../shared/data), the
 *    transformers goldens (F32, BF16, FP8 W8A8 and weight-only, NVFP4 weight-only; Qwen2 biases,
 *    Qwen3 q/k norm, MoE layers), online --quantization fp8, and checkpoints quantized here:
 *    static FP8 (per-tensor weights and inputs), FP8 128x128 blocks (q/k/v of 64 rows cannot fuse,
 *    gate/up of 128 can), NVFP4 W4A4, and copies whose k_proj input scale, weight scale or NVFP4
 *    global scale was changed (the first and last keep q/k/v apart, the second spreads the
 *    per-tensor scales into a per-channel vector). QSERVE_NO_FUSE=1 turns fusion off. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/config.h"
#include "model/kv_cache.h"
#include "io/safetensors_writer.h"
#include "model/model.h"
#include "model/projection_fusion.h"
#include "quant/projection_fusion_exact.h"
#include "quantize/quantize_checkpoint.h"
#include "registry/registry.h"
#include "util/fileio.h"

#include "test_helpers.h"

#define GOLDENS "tests/data/hf-goldens"

/* ---- the rules on hand-made descriptions ---------------------------------------------------- */

typedef struct part {
    qs_linear_desc d;
    qs_tensor w, s, b;
    uint8_t wdata[128 * 64];
    float sdata[128], bdata[128];
} part;

/* An n x k layer of `scheme` with weight bytes 1 + i + row, distinct per part. */
static void make_part(part *p, const char *name, qs_scheme scheme, qs_dtype wdt, int64_t n, int64_t k, int i)
{
    memset(p, 0, sizeof *p);
    snprintf(p->d.name, sizeof p->d.name, "model.layers.0.self_attn.%s", name);
    p->d.scheme = scheme;
    p->d.n = n;
    p->d.k = k;
    p->d.weight_global_scale = 1.0f;
    int bits = qs_dtype_bits(wdt);
    int64_t cols = wdt == QS_DT_U8 ? k / 2 : k;
    for (int64_t r = 0; r < n; r++)
        for (int64_t c = 0; c < cols * bits / 8; c++)
            p->wdata[r * cols * bits / 8 + c] = (uint8_t)(1 + i + r);
    p->w = (qs_tensor){.name = p->d.name, .dtype = wdt, .ndim = 2, .shape = {n, cols}, .numel = n * cols,
                       .data = p->wdata, .nbytes = (size_t)(n * cols * bits / 8), .file = "test"};
    p->d.weight = &p->w;
}

static void set_scale(part *p, qs_weight_scale_layout l, qs_dtype dt, int64_t d0, int64_t d1, float base)
{
    p->d.wscale = l;
    int64_t numel = d1 ? d0 * d1 : d0;
    for (int64_t i = 0; i < numel; i++)
        p->sdata[i] = base + (float)i;
    p->s = (qs_tensor){.name = "scale", .dtype = dt, .ndim = d1 ? 2 : 1, .shape = {d0, d1}, .numel = numel,
                       .data = p->sdata, .nbytes = (size_t)numel * 4, .file = "test"};
    if (dt == QS_DT_F8_E4M3) {
        for (int64_t i = 0; i < numel; i++)
            ((uint8_t *)p->sdata)[i] = (uint8_t)(0x30 + i % 8 + (int)base);
        p->s.nbytes = (size_t)numel;
    }
    p->d.weight_scale = &p->s;
}

static qs_fuse_verdict plan2(part *a, part *b, bool channel_ok, qs_fused_linear *f, char *why)
{
    const qs_linear_desc *parts[] = {&a->d, &b->d};
    return qs_linear_fuse_plan(parts, 2, "model.layers.0.fused", channel_ok, f, why, 256);
}

static void rules_dense(void **state)
{
    static part a, b;
    char why[256];
    qs_fused_linear f;
    make_part(&a, "q_proj", QS_SCHEME_BF16, QS_DT_BF16, 4, 8, 0);
    make_part(&b, "k_proj", QS_SCHEME_BF16, QS_DT_BF16, 2, 8, 1);
    assert_int_equal(plan2(&a, &b, true, &f, why), QS_FUSE_YES);
    assert_int_equal(f.desc.n, 6);
    assert_int_equal(f.desc.k, 8);
    assert_int_equal(f.desc.weight->shape[0], 6);
    assert_null(f.desc.weight->data); /* planned, not built */
    const qs_linear_desc *parts[] = {&a.d, &b.d};
    qs_err err;
    assert_int_equal(qs_linear_fuse_materialize(parts, 2, &f, &err), 0);
    assert_memory_equal(f.desc.weight->data, a.wdata, a.w.nbytes);
    assert_memory_equal((const uint8_t *)f.desc.weight->data + a.w.nbytes, b.wdata, b.w.nbytes);
    qs_fused_linear_drop_data(&f);
    assert_null(f.desc.weight->data);
    qs_fused_linear_drop_data(&f); /* twice is fine */

    /* biases: both or neither */
    for (int i = 0; i < 4; i++)
        a.bdata[i] = 0.5f + i, b.bdata[i] = -1.0f - i;
    a.b = (qs_tensor){.name = "qb", .dtype = QS_DT_F32, .ndim = 1, .shape = {4}, .numel = 4, .data = a.bdata,
                      .nbytes = 16, .file = "test"};
    b.b = (qs_tensor){.name = "kb", .dtype = QS_DT_F32, .ndim = 1, .shape = {2}, .numel = 2, .data = b.bdata,
                      .nbytes = 8, .file = "test"};
    a.d.bias = &a.b;
    assert_int_equal(plan2(&a, &b, true, &f, why), QS_FUSE_NO);
    assert_non_null(strstr(why, "q_proj has a bias and k_proj has none"));
    b.d.bias = &b.b;
    assert_int_equal(plan2(&a, &b, true, &f, why), QS_FUSE_YES);
    assert_int_equal(qs_linear_fuse_materialize(parts, 2, &f, &err), 0);
    const float *bias = f.desc.bias->data;
    float want[] = {0.5f, 1.5f, 2.5f, 3.5f, -1.0f, -2.0f};
    assert_memory_equal(bias, want, sizeof want);
    qs_fused_linear_drop_data(&f);

    /* one weight dtype, one scheme, one input width */
    make_part(&b, "k_proj", QS_SCHEME_BF16, QS_DT_F32, 2, 8, 1);
    assert_int_equal(plan2(&a, &b, true, &f, why), QS_FUSE_NO);
    assert_non_null(strstr(why, "stores BF16 weights and k_proj F32"));
    make_part(&b, "k_proj", QS_SCHEME_BF16, QS_DT_BF16, 2, 16, 1);
    assert_int_equal(plan2(&a, &b, true, &f, why), QS_FUSE_NO);
    make_part(&b, "k_proj", QS_SCHEME_FP8_W8A8, QS_DT_F8_E4M3, 2, 8, 1);
    set_scale(&b, QS_WSCALE_CHANNEL, QS_DT_F32, 2, 0, 1.0f);
    b.d.aquant = QS_AQUANT_DYNAMIC_TOKEN;
    assert_int_equal(plan2(&a, &b, true, &f, why), QS_FUSE_NO);
    assert_non_null(strstr(why, "one GEMM runs one scheme"));
}

static void make_fp8_pair(part *a, part *b, qs_weight_scale_layout la, qs_weight_scale_layout lb, qs_act_quant aq)
{
    make_part(a, "q_proj", QS_SCHEME_FP8_W8A8, QS_DT_F8_E4M3, 4, 16, 0);
    make_part(b, "k_proj", QS_SCHEME_FP8_W8A8, QS_DT_F8_E4M3, 2, 16, 1);
    set_scale(a, la, QS_DT_F32, la == QS_WSCALE_CHANNEL ? 4 : 1, 0, 0.25f);
    set_scale(b, lb, QS_DT_F32, lb == QS_WSCALE_CHANNEL ? 2 : 1, 0, 0.25f);
    a->d.aquant = b->d.aquant = aq;
}

static void rules_fp8_scales(void **state)
{
    static part a, b;
    char why[256];
    qs_fused_linear f;
    qs_err err;
    const qs_linear_desc *parts[] = {&a.d, &b.d};

    /* per-channel: concatenated */
    make_fp8_pair(&a, &b, QS_WSCALE_CHANNEL, QS_WSCALE_CHANNEL, QS_AQUANT_DYNAMIC_TOKEN);
    assert_int_equal(plan2(&a, &b, true, &f, why), QS_FUSE_YES);
    assert_int_equal(f.desc.wscale, QS_WSCALE_CHANNEL);
    assert_int_equal(qs_linear_fuse_materialize(parts, 2, &f, &err), 0);
    float want_ch[] = {0.25f, 1.25f, 2.25f, 3.25f, 0.25f, 1.25f};
    assert_memory_equal(f.desc.weight_scale->data, want_ch, sizeof want_ch);
    qs_fused_linear_drop_data(&f);

    /* per-tensor scales that agree stay per-tensor */
    make_fp8_pair(&a, &b, QS_WSCALE_TENSOR, QS_WSCALE_TENSOR, QS_AQUANT_DYNAMIC_TOKEN);
    assert_int_equal(plan2(&a, &b, false, &f, why), QS_FUSE_YES);
    assert_int_equal(f.desc.wscale, QS_WSCALE_TENSOR);
    assert_false(f.tensor_scales_to_channel);
    assert_ptr_equal(f.desc.weight_scale, &a.s);

    /* ... ones that differ become per-channel, but only when every kernel takes that */
    b.sdata[0] = 0.5f;
    assert_int_equal(plan2(&a, &b, false, &f, why), QS_FUSE_NO);
    assert_non_null(strstr(why, "per-tensor weight scales differ"));
    assert_int_equal(plan2(&a, &b, true, &f, why), QS_FUSE_YES);
    assert_int_equal(f.desc.wscale, QS_WSCALE_CHANNEL);
    assert_true(f.tensor_scales_to_channel);
    assert_int_equal(qs_linear_fuse_materialize(parts, 2, &f, &err), 0);
    float want_spread[] = {0.25f, 0.25f, 0.25f, 0.25f, 0.5f, 0.5f};
    assert_memory_equal(f.desc.weight_scale->data, want_spread, sizeof want_spread);
    qs_fused_linear_drop_data(&f);

    /* headers only: the scalars are unknown */
    a.s.data = b.s.data = NULL;
    assert_int_equal(plan2(&a, &b, false, &f, why), QS_FUSE_IF_SCALES_AGREE);
    assert_int_equal(plan2(&a, &b, true, &f, why), QS_FUSE_YES);

    /* static input scales: one GEMM, one scale */
    make_fp8_pair(&a, &b, QS_WSCALE_TENSOR, QS_WSCALE_TENSOR, QS_AQUANT_STATIC_TENSOR);
    a.d.input_scale = b.d.input_scale = 0.125f;
    assert_int_equal(plan2(&a, &b, true, &f, why), QS_FUSE_YES);
    assert_true(f.desc.input_scale == 0.125f);
    b.d.input_scale = 0.25f;
    assert_int_equal(plan2(&a, &b, true, &f, why), QS_FUSE_NO);
    assert_non_null(strstr(why, "static input scales differ"));
    b.d.input_scale = 0.0f; /* headers only */
    assert_int_equal(plan2(&a, &b, true, &f, why), QS_FUSE_IF_SCALES_AGREE);

    /* activation modes must match */
    make_fp8_pair(&a, &b, QS_WSCALE_CHANNEL, QS_WSCALE_CHANNEL, QS_AQUANT_DYNAMIC_TOKEN);
    b.d.aquant = QS_AQUANT_DYNAMIC_TENSOR;
    assert_int_equal(plan2(&a, &b, true, &f, why), QS_FUSE_NO);
    assert_non_null(strstr(why, "quantizes activations"));
}

static void rules_fp8_blocks(void **state)
{
    static part a, b;
    char why[256];
    qs_fused_linear f;
    qs_err err;
    const qs_linear_desc *parts[] = {&a.d, &b.d};
    make_part(&a, "gate_proj", QS_SCHEME_FP8_BLOCK_W8A8, QS_DT_F8_E4M3, 128, 64, 0);
    make_part(&b, "up_proj", QS_SCHEME_FP8_BLOCK_W8A8, QS_DT_F8_E4M3, 128, 64, 1);
    set_scale(&a, QS_WSCALE_BLOCK, QS_DT_F32, 1, 1, 2.0f);
    set_scale(&b, QS_WSCALE_BLOCK, QS_DT_F32, 1, 1, 3.0f);
    a.d.block_n = b.d.block_n = a.d.block_k = b.d.block_k = 128;
    a.d.aquant = b.d.aquant = QS_AQUANT_DYNAMIC_GROUP;
    a.d.act_group_size = b.d.act_group_size = 128;
    assert_int_equal(plan2(&a, &b, true, &f, why), QS_FUSE_YES);
    assert_int_equal(f.desc.wscale, QS_WSCALE_BLOCK);
    assert_int_equal(f.desc.weight_scale->shape[0], 2);
    assert_int_equal(f.desc.weight_scale->shape[1], 1);
    assert_int_equal(qs_linear_fuse_materialize(parts, 2, &f, &err), 0);
    float want[] = {2.0f, 3.0f};
    assert_memory_equal(f.desc.weight_scale->data, want, sizeof want);
    qs_fused_linear_drop_data(&f);
    /* a part of 64 rows would share a 128-row block with its neighbour */
    make_part(&b, "up_proj", QS_SCHEME_FP8_BLOCK_W8A8, QS_DT_F8_E4M3, 64, 64, 1);
    set_scale(&b, QS_WSCALE_BLOCK, QS_DT_F32, 1, 1, 3.0f);
    b.d.block_n = b.d.block_k = 128;
    b.d.aquant = QS_AQUANT_DYNAMIC_GROUP;
    b.d.act_group_size = 128;
    assert_int_equal(plan2(&a, &b, true, &f, why), QS_FUSE_NO);
    assert_non_null(strstr(why, "up_proj has 64 rows, not a multiple of the 128-row scale block"));
}

static void rules_nvfp4(void **state)
{
    static part a, b;
    char why[256];
    qs_fused_linear f;
    qs_err err;
    const qs_linear_desc *parts[] = {&a.d, &b.d};
    make_part(&a, "q_proj", QS_SCHEME_NVFP4_W4A4, QS_DT_U8, 4, 32, 0);
    make_part(&b, "k_proj", QS_SCHEME_NVFP4_W4A4, QS_DT_U8, 2, 32, 1);
    set_scale(&a, QS_WSCALE_NVFP4, QS_DT_F8_E4M3, 4, 2, 0.0f);
    set_scale(&b, QS_WSCALE_NVFP4, QS_DT_F8_E4M3, 2, 2, 1.0f);
    a.d.aquant = b.d.aquant = QS_AQUANT_NVFP4;
    a.d.weight_global_scale = b.d.weight_global_scale = 0.01f;
    a.d.input_scale = b.d.input_scale = 0.02f;
    assert_int_equal(plan2(&a, &b, true, &f, why), QS_FUSE_YES);
    assert_int_equal(qs_linear_fuse_materialize(parts, 2, &f, &err), 0);
    assert_int_equal(f.desc.weight->nbytes, 6 * 16);
    assert_memory_equal(f.desc.weight->data, a.wdata, 4 * 16);
    assert_memory_equal((const uint8_t *)f.desc.weight->data + 64, b.wdata, 2 * 16);
    assert_int_equal(f.desc.weight_scale->dtype, QS_DT_F8_E4M3);
    assert_memory_equal(f.desc.weight_scale->data, a.sdata, 8);
    assert_memory_equal((const uint8_t *)f.desc.weight_scale->data + 8, b.sdata, 4);
    assert_true(f.desc.weight_global_scale == 0.01f && f.desc.input_scale == 0.02f);
    qs_fused_linear_drop_data(&f);
    b.d.weight_global_scale = 0.02f;
    assert_int_equal(plan2(&a, &b, true, &f, why), QS_FUSE_NO);
    assert_non_null(strstr(why, "global weight scales differ"));
    b.d.weight_global_scale = 0.01f;
    b.d.input_scale = 0.03f;
    assert_int_equal(plan2(&a, &b, true, &f, why), QS_FUSE_NO);
    assert_non_null(strstr(why, "static input scales differ"));
}

/* A kernel that takes per-tensor FP8 scales only. */
static int tensor_scales_only(const qs_linear_desc *d, char *why, size_t cap)
{
    if (d->wscale != QS_WSCALE_TENSOR) {
        snprintf(why, cap, "only per-tensor scales.");
        return 0;
    }
    return 1;
}

static void rules_ask_every_kernel(void **state)
{
    static part a, b;
    char why[512];
    qs_fused_linear f;
    const qs_linear_desc *parts[] = {&a.d, &b.d};
    const char *name = "model.layers.0.self_attn.qkv_proj";
    static const qs_kernel fake = {.name = "fake", .platform = QS_PLATFORM_CUDA, .kind = QS_KIND_LINEAR,
                                   .schemes = 1u << QS_SCHEME_FP8_W8A8, .can_implement_linear = tensor_scales_only};
    static const qs_kernel *const table[] = {&fake};
    make_fp8_pair(&a, &b, QS_WSCALE_TENSOR, QS_WSCALE_TENSOR, QS_AQUANT_DYNAMIC_TOKEN);
    qs_registry_set_test_kernels(table, 1);
    qs_fuse_verdict equal = qs_projection_fusion_plan(parts, 2, name, QS_PLATFORM_CUDA, &f, why, sizeof why);
    qs_weight_scale_layout equal_layout = f.desc.wscale;
    b.sdata[0] = 0.5f;
    qs_fuse_verdict differ = qs_projection_fusion_plan(parts, 2, name, QS_PLATFORM_CUDA, &f, why, sizeof why);
    char differ_why[512];
    snprintf(differ_why, sizeof differ_why, "%s", why);
    qs_fuse_verdict other_platform = qs_projection_fusion_plan(parts, 2, name, QS_PLATFORM_CPU, &f, why, sizeof why);
    qs_registry_set_test_kernels(NULL, 0);
    assert_int_equal(equal, QS_FUSE_YES); /* equal scales stay per-tensor, which the kernel takes */
    assert_int_equal(equal_layout, QS_WSCALE_TENSOR);
    assert_int_equal(differ, QS_FUSE_NO); /* differing ones would need per-channel scales */
    assert_non_null(strstr(differ_why, "per-tensor weight scales differ"));
    assert_int_equal(other_platform, QS_FUSE_YES); /* the kernel is another platform's */
    /* the CPU's reference kernel takes per-channel scales */
    assert_int_equal(qs_projection_fusion_plan(parts, 2, name, QS_PLATFORM_CPU, &f, why, sizeof why), QS_FUSE_YES);
    assert_int_equal(f.desc.wscale, QS_WSCALE_CHANNEL);
}

/* ---- real models: fused == separate, bit for bit --------------------------------------------- */

#define DECODE_STEPS 16

typedef struct model_case {
    const char *dir;           /* relative to the repository, or filled in by setup */
    const char *quantization;  /* "" or "fp8" (online) */
    int qkv_fused, gate_up_fused;   /* expected counts */
    int spread;                /* expected fused layers with per-tensor scales spread per channel */
    const char *refusal;       /* expected in the first refusal, or NULL */
    char path[512];
} model_case;

static char g_tmp[64];

static qs_model *load(const char *dir, const char *quantization, bool no_fuse)
{
    qs_config cfg;
    qs_config_defaults(&cfg);
    snprintf(cfg.model_dir, sizeof cfg.model_dir, "%s", dir);
    snprintf(cfg.quantization, sizeof cfg.quantization, "%s", quantization ? quantization : "");
    cfg.device = QS_DEVICE_CPU;
    cfg.no_fuse_projections = no_fuse;
    qs_model *m;
    qs_err err;
    if (qs_model_load(&cfg, &m, &err) != 0)
        fail_msg("%s: load: %s", dir, err.msg);
    return m;
}

/* Prefill of a few ids, then DECODE_STEPS greedy steps; logits [(1 + steps) * vocab], tokens [steps]. */
static void run_greedy(qs_model *m, float *logits, int32_t *tokens)
{
    const qs_model_config *mc = qs_model_get_config(m);
    int32_t toks[64] = {1, 17, 5, 300 % 512, 42, 7};
    int n_prompt = 6, total = n_prompt + DECODE_STEPS;
    for (int i = 0; i < n_prompt; i++)
        toks[i] %= mc->vocab_size;
    int n_blocks = (total + QS_KV_BLOCK_SIZE - 1) / QS_KV_BLOCK_SIZE;
    qs_kv_cache *kv;
    qs_err err;
    assert_int_equal(qs_kv_cache_create(mc, QS_PLATFORM_CPU, n_blocks, &kv, &err), 0);
    int32_t table[8];
    for (int i = 0; i < n_blocks; i++)
        table[i] = qs_kv_cache_alloc(kv);
    qs_seq_step s = {.tokens = toks, .n_tokens = n_prompt, .block_table = table, .n_blocks = n_blocks,
                     .want_logits = true};
    if (qs_model_forward(m, kv, &s, 1, logits, &err))
        fail_msg("prefill: %s", err.msg);
    for (int step = 0; step < DECODE_STEPS; step++) {
        const float *prev = logits + (int64_t)step * mc->vocab_size;
        tokens[step] = qs_test_argmax(prev, mc->vocab_size);
        toks[n_prompt + step] = tokens[step];
        qs_seq_step d = {.tokens = &toks[n_prompt + step], .n_tokens = 1, .start_pos = n_prompt + step,
                         .block_table = table, .n_blocks = n_blocks, .want_logits = true};
        if (qs_model_forward(m, kv, &d, 1, logits + (int64_t)(step + 1) * mc->vocab_size, &err))
            fail_msg("decode step %d: %s", step, err.msg);
    }
    qs_kv_cache_free(kv);
}

static void fused_equals_separate(void **state)
{
    model_case *c = *state;
    const char *dir = c->path[0] ? c->path : c->dir;
    char probe[600];
    qs_path_join(probe, sizeof probe, dir, "config.json");
    if (!qs_file_exists(probe)) {
        printf("skip %s: not found (stories260K needs ../shared/data; goldens need the repository root)\n", dir);
        skip();
    }
    qs_model *fused = load(dir, c->quantization, false), *separate = load(dir, c->quantization, true);
    const qs_fusion_summary *f = qs_model_fusion(fused), *off = qs_model_fusion(separate);
    char line[1024];
    printf("%s%s%s: %s\n", dir, c->quantization[0] ? " --quantization " : "", c->quantization,
           qs_fusion_summary_format(f, line, sizeof line));
    assert_true(off->disabled);
    assert_int_equal(off->fused[QS_FUSION_QKV] + off->fused[QS_FUSION_GATE_UP], 0);
    assert_false(f->disabled);
    assert_int_equal(f->fused[QS_FUSION_QKV], c->qkv_fused);
    assert_int_equal(f->fused[QS_FUSION_GATE_UP], c->gate_up_fused);
    assert_int_equal(f->if_scales_agree, 0);
    assert_int_equal(f->scales_spread, c->spread);
    if (c->refusal && !strstr(f->first_refusal, c->refusal))
        fail_msg("%s: expected a refusal saying '%s', got '%s'", dir, c->refusal, f->first_refusal);
    if (!c->refusal && f->first_refusal[0])
        fail_msg("%s: unexpected refusal: %s", dir, f->first_refusal);

    int vocab = qs_model_get_config(fused)->vocab_size;
    size_t n = (size_t)(DECODE_STEPS + 1) * (size_t)vocab;
    float *la = malloc(sizeof(float) * n), *lb = malloc(sizeof(float) * n);
    int32_t ta[DECODE_STEPS], tb[DECODE_STEPS];
    run_greedy(fused, la, ta);
    run_greedy(separate, lb, tb);
    assert_memory_equal(ta, tb, sizeof ta);
    for (int step = 0; step <= DECODE_STEPS; step++)
        if (memcmp(la + (size_t)step * vocab, lb + (size_t)step * vocab, sizeof(float) * (size_t)vocab))
            fail_msg("%s: step %d: fused logits differ from the separate projections' (bitwise)", dir, step);
    free(la);
    free(lb);
    qs_model_free(fused);
    qs_model_free(separate);
}

static void env_turns_fusion_off(void **state)
{
    const char *dir = GOLDENS "/llama";
    if (!qs_file_exists(GOLDENS "/llama/config.json"))
        skip();
    setenv("QSERVE_NO_FUSE", "1", 1);
    qs_model *m = load(dir, "", false);
    unsetenv("QSERVE_NO_FUSE");
    assert_true(qs_model_fusion(m)->disabled);
    assert_int_equal(qs_model_fusion(m)->fused[QS_FUSION_QKV], 0);
    qs_model_free(m);
    setenv("QSERVE_NO_FUSE", "0", 1);
    assert_false(qs_projection_fusion_disabled_by_env());
    unsetenv("QSERVE_NO_FUSE");
}

/* ---- checkpoints made here ------------------------------------------------------------------- */

static int copy_file(const char *src_dir, const char *dst_dir, const char *name)
{
    char a[600], b[600], *text;
    size_t len;
    qs_err err;
    qs_path_join(a, sizeof a, src_dir, name);
    qs_path_join(b, sizeof b, dst_dir, name);
    if (!qs_file_exists(a))
        return 0;
    if (qs_read_file(a, &text, &len, &err))
        return -1;
    int rc = qs_write_file(b, text, len, &err);
    free(text);
    return rc;
}

/* Copies checkpoint src to dst with the scalar F32 tensor `name` multiplied by `factor`. */
static int patch_scalar(const char *src, const char *dst, const char *name, float factor)
{
    qs_err err;
    qs_checkpoint *ck;
    if (mkdir(dst, 0700) || copy_file(src, dst, "config.json") || copy_file(src, dst, "hf_quant_config.json") ||
        qs_checkpoint_open(src, false, &ck, &err)) {
        printf("patch %s: cannot copy %s\n", dst, src);
        return -1;
    }
    qs_st_writer *w = qs_st_writer_new();
    int rc = w ? 0 : -1, found = 0;
    for (size_t i = 0; rc == 0 && i < qs_checkpoint_count(ck); i++) {
        const qs_tensor *t = qs_checkpoint_tensor(ck, i);
        if (!strcmp(t->name, name) && t->dtype == QS_DT_F32 && t->numel == 1) {
            float v = qs_tensor_get_f32(t, 0) * factor;
            rc = qs_st_writer_add_copy(w, t->name, t->dtype, t->ndim, t->shape, &v, sizeof v, &err);
            found = 1;
        } else {
            rc = qs_st_writer_add(w, t->name, t->dtype, t->ndim, t->shape, t->data, t->nbytes, &err);
        }
    }
    if (rc == 0 && !found) {
        printf("patch %s: no scalar F32 tensor %s\n", dst, name);
        rc = -1;
    }
    if (rc == 0)
        rc = qs_st_writer_write_sharded(w, dst, 0, &err);
    if (rc)
        printf("patch %s: %s\n", dst, err.msg);
    qs_st_writer_free(w);
    qs_checkpoint_close(ck);
    return rc;
}

static int quantize(const char *out, qs_quant_target target)
{
    char dst[256];
    snprintf(dst, sizeof dst, "%s/%s", g_tmp, out);
    qs_quantize_options opt = {.target = target, .format = QS_QFORMAT_COMPRESSED_TENSORS};
    qs_err err;
    if (qs_quantize_checkpoint(GOLDENS "/llama", dst, &opt, &err)) {
        printf("quantize %s: %s\n", out, err.msg);
        return -1;
    }
    return 0;
}

static int make_variant(const char *from, const char *to, const char *tensor, float factor)
{
    char a[256], b[256];
    snprintf(a, sizeof a, "%s/%s", g_tmp, from);
    snprintf(b, sizeof b, "%s/%s", g_tmp, to);
    return patch_scalar(a, b, tensor, factor);
}

static int setup(void **state)
{
    snprintf(g_tmp, sizeof g_tmp, "/tmp/qs-fuse-XXXXXX");
    if (!mkdtemp(g_tmp))
        return -1;
    if (!qs_file_exists(GOLDENS "/llama/config.json"))
        return 0; /* the model cases skip */
    if (quantize("fp8-static", QS_QTARGET_FP8_STATIC) || quantize("fp8-block", QS_QTARGET_FP8_BLOCK) ||
        quantize("nvfp4", QS_QTARGET_NVFP4) ||
        make_variant("fp8-static", "fp8-static-input-scale", "model.layers.0.self_attn.k_proj.input_scale", 2.0f) ||
        make_variant("fp8-static", "fp8-static-weight-scale", "model.layers.1.self_attn.v_proj.weight_scale", 0.5f) ||
        make_variant("nvfp4", "nvfp4-global-scale", "model.layers.1.mlp.up_proj.weight_global_scale", 2.0f))
        return -1;
    /* stories260K, converted as test_model_golden does */
    char bin[1024], tok[1024], cmd[4096];
    const char *data = qs_test_stories_dir();
    snprintf(bin, sizeof bin, "%s/stories260K.bin", data);
    snprintf(tok, sizeof tok, "%s/tok512.bin", data);
    if (qs_file_exists(bin) && qs_file_exists(tok)) {
        const char *build = getenv("QSERVE_BUILD") ? getenv("QSERVE_BUILD") : "build";
        snprintf(cmd, sizeof cmd, "%s/convert-llama2c %s %s %s/s260 >/dev/null", build, bin, tok, g_tmp);
        if (system(cmd) != 0)
            return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", g_tmp);
    return system(cmd) == 0 ? 0 : -1;
}

#define G(dir, q, g) {GOLDENS "/" dir, "", q, g, 0, NULL, ""}
static model_case CASES[] = {
    G("llama", 2, 2),       G("llama-bf16", 2, 2),   G("mistral", 2, 2),   G("mistral_sw-bf16", 2, 2),
    G("qwen2", 2, 2),       G("qwen2-bf16", 2, 2),   G("qwen3", 2, 2),     G("qwen3-bf16", 2, 2),
    G("qwen3_moe", 2, 1),   G("mixtral-bf16", 2, 0), /* MoE layers: experts untouched */
    G("llama-fp8", 2, 2),   G("llama-fp8a16", 2, 2), G("qwen3_moe-fp8", 2, 1),
    G("llama-nvfp4a16", 2, 2), G("mixtral-nvfp4a16", 2, 0),
    {GOLDENS "/llama", "fp8", 2, 2, 0, NULL, ""},       /* online --quantization fp8 */
    {"s260", "", 5, 5, 0, NULL, ""},                    /* stories260K */
    {"s260", "fp8", 5, 5, 0, NULL, ""},
    {"fp8-static", "", 2, 2, 0, NULL, ""},              /* per-tensor weights and inputs that agree */
    {"fp8-static-input-scale", "", 1, 2, 0, "static input scales differ", ""},
    {"fp8-static-weight-scale", "", 2, 2, 1, NULL, ""}, /* layer 1's q/k/v: per-channel scales */
    {"fp8-block", "", 0, 2, 0, "not a multiple of the 128-row scale block", ""},
    {"nvfp4", "", 2, 2, 0, NULL, ""},
    {"nvfp4-global-scale", "", 2, 1, 0, "global weight scales differ", ""},
};

static int case_setup(void **state)
{
    model_case *c = *state;
    if (!strncmp(c->dir, GOLDENS, strlen(GOLDENS)))
        return 0;
    snprintf(c->path, sizeof c->path, "%s/%s", g_tmp, c->dir);
    return 0;
}

int main(void)
{
    enum { N_CASES = sizeof CASES / sizeof CASES[0] };
    static char names[N_CASES][96];
    struct CMUnitTest tests[6 + N_CASES];
    int n = 0;
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(rules_dense);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(rules_fp8_scales);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(rules_fp8_blocks);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(rules_nvfp4);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(rules_ask_every_kernel);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(env_turns_fusion_off);
    for (size_t i = 0; i < N_CASES; i++) {
        const char *dir = CASES[i].dir;
        if (!strncmp(dir, GOLDENS "/", strlen(GOLDENS "/")))
            dir += strlen(GOLDENS "/");
        snprintf(names[i], sizeof names[i], "fused_equals_separate %s%s", dir,
                 CASES[i].quantization[0] ? " (online fp8)" : "");
        tests[n++] = (struct CMUnitTest){names[i], fused_equals_separate, case_setup, NULL, &CASES[i]};
    }
    return cmocka_run_group_tests(tests, setup, teardown);
}
