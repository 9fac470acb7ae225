/* quant_config.c — parses the quantization config of a checkpoint (see quant_config.h) and
 * answers "how is this module quantized?" by the producer's own matching rules: compressed-tensors
 * targets/ignore with "re:" regexes anchored at the start (Python re.match, via PCRE2), ModelOpt
 * exclude_modules as fnmatch wildcards, fp8 ignored_layers / modules_to_not_convert as substrings. */
#include "quant/quant_config.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <cjson/cJSON.h>
#include <fnmatch.h>
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/fileio.h"

#define SUPPORTED_METHODS "compressed-tensors, fp8, modelopt"
#define SUPPORTED_CT_FORMATS "float-quantized, nvfp4-pack-quantized, mixed-precision, dense"
#define SUPPORTED_MODELOPT_ALGOS "FP8, FP8_PER_CHANNEL_PER_TOKEN, FP8_PB_WO, NVFP4, W4A16_NVFP4, MIXED_PRECISION"

const char *qs_quant_method_name(qs_quant_method m)
{
    switch (m) {
    case QS_QMETHOD_NONE: return "none";
    case QS_QMETHOD_COMPRESSED_TENSORS: return "compressed-tensors";
    case QS_QMETHOD_FP8: return "fp8";
    case QS_QMETHOD_MODELOPT: return "modelopt";
    }
    return "unknown";
}

const char *qs_quant_strategy_name(qs_quant_strategy s)
{
    static const char *const names[] = {"tensor", "channel", "group", "block", "token", "tensor_group"};
    return (unsigned)s < sizeof names / sizeof names[0] ? names[s] : "unknown";
}

/* Compiles a "re:" pattern anchored at the start like Python's re.match. */
static void *compile_re(const char *pattern, const char *where, qs_err *err)
{
    int code;
    PCRE2_SIZE off;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, PCRE2_ANCHORED | PCRE2_UTF, &code,
                                   &off, NULL);
    if (!re) {
        PCRE2_UCHAR msg[160];
        pcre2_get_error_message(code, msg, sizeof msg);
        qs_errf(err, "%s: regex \"%s\" does not compile at offset %zu: %s", where, pattern, (size_t)off, (char *)msg);
    }
    return re;
}

static bool re_matches(void *re, const char *s)
{
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
    if (!md)
        return false;
    int rc = pcre2_match(re, (PCRE2_SPTR)s, strlen(s), 0, 0, md, NULL);
    pcre2_match_data_free(md);
    return rc >= 0;
}

/* Reads a JSON array of strings into a malloc'd list (and compiles "re:" entries if re_out). */
static int read_string_list(const cJSON *arr, const char *where, char ***out, void ***re_out, int *n, qs_err *err)
{
    *out = NULL;
    if (re_out)
        *re_out = NULL;
    *n = 0;
    if (!arr || cJSON_IsNull(arr))
        return 0;
    if (!cJSON_IsArray(arr))
        return qs_errf(err, "%s: expected a list of strings", where);
    int count = cJSON_GetArraySize(arr);
    *out = calloc((size_t)count + 1, sizeof(char *));
    if (re_out)
        *re_out = calloc((size_t)count + 1, sizeof(void *));
    if (!*out || (re_out && !*re_out))
        return qs_errf(err, "%s: out of memory", where);
    const cJSON *it;
    cJSON_ArrayForEach(it, arr) {
        if (!cJSON_IsString(it))
            return qs_errf(err, "%s[%d]: expected a string", where, *n);
        (*out)[*n] = strdup(it->valuestring);
        if (!(*out)[*n])
            return qs_errf(err, "%s: out of memory", where);
        if (re_out && !strncmp(it->valuestring, "re:", 3)) {
            char w[128];
            snprintf(w, sizeof w, "%s[%d]", where, *n);
            (*re_out)[*n] = compile_re(it->valuestring + 3, w, err);
            if (!(*re_out)[*n]) {
                (*n)++;
                return -1;
            }
        }
        (*n)++;
    }
    return 0;
}

