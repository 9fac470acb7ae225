/* quantize_checkpoint.c — the driver of `qserve quantize` (see quantize_checkpoint.h):
 *  1. every 2-D float `<module>.weight` is a linear layer; lm_head, embeddings, MoE routers and
 *     (for NVFP4) layers whose in_features is not a multiple of 16 stay as they are;
 *  2. fused siblings (q/k/v, gate/up, w1/w3) share one per-tensor weight amax, as ModelOpt and
 *     llm-compressor do, so FP8 per-tensor scales and NVFP4 global scales agree within a fusion;
 *  3. static activation scales come from the calibration pass (experts a prompt never routed to
 *     take the largest range of their layer's experts);
 *  Llama 4's fused 3-D experts (feed_forward.experts.gate_up_proj [E, hidden, 2 x inter] and
 *  down_proj [E, inter, hidden]) are split and transposed into per-expert Linear weights
 *  feed_forward.experts.E.{gate,up,down}_proj first, the layout the quantized releases use;
 *  its routers and vision tensors stay as they are;
 *  4. quantized tensors are added to a safetensors writer next to the untouched ones (referenced
 *     straight from the input mmap) and written in shards; config.json gets quantization_config,
 *     ModelOpt also hf_quant_config.json; tokenizer and generation files are copied. */
#include "quantize/quantize_checkpoint.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cpu/reference_kernels.h"
#include "core/fp4.h"
#include "core/fp8.h"
#include "io/safetensors.h"
#include "io/safetensors_writer.h"
#include "quantize/calibrate.h"
#include "quant/quantize.h"
#include "quantize/quantize_formats.h"
#include "util/fileio.h"
#include "util/log.h"
#include "util/parallel.h"

/* ---- bookkeeping ------------------------------------------------------------------------------- */

typedef struct {
    char module[256];
    const qs_tensor *w;
    size_t tensor_index;
    bool quantize;
    char group[256];    /* fused-sibling key */
    float wamax;        /* amax of the weight (then of its sibling group) */
    float xamax;        /* calibrated input range, -1 if none */
    bool split;         /* one expert of a fused 3-D tensor: w is owned (split_expert), written even unquantized */
} lin;

/* Expert e's part j (0 gate, 1 up, 2 down) of a Llama 4 fused 3-D expert tensor t as an owned
 * [out, in] tensor named module + ".weight"; NULL when out of memory. */
static qs_tensor *split_expert(const qs_tensor *t, int64_t e, int j, const char *module)
{
    bool gu = j < 2;
    int64_t A = t->shape[1], B = t->shape[2], rows = gu ? B / 2 : B, cols = A;
    size_t es = (size_t)qs_dtype_bits(t->dtype) / 8;
    qs_tensor *o = calloc(1, sizeof *o);
    char *data = malloc((size_t)(rows * cols) * es), *name = malloc(strlen(module) + 8);
    if (!o || !data || !name) {
        free(o), free(data), free(name);
        return NULL;
    }
    const char *src = t->data;
    for (int64_t r = 0; r < rows; r++) /* W[r][c] = t[e][c][r (+ rows for up)] */
        for (int64_t c = 0; c < cols; c++)
            memcpy(data + ((size_t)(r * cols + c)) * es, src + ((size_t)((e * A + c) * B + (j == 1 ? rows : 0) + r)) * es,
                   es);
    sprintf(name, "%s.weight", module);
    *o = (qs_tensor){.name = name, .dtype = t->dtype, .ndim = 2, .shape = {rows, cols}, .numel = rows * cols,
                     .data = data, .nbytes = (size_t)(rows * cols) * es, .file = t->file};
    return o;
}

static void free_split(lin *l)
{
    if (!l->split || !l->w)
        return;
    free((void *)l->w->data);
    free((void *)l->w->name);
    free((void *)l->w);
    l->w = NULL;
}