static void free_string_list(char **list, void **re, int n)
{
    for (int i = 0; i < n; i++) {
        free(list ? list[i] : NULL);
        if (re && re[i])
            pcre2_code_free(re[i]);
    }
    free(list);
    free(re);
}

/* ---- compressed-tensors ---------------------------------------------------------------- */

static int parse_strategy(const char *s, qs_quant_strategy *out)
{
    static const struct { const char *name; qs_quant_strategy st; } map[] = {
        {"tensor", QS_QSTRAT_TENSOR}, {"channel", QS_QSTRAT_CHANNEL}, {"group", QS_QSTRAT_GROUP},
        {"block", QS_QSTRAT_BLOCK},   {"token", QS_QSTRAT_TOKEN},     {"tensor_group", QS_QSTRAT_TENSOR_GROUP},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(s, map[i].name)) {
            *out = map[i].st;
            return 0;
        }
    return -1;
}

/* Parses a CT QuantizationArgs object; `input` selects the activation-side rules. */
static int parse_ct_args(const cJSON *o, const char *where, bool input, qs_quant_args *a, qs_err *err)
{
    memset(a, 0, sizeof *a);
    if (!o || cJSON_IsNull(o))
        return 0;
    if (!cJSON_IsObject(o))
        return qs_errf(err, "%s: expected an object", where);
    a->present = true;
    const cJSON *bits = cJSON_GetObjectItemCaseSensitive(o, "num_bits");
    if (!cJSON_IsNumber(bits))
        return qs_errf(err, "%s.num_bits: missing or not a number", where);
    a->num_bits = bits->valueint;
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(o, "type");
    if (cJSON_IsString(type) && strcmp(type->valuestring, "float"))
        return qs_errf(err, "%s.type: \"%s\" is not supported (qserve supports type \"float\": FP8 E4M3 and NVFP4)",
                       where, type->valuestring);
    const cJSON *sym = cJSON_GetObjectItemCaseSensitive(o, "symmetric");
    if (cJSON_IsFalse(sym))
        return qs_errf(err, "%s.symmetric: asymmetric quantization (zero points) is not supported", where);
    const cJSON *gs = cJSON_GetObjectItemCaseSensitive(o, "group_size");
    a->group_size = cJSON_IsNumber(gs) ? gs->valueint : 0;
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(o, "strategy");
    if (cJSON_IsString(st)) {
        if (parse_strategy(st->valuestring, &a->strategy))
            return qs_errf(err, "%s.strategy: \"%s\" is not supported (supported: tensor, channel, group, block, token, "
                           "tensor_group)", where, st->valuestring);
    } else {
        a->strategy = !cJSON_IsNumber(gs) ? QS_QSTRAT_TENSOR : gs->valueint == -1 ? QS_QSTRAT_CHANNEL : QS_QSTRAT_GROUP;
    }
    const cJSON *dyn = cJSON_GetObjectItemCaseSensitive(o, "dynamic");
    a->dynamic = cJSON_IsTrue(dyn) || (cJSON_IsString(dyn) && !strcmp(dyn->valuestring, "local"));
    if (a->strategy == QS_QSTRAT_TOKEN)
        a->dynamic = true;
    if (a->strategy == QS_QSTRAT_BLOCK) {
        const cJSON *bs = cJSON_GetObjectItemCaseSensitive(o, "block_structure");
        if (cJSON_IsArray(bs) && cJSON_GetArraySize(bs) == 2 && cJSON_IsNumber(cJSON_GetArrayItem(bs, 0)) &&
            cJSON_IsNumber(cJSON_GetArrayItem(bs, 1))) {
            a->block_n = cJSON_GetArrayItem(bs, 0)->valueint;
            a->block_k = cJSON_GetArrayItem(bs, 1)->valueint;
        } else if (cJSON_IsString(bs) && sscanf(bs->valuestring, "%dx%d", &a->block_n, &a->block_k) == 2) {
        } else {
            return qs_errf(err, "%s.block_structure: expected [rows, cols] with strategy \"block\"", where);
        }
        if (a->block_n <= 0 || a->block_k <= 0)
            return qs_errf(err, "%s.block_structure: block sizes must be positive", where);
    }
    /* Which combinations qserve runs. */
    if (a->num_bits == 8) {
        bool ok = input ? (a->strategy == QS_QSTRAT_TENSOR || a->strategy == QS_QSTRAT_TOKEN ||
                           (a->strategy == QS_QSTRAT_GROUP && a->group_size > 0 && a->dynamic))
                        : (a->strategy == QS_QSTRAT_TENSOR || a->strategy == QS_QSTRAT_CHANNEL ||
                           a->strategy == QS_QSTRAT_BLOCK);
        if (!ok)
            return qs_errf(err, "%s: 8-bit float with strategy \"%s\"%s is not supported (supported: %s)", where,
                           qs_quant_strategy_name(a->strategy), a->dynamic ? " (dynamic)" : " (static)",
                           input ? "tensor static or dynamic, token dynamic, group dynamic"
                                 : "tensor, channel, block");
        if (!input && a->dynamic)
            return qs_errf(err, "%s.dynamic: dynamic weight scales are not supported", where);
    } else if (a->num_bits == 4) {
        if (a->strategy != QS_QSTRAT_TENSOR_GROUP || a->group_size != 16)
            return qs_errf(err, "%s: 4-bit float with strategy \"%s\" and group_size %d is not supported (qserve "
                           "supports NVFP4: tensor_group, group_size 16)", where,
                           qs_quant_strategy_name(a->strategy), a->group_size);
    } else {
        return qs_errf(err, "%s.num_bits: %d is not supported (supported: 8 for FP8, 4 for NVFP4)", where,
                       a->num_bits);
    }
    return 0;
}

static int ct_format_ok(const char *fmt)
{
    return !strcmp(fmt, "float-quantized") || !strcmp(fmt, "nvfp4-pack-quantized") ||
           !strcmp(fmt, "mixed-precision") || !strcmp(fmt, "dense") || !strcmp(fmt, "naive-quantized");
}

static int parse_ct(const cJSON *root, qs_quant_config *qc, qs_err *err)
{
    qc->method = QS_QMETHOD_COMPRESSED_TENSORS;
    qc->ignore_style = QS_IGNORE_CT;
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(root, "format");
    const char *top_fmt = cJSON_IsString(fmt) ? fmt->valuestring : "";
    if (*top_fmt && !ct_format_ok(top_fmt))
        return qs_errf(err, "quantization_config.format: \"%s\" is not supported (supported: %s)", top_fmt,
                       SUPPORTED_CT_FORMATS);
    snprintf(qc->description, sizeof qc->description, "compressed-tensors%s%s", *top_fmt ? " " : "", top_fmt);
    const cJSON *tc = cJSON_GetObjectItemCaseSensitive(root, "transform_config");
    if (cJSON_IsObject(tc) && cJSON_GetArraySize(tc) > 0)
        return qs_errf(err, "quantization_config.transform_config: transforms (rotations) are not supported");
    const cJSON *sp = cJSON_GetObjectItemCaseSensitive(root, "sparsity_config");
    if (cJSON_IsObject(sp)) {
        const cJSON *spf = cJSON_GetObjectItemCaseSensitive(sp, "format");
        if (cJSON_IsString(spf) && strcmp(spf->valuestring, "dense"))
            return qs_errf(err, "quantization_config.sparsity_config.format: \"%s\" is not supported (only dense)",
                           spf->valuestring);
    }
    const cJSON *kv = cJSON_GetObjectItemCaseSensitive(root, "kv_cache_scheme");
    if (cJSON_IsObject(kv))
        snprintf(qc->kv_cache_scheme, sizeof qc->kv_cache_scheme, "fp8");
    const cJSON *groups = cJSON_GetObjectItemCaseSensitive(root, "config_groups");
    if (!cJSON_IsObject(groups))
        return qs_errf(err, "quantization_config.config_groups: missing or not an object");
    int ng = cJSON_GetArraySize(groups);
    qc->groups = calloc((size_t)ng + 1, sizeof *qc->groups);
    if (!qc->groups)
        return qs_errf(err, "quantization_config: out of memory");
    const cJSON *g;
    cJSON_ArrayForEach(g, groups) {
        qs_quant_group *qg = &qc->groups[qc->n_groups++];
        snprintf(qg->name, sizeof qg->name, "%s", g->string ? g->string : "?");
        char where[160];
        snprintf(where, sizeof where, "quantization_config.config_groups.%s", qg->name);
        if (!cJSON_IsObject(g))
            return qs_errf(err, "%s: expected an object", where);
        char w2[200];
        snprintf(w2, sizeof w2, "%s.targets", where);
        if (read_string_list(cJSON_GetObjectItemCaseSensitive(g, "targets"), w2, &qg->targets, &qg->target_re,
                             &qg->n_targets, err))
            return -1;
        snprintf(w2, sizeof w2, "%s.weights", where);
        if (parse_ct_args(cJSON_GetObjectItemCaseSensitive(g, "weights"), w2, false, &qg->lq.weights, err))
            return -1;
        snprintf(w2, sizeof w2, "%s.input_activations", where);
        if (parse_ct_args(cJSON_GetObjectItemCaseSensitive(g, "input_activations"), w2, true, &qg->lq.input, err))
            return -1;
        const cJSON *oa = cJSON_GetObjectItemCaseSensitive(g, "output_activations");
        if (oa && !cJSON_IsNull(oa))
            return qs_errf(err, "%s.output_activations: output activation quantization is not supported", where);
        const cJSON *gf = cJSON_GetObjectItemCaseSensitive(g, "format");
        const char *f = cJSON_IsString(gf) ? gf->valuestring : top_fmt;
        if (*f && !ct_format_ok(f))
            return qs_errf(err, "%s.format: \"%s\" is not supported (supported: %s)", where, f, SUPPORTED_CT_FORMATS);
        snprintf(qg->lq.source, sizeof qg->lq.source, "config_groups.%s", qg->name);
        if (!qg->lq.weights.present) {
            qg->lq.format = QS_LQ_NONE;
            if (qg->lq.input.present)
                return qs_errf(err, "%s: activation-only quantization (no weights) is not supported", where);
            continue;
        }
        qg->lq.format = qg->lq.weights.num_bits == 4 ? QS_LQ_NVFP4 : QS_LQ_FP8;
        if (qg->lq.format == QS_LQ_NVFP4 && *f && strcmp(f, "nvfp4-pack-quantized") && strcmp(f, "mixed-precision"))
            return qs_errf(err, "%s: 4-bit float weights need format \"nvfp4-pack-quantized\", not \"%s\"", where, f);
        if (qg->lq.format == QS_LQ_FP8 && !strcmp(f, "nvfp4-pack-quantized"))
            return qs_errf(err, "%s: format \"nvfp4-pack-quantized\" with 8-bit weights is inconsistent", where);
        if (qg->lq.input.present && qg->lq.input.num_bits != qg->lq.weights.num_bits)
            return qs_errf(err, "%s: %d-bit weights with %d-bit activations is not supported", where,
                           qg->lq.weights.num_bits, qg->lq.input.num_bits);
    }
    return read_string_list(cJSON_GetObjectItemCaseSensitive(root, "ignore"), "quantization_config.ignore",
                            &qc->ignore, &qc->ignore_re, &qc->n_ignore, err);
}