static bool fused_experts(const qs_tensor *t)
{
    size_t n = strlen(t->name);
    return t->ndim == 3 && ((n >= 33 && !strcmp(t->name + n - 33, "feed_forward.experts.gate_up_proj")) ||
                            (n >= 30 && !strcmp(t->name + n - 30, "feed_forward.experts.down_proj")));
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

static bool is_float(qs_dtype dt) { return dt == QS_DT_BF16 || dt == QS_DT_F16 || dt == QS_DT_F32; }

/* "model.layers.0.self_attn.k_proj" -> "model.layers.0.self_attn.qkv" */
static void sibling_key(const char *module, char *out, size_t cap)
{
    static const char *const map[][2] = {{".q_proj", ".qkv"}, {".k_proj", ".qkv"}, {".v_proj", ".qkv"},
                                         {".gate_proj", ".gate_up"}, {".up_proj", ".gate_up"}, {".w1", ".w13"},
                                         {".w3", ".w13"}};
    snprintf(out, cap, "%s", module);
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (ends_with(module, map[i][0])) {
            size_t keep = strlen(module) - strlen(map[i][0]);
            snprintf(out, cap, "%.*s%s", (int)keep, module, map[i][1]);
            return;
        }
}

typedef struct {
    const qs_tensor *t;
    float *out;
} conv_job;

static void conv_range(void *ctx, int64_t b, int64_t e)
{
    const conv_job *j = ctx;
    for (int64_t i = b; i < e; i++)
        j->out[i] = qs_tensor_get_f32(j->t, i);
}

static float *to_f32(const qs_tensor *t)
{
    float *f = malloc(sizeof *f * (size_t)t->numel);
    if (!f)
        return NULL;
    conv_job j = {t, f};
    qs_parallel_for(t->numel, 1 << 15, conv_range, &j);
    return f;
}

/* ---- the scale tensors, per format --------------------------------------------------------------- */

typedef struct {
    qs_st_writer *w;
    qs_err *err;
    cJSON *weight_map;      /* tensor name -> shard file */
    const char *file;       /* the shard being filled */
} sink;

static int put(sink *s, const char *module, const char *suffix, qs_dtype dt, int ndim, const int64_t *shape,
               void *data, size_t nbytes)
{
    char name[320];
    snprintf(name, sizeof name, "%s.%s", module, suffix);
    cJSON_AddStringToObject(s->weight_map, name, s->file);
    return qs_st_writer_add_copy(s->w, name, dt, ndim, shape, data, nbytes, s->err);
}

/* Stores float scales in dtype dt (F32, BF16 or F16). */
static int put_scales(sink *s, const char *module, const char *suffix, qs_dtype dt, int ndim, const int64_t *shape,
                      const float *v, int64_t count)
{
    size_t es = (size_t)qs_dtype_bits(dt) / 8;
    uint8_t *buf = malloc(es * (size_t)count + 1);
    if (!buf)
        return qs_errf(s->err, "%s.%s: out of memory", module, suffix);
    for (int64_t i = 0; i < count; i++) {
        if (dt == QS_DT_F32) {
            memcpy(buf + i * 4, &v[i], 4);
        } else {
            uint16_t h = dt == QS_DT_BF16 ? qs_f32_to_bf16(v[i]) : qs_f32_to_f16(v[i]);
            memcpy(buf + i * 2, &h, 2);
        }
    }
    int rc = put(s, module, suffix, dt, ndim, shape, buf, es * (size_t)count);
    free(buf);
    return rc;
}

static float round_f16(float x) { return qs_f16_to_f32(qs_f32_to_f16(x)); }

static int quantize_linear(sink *s, const lin *L, qs_quant_target t, qs_quant_format f)
{
    const qs_tensor *w = L->w;
    int64_t n = w->shape[0], k = w->shape[1];
    float *wf = to_f32(w);
    if (!wf)
        return qs_errf(s->err, "%s: out of memory converting the weight to float", w->name);
    int rc = 0;
    bool ct = f == QS_QFORMAT_COMPRESSED_TENSORS;
    /* compressed-tensors keeps scales in the model dtype; ModelOpt and fp8 checkpoints in F32 */
    qs_dtype sdt = ct ? w->dtype : QS_DT_F32;
    qs_scale_round_fn rnd = sdt == QS_DT_BF16 ? qs_scale_round_bf16 : sdt == QS_DT_F16 ? round_f16 : qs_scale_round_f32;
    int64_t one[1] = {1}, wshape[2] = {n, k};
    if (t == QS_QTARGET_NVFP4 || t == QS_QTARGET_NVFP4_W4A16) {
        uint8_t *packed = malloc((size_t)(n * k / 2)), *bs = malloc((size_t)(n * k / 16));
        if (!packed || !bs) {
            free(packed);
            free(bs);
            free(wf);
            return qs_errf(s->err, "%s: out of memory", w->name);
        }
        float g = qs_nvfp4_global_scale(L->wamax);
        qs_quantize_nvfp4(wf, n, k, g, packed, bs);
        int64_t pshape[2] = {n, k / 2}, sshape[2] = {n, k / 16};
        rc = put(s, L->module, ct ? "weight_packed" : "weight", QS_DT_U8, 2, pshape, packed, (size_t)(n * k / 2));
        if (!rc)
            rc = put(s, L->module, "weight_scale", QS_DT_F8_E4M3, 2, sshape, bs, (size_t)(n * k / 16));
        free(packed);
        free(bs);
        if (!rc) {
            float gv = ct ? 1.0f / g : g;
            rc = put_scales(s, L->module, ct ? "weight_global_scale" : "weight_scale_2", QS_DT_F32, ct ? 1 : 0, one,
                            &gv, 1);
        }
        if (!rc && t == QS_QTARGET_NVFP4) {
            float ig = qs_nvfp4_global_scale(L->xamax);
            float iv = ct ? 1.0f / ig : ig;
            rc = put_scales(s, L->module, ct ? "input_global_scale" : "input_scale", QS_DT_F32, ct ? 1 : 0, one, &iv,
                            1);
        }
        free(wf);
        return rc;
    }
    uint8_t *q = malloc((size_t)(n * k));
    int64_t nbn = (n + 127) / 128, nbk = (k + 127) / 128;
    float *sc = malloc(sizeof *sc * (size_t)(n > nbn * nbk ? n : nbn * nbk));
    if (!q || !sc) {
        free(q);
        free(sc);
        free(wf);
        return qs_errf(s->err, "%s: out of memory", w->name);
    }
    const char *scale_name = "weight_scale";
    int sndim;
    int64_t sshape[2];
    int64_t count;
    bool per_channel = t == QS_QTARGET_FP8_DYNAMIC && f != QS_QFORMAT_FP8;
    if (t == QS_QTARGET_FP8_BLOCK) {
        qs_quantize_fp8_block(wf, n, k, 128, 128, rnd, q, sc);
        sndim = 2, sshape[0] = nbn, sshape[1] = nbk, count = nbn * nbk;
        if (f == QS_QFORMAT_FP8)
            scale_name = "weight_scale_inv";
    } else if (per_channel) {
        qs_quantize_fp8_channel(wf, n, k, rnd, q, sc);
        count = n;
        if (ct)
            sndim = 2, sshape[0] = n, sshape[1] = 1;
        else
            sndim = 1, sshape[0] = n; /* ModelOpt FP8_PER_CHANNEL_PER_TOKEN: [out] */
    } else {
        /* per-tensor, from the sibling group's amax */
        sc[0] = rnd(L->wamax / QS_E4M3_MAX);
        if (!(sc[0] > 0.0f))
            sc[0] = 1.0f;
        qs_quantize_fp8_with_scale(wf, n, k, sc[0], q);
        count = 1;
        sndim = ct ? 1 : 0, sshape[0] = 1;
    }
    rc = put(s, L->module, "weight", QS_DT_F8_E4M3, 2, wshape, q, (size_t)(n * k));
    if (!rc)
        rc = put_scales(s, L->module, scale_name, sdt, sndim, sshape, sc, count);
    if (!rc && t == QS_QTARGET_FP8_STATIC) {
        float is = rnd(L->xamax / QS_E4M3_MAX);
        if (!(is > 0.0f))
            is = 1.0f;
        rc = put_scales(s, L->module, "input_scale", sdt, ct ? 1 : 0, one, &is, 1);
    }
    free(q);
    free(sc);
    free(wf);
    return rc;
}

/* ---- calibration ------------------------------------------------------------------------------- */

/* "model.layers.3.mlp.experts.5.up_proj" -> layer "model.layers.3.mlp.experts", role "in";
 * down_proj / w2 have role "down". Returns false for non-experts. */
static bool expert_role(const char *module, char *layer, size_t cap, const char **role)
{
    const char *p = strstr(module, ".experts.");
    if (!p)
        return false;
    snprintf(layer, cap, "%.*s", (int)(p - module + 8), module);
    *role = ends_with(module, ".down_proj") || ends_with(module, ".w2") ? "down" : "in";
    return true;
}

static int apply_calibration(lin *L, int n, qs_err *err)
{
    for (int i = 0; i < n; i++)
        if (L[i].quantize)
            L[i].xamax = qs_reference_calibration_amax(L[i].module);
    for (int i = 0; i < n; i++) {
        if (!L[i].quantize || L[i].xamax >= 0)
            continue;
        char layer[256], other[256];
        const char *role, *orole;
        if (!expert_role(L[i].module, layer, sizeof layer, &role))
            return qs_errf(err, "calibration: layer %s never ran, so it has no activation range (is it used by the "
                           "model forward?)", L[i].module);
        float best = -1.0f;
        for (int j = 0; j < n; j++)
            if (L[j].quantize && expert_role(L[j].module, other, sizeof other, &orole) && !strcmp(other, layer) &&
                !strcmp(orole, role)) {
                float a = qs_reference_calibration_amax(L[j].module);
                if (a > best)
                    best = a;
            }
        if (best < 0)
            return qs_errf(err, "calibration: no expert of %s received a token, so %s has no activation range", layer,
                           L[i].module);
        L[i].xamax = best;
    }
    return 0;
}

/* ---- files ---------------------------------------------------------------------------------------- */

static int copy_if_exists(const char *in_dir, const char *out_dir, const char *name, qs_err *err)
{
    char src[2048], dst[2048];
    qs_path_join(src, sizeof src, in_dir, name);
    if (!qs_file_exists(src))
        return 0;
    char *data;
    size_t len;
    if (qs_read_file(src, &data, &len, err))
        return -1;
    int rc = qs_write_file(qs_path_join(dst, sizeof dst, out_dir, name), data, len, err);
    free(data);
    return rc;
}

/* ---- shards --------------------------------------------------------------------------------------- */

/* Bytes a quantized layer takes on disk (to plan shards). */
static uint64_t quantized_bytes(const lin *l, qs_quant_target t, qs_quant_format f)
{
    uint64_t n = (uint64_t)l->w->shape[0], k = (uint64_t)l->w->shape[1];
    uint64_t es = f == QS_QFORMAT_COMPRESSED_TENSORS ? (uint64_t)qs_dtype_bits(l->w->dtype) / 8 : 4;
    if (t == QS_QTARGET_NVFP4 || t == QS_QTARGET_NVFP4_W4A16)
        return n * k / 2 + n * k / 16 + 4 + (t == QS_QTARGET_NVFP4 ? 4 : 0);
    uint64_t scales = t == QS_QTARGET_FP8_BLOCK ? ((n + 127) / 128) * ((k + 127) / 128)
                      : t == QS_QTARGET_FP8_DYNAMIC && f != QS_QFORMAT_FP8 ? n : 1;
    return n * k + scales * es + (t == QS_QTARGET_FP8_STATIC ? es : 0);
}

/* Writes the output tensors in checkpoint order, one shard at a time (so memory holds one
 * shard of quantized data, not the whole model): model.safetensors, or
 * model-0000N-of-0000M.safetensors plus model.safetensors.index.json. */
static int write_shards(const qs_checkpoint *ck, lin *L, int nl, qs_quant_target t, qs_quant_format f,
                        const char *out_dir, size_t shard_bytes, qs_err *err)
{
    size_t nt = qs_checkpoint_count(ck);
    lin **lin_of = calloc(nt + 1, sizeof *lin_of);
    int *shard_of = malloc(sizeof *shard_of * (nt + 1));
    cJSON *map = cJSON_CreateObject();
    int rc = -1, n_shards = 0;
    uint64_t total = 0, in_shard = 0;
    if (!lin_of || !shard_of || !map) {
        qs_errf(err, "quantize: out of memory");
        goto out;
    }
    for (int i = nl - 1; i >= 0; i--) /* the first lin of each tensor (split experts: several in a row) */
        lin_of[L[i].tensor_index] = &L[i];
    for (size_t i = 0; i < nt; i++) {
        const lin *l = lin_of[i];
        uint64_t b = l && l->quantize ? quantized_bytes(l, t, f) : qs_checkpoint_tensor(ck, i)->nbytes;
        for (const lin *x = l; l && l->split && x < L + nl && x->tensor_index == i; x++)
            b += x == l ? 0 : x->quantize ? quantized_bytes(x, t, f) : x->w->nbytes;
        if (n_shards == 0 || (in_shard > 0 && in_shard + b > shard_bytes)) {
            n_shards++;
            in_shard = 0;
        }
        shard_of[i] = n_shards - 1;
        in_shard += b;
    }
    char path[2048];
    unlink(qs_path_join(path, sizeof path, out_dir, "model.safetensors"));
    unlink(qs_path_join(path, sizeof path, out_dir, "model.safetensors.index.json"));
    for (int sh = 0; sh < n_shards; sh++) {
        char fname[64];
        if (n_shards == 1)
            snprintf(fname, sizeof fname, "model.safetensors");
        else
            snprintf(fname, sizeof fname, "model-%05d-of-%05d.safetensors", sh + 1, n_shards);
        qs_st_writer *w = qs_st_writer_new();
        if (!w) {
            qs_errf(err, "quantize: out of memory");
            goto out;
        }
        qs_st_writer_set_metadata(w, "format", "pt");
        sink s = {w, err, map, fname};
        int wrc = 0;
        for (size_t i = 0; i < nt && wrc == 0; i++) {
            if (shard_of[i] != sh)
                continue;
            const qs_tensor *ten = qs_checkpoint_tensor(ck, i);
            if (lin_of[i] && lin_of[i]->split) { /* the experts of a fused 3-D tensor, one by one */
                for (const lin *x = lin_of[i]; wrc == 0 && x < L + nl && x->tensor_index == i; x++) {
                    if (x->quantize) {
                        wrc = quantize_linear(&s, x, t, f);
                        continue;
                    }
                    cJSON_AddStringToObject(map, x->w->name, fname);
                    wrc = qs_st_writer_add(w, x->w->name, x->w->dtype, 2, x->w->shape, x->w->data, x->w->nbytes, err);
                }
            } else if (lin_of[i] && lin_of[i]->quantize) {
                wrc = quantize_linear(&s, lin_of[i], t, f);
            } else {
                cJSON_AddStringToObject(map, ten->name, fname);
                wrc = qs_st_writer_add(w, ten->name, ten->dtype, ten->ndim, ten->shape, ten->data, ten->nbytes, err);
            }
        }
        if (wrc == 0) {
            total += qs_st_writer_total_bytes(w);
            wrc = qs_st_writer_write(w, qs_path_join(path, sizeof path, out_dir, fname), err);
        }
        qs_st_writer_free(w);
        if (wrc)
            goto out;
    }
    if (n_shards > 1) {
        cJSON *root = cJSON_CreateObject();
        cJSON *meta = cJSON_AddObjectToObject(root, "metadata");
        cJSON_AddNumberToObject(meta, "total_size", (double)total);
        cJSON_AddItemToObject(root, "weight_map", map);
        map = NULL;
        int irc = qs_write_json_file(out_dir, "model.safetensors.index.json", root, err);
        cJSON_Delete(root);
        if (irc)
            goto out;
    }
    rc = 0;
out:
    cJSON_Delete(map);
    free(lin_of);
    free(shard_of);
    return rc;
}

/* ---- the driver ------------------------------------------------------------------------------------- */

static bool needs_calibration(qs_quant_target t) { return t == QS_QTARGET_FP8_STATIC || t == QS_QTARGET_NVFP4; }

int qs_quantize_checkpoint(const char *in_dir, const char *out_dir, const qs_quantize_options *opt, qs_err *err)
{
    qs_quant_target t = opt->target;
    qs_quant_format f = opt->format;
    if (f == QS_QFORMAT_FP8 && (t == QS_QTARGET_NVFP4 || t == QS_QTARGET_NVFP4_W4A16))
        return qs_errf(err, "--format fp8 holds FP8 only; write %s as compressed-tensors or modelopt",
                       qs_quant_target_name(t));
    if (f == QS_QFORMAT_MODELOPT && t == QS_QTARGET_FP8_BLOCK)
        return qs_errf(err, "ModelOpt has no 128x128 block W8A8 format; write fp8-block as compressed-tensors or fp8");
    char path[2048];
    char *cfg_text;
    if (qs_read_file(qs_path_join(path, sizeof path, in_dir, "config.json"), &cfg_text, NULL, err))
        return -1;
    cJSON *cfg = cJSON_Parse(cfg_text);
    free(cfg_text);
    if (!cJSON_IsObject(cfg)) {
        cJSON_Delete(cfg);
        return qs_errf(err, "%s: not a JSON object", path);
    }
    const cJSON *existing = cJSON_GetObjectItemCaseSensitive(cfg, "quantization_config");
    if ((existing && !cJSON_IsNull(existing)) || qs_file_exists(qs_path_join(path, sizeof path, in_dir,
                                                                             "hf_quant_config.json"))) {
        cJSON_Delete(cfg);
        return qs_errf(err, "%s is already quantized (it has a quantization config); quantize needs a BF16, F16 or "
                       "F32 checkpoint", in_dir);
    }
    qs_checkpoint *ck;
    if (qs_checkpoint_open(in_dir, false, &ck, err)) {
        cJSON_Delete(cfg);
        return -1;
    }
    size_t nt = qs_checkpoint_count(ck), cap = nt + 1;
    for (size_t i = 0; i < nt; i++) /* room for every expert of the fused 3-D tensors */
        if (fused_experts(qs_checkpoint_tensor(ck, i)))
            cap += 2 * (size_t)qs_checkpoint_tensor(ck, i)->shape[0];
    lin *L = calloc(cap, sizeof *L);
    const char **skipped = calloc(cap, sizeof *skipped);
    int rc = -1, nl = 0;
    qs_quant_excludes ex = {.skipped = skipped};
    if (!L || !skipped) {
        qs_errf(err, "quantize: out of memory");
        goto out;
    }
    bool fp4 = t == QS_QTARGET_NVFP4 || t == QS_QTARGET_NVFP4_W4A16;
    for (size_t i = 0; i < nt; i++) {
        const qs_tensor *ten = qs_checkpoint_tensor(ck, i);
        if (fused_experts(ten) && is_float(ten->dtype)) {
            bool gu = ends_with(ten->name, "gate_up_proj");
            size_t base = strlen(ten->name) - (gu ? 12 : 9); /* up to "experts." */
            for (int64_t e = 0; e < ten->shape[0]; e++)
                for (int j = gu ? 0 : 2; j < (gu ? 2 : 3); j++) {
                    lin *l = &L[nl++];
                    snprintf(l->module, sizeof l->module, "%.*s%lld.%s", (int)base, ten->name, (long long)e,
                             j == 0 ? "gate_proj" : j == 1 ? "up_proj" : "down_proj");
                    l->split = true;
                    l->tensor_index = i;
                    l->xamax = -1.0f;
                    l->quantize = !(fp4 && ten->shape[j < 2 ? 1 : 2] % 16);
                    if (!(l->w = split_expert(ten, e, j, l->module))) {
                        qs_errf(err, "%s: out of memory splitting the experts", ten->name);
                        goto out;
                    }
                    if (!l->quantize) {
                        qs_warn("%s: in_features not a multiple of 16, kept unquantized", l->module);
                        skipped[ex.n_skipped++] = l->module;
                    }
                    sibling_key(l->module, l->group, sizeof l->group);
                }
            continue;
        }
        if (!ends_with(ten->name, ".weight") || ten->ndim != 2)
            continue;
        if (!is_float(ten->dtype)) {
            qs_errf(err, "tensor %s: dtype %s; quantize needs BF16, F16 or F32 weights", ten->name,
                    qs_dtype_name(ten->dtype));
            goto out;
        }
        lin *l = &L[nl++];
        snprintf(l->module, sizeof l->module, "%.*s", (int)(strlen(ten->name) - 7), ten->name);
        l->w = ten;
        l->tensor_index = i;
        l->xamax = -1.0f;
        const char *m = l->module;
        bool router = ends_with(m, ".mlp.gate") || ends_with(m, ".block_sparse_moe.gate") ||
                      ends_with(m, ".feed_forward.router");
        bool vision = !strncmp(m, "vision_model.", 13) || !strncmp(m, "multi_modal_projector.", 22);
        bool keep = ends_with(m, "lm_head") || strstr(m, "embed_tokens") || router ||
                    ends_with(m, "shared_expert_gate") || vision;
        ex.llama4_router |= ends_with(m, ".feed_forward.router");
        ex.vision |= vision;
        ex.lm_head |= ends_with(m, "lm_head");
        ex.qwen_router |= ends_with(m, ".mlp.gate");
        ex.mixtral_router |= ends_with(m, ".block_sparse_moe.gate");
        ex.shared_expert_gate |= ends_with(m, "shared_expert_gate");
        if (!keep && fp4 && ten->shape[1] % 16) {
            qs_warn("%s: in_features %lld is not a multiple of 16, kept unquantized", m, (long long)ten->shape[1]);
            skipped[ex.n_skipped++] = m;
            keep = true;
        }
        l->quantize = !keep;
        sibling_key(m, l->group, sizeof l->group);
    }
    ex.lm_head = true; /* the tools list lm_head even when the embeddings are tied */
    /* weight amax per module, then per sibling group */
    for (int i = 0; i < nl; i++) {
        if (!L[i].quantize)
            continue;
        float *wf = to_f32(L[i].w);
        if (!wf) {
            qs_errf(err, "%s: out of memory", L[i].w->name);
            goto out;
        }
        L[i].wamax = qs_amax(wf, L[i].w->numel);
        free(wf);
    }
    for (int i = 0; i < nl; i++)
        for (int j = 0; j < nl; j++)
            if (L[i].quantize && L[j].quantize && !strcmp(L[i].group, L[j].group) && L[j].wamax > L[i].wamax)
                L[i].wamax = L[j].wamax;
    if (needs_calibration(t)) {
        qs_info("calibrating activation ranges of %s with the reference kernels", in_dir);
        if (qs_calibrate_activations(in_dir, opt->calib_tokens, err) || apply_calibration(L, nl, err)) {
            qs_reference_calibration_clear();
            goto out;
        }
        qs_reference_calibration_clear();
    }
    if (mkdir(out_dir, 0755) != 0 && errno != EEXIST) {
        qs_errf(err, "cannot create %s: %s", out_dir, strerror(errno));
        goto out;
    }
    if (write_shards(ck, L, nl, t, f, out_dir, opt->shard_bytes ? opt->shard_bytes : (size_t)5000000000ull, err))
        goto out;
    cJSON *qc = qs_quant_format_config(t, f, &ex);
    if (!qc) {
        qs_errf(err, "%s cannot be written as %s", qs_quant_target_name(t), qs_quant_format_name(f));
        goto out;
    }
    cJSON_DeleteItemFromObjectCaseSensitive(cfg, "quantization_config");
    cJSON_AddItemToObject(cfg, "quantization_config", qc);
    if (qs_write_json_file(out_dir, "config.json", cfg, err))
        goto out;
    if (f == QS_QFORMAT_MODELOPT) {
        cJSON *hf = qs_quant_format_hf_quant_config(t, &ex);
        int hrc = qs_write_json_file(out_dir, "hf_quant_config.json", hf, err);
        cJSON_Delete(hf);
        if (hrc)
            goto out;
    }
    static const char *const COPY[] = {"tokenizer.json",  "tokenizer_config.json", "generation_config.json",
                                       "special_tokens_map.json", "chat_template.jinja", "chat_template.json",
                                       "vocab.json", "merges.txt", "tokenizer.model", "added_tokens.json"};
    for (size_t i = 0; i < sizeof COPY / sizeof COPY[0]; i++)
        if (copy_if_exists(in_dir, out_dir, COPY[i], err))
            goto out;
    rc = 0;
out:
    for (int i = 0; L && i < nl; i++)
        free_split(&L[i]);
    free(L);
    free(skipped);
    qs_checkpoint_close(ck);
    cJSON_Delete(cfg);
    return rc;
}