/* ---- quant_method "fp8" ------------------------------------------------------------------- */

static int parse_fp8(const cJSON *root, qs_quant_config *qc, qs_err *err)
{
    qc->method = QS_QMETHOD_FP8;
    qc->ignore_style = QS_IGNORE_SUBSTRING;
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(root, "fmt");
    if (cJSON_IsString(fmt) && strcmp(fmt->valuestring, "e4m3"))
        return qs_errf(err, "quantization_config.fmt: \"%s\" is not supported (supported: e4m3)", fmt->valuestring);
    const cJSON *sf = cJSON_GetObjectItemCaseSensitive(root, "scale_fmt");
    if (cJSON_IsString(sf)) {
        if (!strcmp(sf->valuestring, "ue8m0"))
            qc->scale_fmt_ue8m0 = true;
        else if (strcmp(sf->valuestring, "float"))
            return qs_errf(err, "quantization_config.scale_fmt: \"%s\" is not supported (supported: float, ue8m0)",
                           sf->valuestring);
    }
    const cJSON *as = cJSON_GetObjectItemCaseSensitive(root, "activation_scheme");
    const char *scheme = cJSON_IsString(as) ? as->valuestring : "dynamic";
    if (strcmp(scheme, "dynamic") && strcmp(scheme, "static"))
        return qs_errf(err, "quantization_config.activation_scheme: \"%s\" is not supported (supported: dynamic, "
                       "static)", scheme);
    bool is_static = !strcmp(scheme, "static");
    qs_layer_quant *lq = &qc->all_layers;
    lq->format = QS_LQ_FP8;
    lq->weights = (qs_quant_args){.present = true, .num_bits = 8, .strategy = QS_QSTRAT_TENSOR};
    lq->input = (qs_quant_args){.present = true, .num_bits = 8, .strategy = QS_QSTRAT_TOKEN, .dynamic = true};
    const cJSON *wbs = cJSON_GetObjectItemCaseSensitive(root, "weight_block_size");
    if (wbs && !cJSON_IsNull(wbs)) {
        if (!cJSON_IsArray(wbs) || cJSON_GetArraySize(wbs) != 2 || !cJSON_IsNumber(cJSON_GetArrayItem(wbs, 0)) ||
            !cJSON_IsNumber(cJSON_GetArrayItem(wbs, 1)) || cJSON_GetArrayItem(wbs, 0)->valueint <= 0 ||
            cJSON_GetArrayItem(wbs, 1)->valueint <= 0)
            return qs_errf(err, "quantization_config.weight_block_size: expected two positive integers [n, k]");
        if (is_static)
            return qs_errf(err, "quantization_config.activation_scheme: \"static\" with weight_block_size is not "
                           "supported (block FP8 quantizes activations dynamically)");
        lq->weights.strategy = QS_QSTRAT_BLOCK;
        lq->weights.block_n = cJSON_GetArrayItem(wbs, 0)->valueint;
        lq->weights.block_k = cJSON_GetArrayItem(wbs, 1)->valueint;
        lq->input.strategy = QS_QSTRAT_GROUP;
        lq->input.group_size = lq->weights.block_k;
        snprintf(qc->description, sizeof qc->description, "fp8 block %dx%d (weight_scale_inv)", lq->weights.block_n,
                 lq->weights.block_k);
    } else {
        if (is_static)
            lq->input = (qs_quant_args){.present = true, .num_bits = 8, .strategy = QS_QSTRAT_TENSOR};
        snprintf(qc->description, sizeof qc->description, "fp8 per-tensor (%s activations)", scheme);
    }
    snprintf(lq->source, sizeof lq->source, "quant_method fp8");
    const char *key = "ignored_layers";
    const cJSON *ign = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!ign) {
        key = "modules_to_not_convert";
        ign = cJSON_GetObjectItemCaseSensitive(root, key);
    }
    char where[64];
    snprintf(where, sizeof where, "quantization_config.%s", key);
    return read_string_list(ign, where, &qc->ignore, NULL, &qc->n_ignore, err);
}

/* ---- ModelOpt ------------------------------------------------------------------------------ */

static int modelopt_algo(const char *algo, int group_size, const char *where, qs_layer_quant *lq, qs_err *err)
{
    memset(lq, 0, sizeof *lq);
    snprintf(lq->source, sizeof lq->source, "quant_algo %s", algo);
    qs_quant_args fp8_tensor = {.present = true, .num_bits = 8, .strategy = QS_QSTRAT_TENSOR};
    qs_quant_args fp4 = {.present = true, .num_bits = 4, .strategy = QS_QSTRAT_TENSOR_GROUP, .group_size = 16};
    if (!strcmp(algo, "FP8")) {
        lq->format = QS_LQ_FP8;
        lq->weights = fp8_tensor;
        lq->input = fp8_tensor;
    } else if (!strcmp(algo, "FP8_PER_CHANNEL_PER_TOKEN")) {
        lq->format = QS_LQ_FP8;
        lq->weights = fp8_tensor;
        lq->weights.strategy = QS_QSTRAT_CHANNEL;
        lq->input = (qs_quant_args){.present = true, .num_bits = 8, .strategy = QS_QSTRAT_TOKEN, .dynamic = true};
    } else if (!strcmp(algo, "FP8_PB_WO")) {
        lq->format = QS_LQ_FP8;
        lq->weights = (qs_quant_args){.present = true, .num_bits = 8, .strategy = QS_QSTRAT_BLOCK, .block_n = 128,
                                      .block_k = 128};
    } else if (!strcmp(algo, "NVFP4") || !strcmp(algo, "W4A16_NVFP4")) {
        if (group_size && group_size != 16)
            return qs_errf(err, "%s.group_size: %d is not supported for %s (NVFP4 uses 16)", where, group_size, algo);
        lq->format = QS_LQ_NVFP4;
        lq->weights = fp4;
        if (!strcmp(algo, "NVFP4"))
            lq->input = fp4;
    } else {
        return qs_errf(err, "%s.quant_algo: \"%s\" is not supported (supported: %s)", where, algo,
                       SUPPORTED_MODELOPT_ALGOS);
    }
    return 0;
}

/* `q` is hf_quant_config.json's "quantization" object or the flat config.json mirror. */
static int parse_modelopt(const cJSON *q, const char *where, qs_quant_config *qc, qs_err *err)
{
    qc->method = QS_QMETHOD_MODELOPT;
    qc->ignore_style = QS_IGNORE_FNMATCH;
    const cJSON *algo = cJSON_GetObjectItemCaseSensitive(q, "quant_algo");
    if (!cJSON_IsString(algo))
        return qs_errf(err, "%s.quant_algo: missing or not a string (supported: %s)", where, SUPPORTED_MODELOPT_ALGOS);
    snprintf(qc->quant_algo, sizeof qc->quant_algo, "%s", algo->valuestring);
    snprintf(qc->description, sizeof qc->description, "modelopt %s (%s)", qc->quant_algo, where);
    const cJSON *kv = cJSON_GetObjectItemCaseSensitive(q, "kv_cache_quant_algo");
    if (cJSON_IsString(kv)) {
        if (strcmp(kv->valuestring, "FP8"))
            return qs_errf(err, "%s.kv_cache_quant_algo: \"%s\" is not supported (supported: FP8, null)", where,
                           kv->valuestring);
        snprintf(qc->kv_cache_scheme, sizeof qc->kv_cache_scheme, "fp8");
    }
    const cJSON *gs = cJSON_GetObjectItemCaseSensitive(q, "group_size");
    int group_size = cJSON_IsNumber(gs) ? gs->valueint : 0;
    if (!strcmp(qc->quant_algo, "MIXED_PRECISION")) {
        const cJSON *layers = cJSON_GetObjectItemCaseSensitive(q, "quantized_layers");
        if (!cJSON_IsObject(layers))
            return qs_errf(err, "%s.quantized_layers: missing or not an object (required with MIXED_PRECISION)", where);
        int n = cJSON_GetArraySize(layers);
        qc->layers = calloc((size_t)n + 1, sizeof *qc->layers);
        if (!qc->layers)
            return qs_errf(err, "%s: out of memory", where);
        const cJSON *l;
        cJSON_ArrayForEach(l, layers) {
            qs_modelopt_layer *ml = &qc->layers[qc->n_layers++];
            ml->name = strdup(l->string ? l->string : "");
            if (!ml->name)
                return qs_errf(err, "%s: out of memory", where);
            char w[512];
            snprintf(w, sizeof w, "%s.quantized_layers.%s", where, ml->name);
            const cJSON *la = cJSON_GetObjectItemCaseSensitive(l, "quant_algo");
            if (!cJSON_IsString(la))
                return qs_errf(err, "%s.quant_algo: missing or not a string", w);
            const cJSON *lg = cJSON_GetObjectItemCaseSensitive(l, "group_size");
            if (modelopt_algo(la->valuestring, cJSON_IsNumber(lg) ? lg->valueint : 0, w, &ml->lq, err))
                return -1;
        }
    } else if (modelopt_algo(qc->quant_algo, group_size, where, &qc->all_layers, err)) {
        return -1;
    }
    const cJSON *ex = cJSON_GetObjectItemCaseSensitive(q, "exclude_modules");
    const char *key = "exclude_modules";
    if (!ex) {
        ex = cJSON_GetObjectItemCaseSensitive(q, "ignore");
        key = "ignore";
    }
    char w[160];
    snprintf(w, sizeof w, "%s.%s", where, key);
    return read_string_list(ex, w, &qc->ignore, NULL, &qc->n_ignore, err);
}

static int parse_hf_quant_config_file(const char *path, qs_quant_config *qc, qs_err *err)
{
    char *text;
    if (qs_read_file(path, &text, NULL, err))
        return -1;
    cJSON *root = cJSON_Parse(text);
    free(text);
    if (!root)
        return qs_errf(err, "%s: not valid JSON", path);
    int rc;
    const cJSON *q = cJSON_GetObjectItemCaseSensitive(root, "quantization");
    if (!cJSON_IsObject(q))
        rc = qs_errf(err, "%s: missing \"quantization\" object", path);
    else
        rc = parse_modelopt(q, "hf_quant_config.json quantization", qc, err);
    cJSON_Delete(root);
    return rc;
}

int qs_quant_config_parse(const char *json, const char *model_dir, qs_quant_config *qc, qs_err *err)
{
    memset(qc, 0, sizeof *qc);
    char hf_path[2048] = "";
    if (model_dir)
        qs_path_join(hf_path, sizeof hf_path, model_dir, "hf_quant_config.json");
    bool have_hf = *hf_path && qs_file_exists(hf_path);
    int rc = 0;
    if (!json) {
        if (have_hf)
            rc = parse_hf_quant_config_file(hf_path, qc, err);
        else
            snprintf(qc->description, sizeof qc->description, "unquantized");
        goto done;
    }
    cJSON *root = cJSON_Parse(json);
    if (!root)
        return qs_errf(err, "config.json quantization_config: not valid JSON");
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return qs_errf(err, "config.json quantization_config: expected an object");
    }
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(root, "quant_method");
    if (!cJSON_IsString(m)) {
        rc = qs_errf(err, "config.json quantization_config.quant_method: missing or not a string (supported: %s)",
                     SUPPORTED_METHODS);
    } else if (!strcmp(m->valuestring, "compressed-tensors")) {
        rc = parse_ct(root, qc, err);
    } else if (!strcmp(m->valuestring, "fp8")) {
        rc = parse_fp8(root, qc, err);
    } else if (!strncmp(m->valuestring, "modelopt", 8)) {
        if (have_hf) {
            rc = parse_hf_quant_config_file(hf_path, qc, err);
        } else {
            const cJSON *nested = cJSON_GetObjectItemCaseSensitive(root, "quantization");
            rc = parse_modelopt(cJSON_IsObject(nested) ? nested : root, "config.json quantization_config", qc, err);
        }
    } else {
        rc = qs_errf(err, "config.json quantization_config.quant_method: \"%s\" is not supported (supported: %s)",
                     m->valuestring, SUPPORTED_METHODS);
    }
    cJSON_Delete(root);
done:
    if (rc)
        qs_quant_config_free(qc);
    return rc;
}

void qs_quant_config_free(qs_quant_config *qc)
{
    if (!qc)
        return;
    for (int i = 0; i < qc->n_groups; i++)
        free_string_list(qc->groups[i].targets, qc->groups[i].target_re, qc->groups[i].n_targets);
    free(qc->groups);
    free_string_list(qc->ignore, qc->ignore_re, qc->n_ignore);
    for (int i = 0; i < qc->n_layers; i++)
        free(qc->layers[i].name);
    free(qc->layers);
    memset(qc, 0, sizeof *qc);
}

/* ---- per-module questions ------------------------------------------------------------------ */

static bool ignore_entry_matches(const qs_quant_config *qc, int i, const char *module)
{
    const char *pat = qc->ignore[i];
    switch (qc->ignore_style) {
    case QS_IGNORE_CT:
        if (qc->ignore_re && qc->ignore_re[i])
            return re_matches(qc->ignore_re[i], module);
        return !strcmp(pat, module);
    case QS_IGNORE_FNMATCH: {
        size_t n = strlen(pat);
        if (!strcmp(pat, module) || fnmatch(pat, module, 0) == 0)
            return true;
        /* an excluded parent module excludes its children */
        return !strncmp(pat, module, n) && module[n] == '.';
    }
    case QS_IGNORE_SUBSTRING:
        return *pat && strstr(module, pat) != NULL;
    }
    return false;
}

bool qs_quant_config_is_ignored(const qs_quant_config *qc, const char *module)
{
    for (int i = 0; i < qc->n_ignore; i++)
        if (ignore_entry_matches(qc, i, module))
            return true;
    return false;
}

static bool target_matches(const qs_quant_group *g, int i, const char *module)
{
    const char *t = g->targets[i];
    if (g->target_re && g->target_re[i])
        return re_matches(g->target_re[i], module);
    /* Every module qserve asks about is a Linear layer. */
    return !strcmp(t, "Linear") || !strcmp(t, module);
}

void qs_quant_config_layer(const qs_quant_config *qc, const char *module, qs_layer_quant *out)
{
    memset(out, 0, sizeof *out);
    out->format = QS_LQ_NONE;
    if (qc->method == QS_QMETHOD_NONE || qs_quant_config_is_ignored(qc, module))
        return;
    switch (qc->method) {
    case QS_QMETHOD_COMPRESSED_TENSORS:
        /* CT prefers an exact module-name target, then a regex, then the class name. */
        for (int pass = 0; pass < 3; pass++)
            for (int g = 0; g < qc->n_groups; g++)
                for (int t = 0; t < qc->groups[g].n_targets; t++) {
                    const qs_quant_group *qg = &qc->groups[g];
                    bool is_re = qg->target_re && qg->target_re[t];
                    bool is_class = !is_re && !strcmp(qg->targets[t], "Linear");
                    int kind = is_re ? 1 : is_class ? 2 : 0;
                    if (kind == pass && target_matches(qg, t, module)) {
                        *out = qg->lq;
                        return;
                    }
                }
        return;
    case QS_QMETHOD_MODELOPT:
        if (!strcmp(qc->quant_algo, "MIXED_PRECISION")) {
            for (int i = 0; i < qc->n_layers; i++)
                if (!strcmp(qc->layers[i].name, module)) {
                    *out = qc->layers[i].lq;
                    return;
                }
            return;
        }
        *out = qc->all_layers;
        return;
    case QS_QMETHOD_FP8:
        *out = qc->all_layers;
        return;
    case QS_QMETHOD_NONE:
        return;
    }
}
