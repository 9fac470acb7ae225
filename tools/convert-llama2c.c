/* convert-llama2c.c — turns a llama2.c checkpoint (legacy "version 0": 7 int32 config fields,
 * then float32 weights) and its tokenizer.bin into a Hugging Face model folder:
 *   config.json (LlamaForCausalLM), generation_config.json, model.safetensors (F32, HF names),
 *   tokenizer.json (Llama-2-style sentencepiece BPE with byte fallback), tokenizer_config.json.
 * llama2.c rotates adjacent pairs (i, i+1) in RoPE while HF rotates halves (i, i + head_dim/2), so
 * the rows of wq and wk are permuted within each head (row 2p+c moves to c*head_dim/2 + p), the
 * same permutation transformers' convert_llama_weights_to_hf applies. BPE merges are derived from
 * the tokenizer scores: every split of a vocabulary piece into two vocabulary pieces becomes a
 * merge ranked by the piece's score, so HF-style BPE reproduces llama2.c's score-greedy merging.
 * Usage: convert-llama2c MODEL.bin TOKENIZER.bin OUT_DIR [--dtype f32|bf16]
 * (bf16 rounds every weight to nearest even: the BF16 copy of the same model). */
#include <cJSON.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "io/safetensors_writer.h"
#include "util/error.h"
#include "util/fileio.h"

typedef struct {
    int dim, hidden, n_layers, n_heads, n_kv_heads, vocab, seq_len;
    bool shared;
} l2c_config;

typedef struct {
    int n;
    char **piece;   /* HF form: spaces as U+2581, specials renamed */
    float *score;
} l2c_vocab;

static bool g_bf16; /* --dtype bf16 */

static const char *META = "\xe2\x96\x81"; /* U+2581 LOWER ONE EIGHTH BLOCK */

static int read_model(const char *path, l2c_config *c, float **weights, size_t *n_floats, qs_err *err)
{
    char *buf;
    size_t len;
    if (qs_read_file(path, &buf, &len, err))
        return -1;
    if (len < 28) {
        free(buf);
        return qs_errf(err, "%s: %zu bytes is too short for a llama2.c header", path, len);
    }
    int32_t h[7];
    memcpy(h, buf, sizeof(h));
    c->dim = h[0], c->hidden = h[1], c->n_layers = h[2], c->n_heads = h[3], c->n_kv_heads = h[4];
    c->shared = h[5] > 0;
    c->vocab = abs(h[5]);
    c->seq_len = h[6];
    if (c->dim <= 0 || c->hidden <= 0 || c->n_layers <= 0 || c->n_heads <= 0 || c->n_kv_heads <= 0 ||
        c->vocab <= 0 || c->seq_len <= 0 || c->dim % c->n_heads || c->n_heads % c->n_kv_heads ||
        (c->dim / c->n_heads) % 2) {
        free(buf);
        return qs_errf(err, "%s: implausible llama2.c header (dim %d, hidden %d, layers %d, heads %d, kv heads %d, "
                            "vocab %d, seq_len %d)", path, h[0], h[1], h[2], h[3], h[4], h[5], h[6]);
    }
    *n_floats = (len - 28) / sizeof(float);
    *weights = malloc(*n_floats * sizeof(float));
    if (!*weights) {
        free(buf);
        return qs_errf(err, "%s: out of memory", path);
    }
    memcpy(*weights, buf + 28, *n_floats * sizeof(float));
    free(buf);
    return 0;
}

/* Replaces every ' ' by U+2581. */
static char *to_metaspace(const char *s, size_t len)
{
    char *out = malloc(len * 3 + 1), *o = out;
    if (!out)
        return NULL;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == ' ') {
            memcpy(o, META, 3);
            o += 3;
        } else {
            *o++ = s[i];
        }
    }
    *o = 0;
    return out;
}

static int read_vocab(const char *path, int vocab_size, l2c_vocab *v, qs_err *err)
{
    char *buf;
    size_t len, off = 4;
    if (qs_read_file(path, &buf, &len, err))
        return -1;
    v->n = vocab_size;
    v->piece = calloc((size_t)vocab_size, sizeof(char *));
    v->score = calloc((size_t)vocab_size, sizeof(float));
    if (!v->piece || !v->score) {
        free(buf);
        return qs_errf(err, "out of memory");
    }
    for (int i = 0; i < vocab_size; i++) {
        float score;
        int32_t n;
        if (off + 8 > len) {
            free(buf);
            return qs_errf(err, "%s: ends inside token %d of %d", path, i, vocab_size);
        }
        memcpy(&score, buf + off, 4);
        memcpy(&n, buf + off + 4, 4);
        off += 8;
        if (n < 0 || off + (size_t)n > len) {
            free(buf);
            return qs_errf(err, "%s: token %d has bad length %d", path, i, n);
        }
        v->score[i] = score;
        const char *s = buf + off;
        if (i == 0 && n == 5 && !memcmp(s, "<unk>", 5))
            v->piece[i] = strdup("<unk>");
        else if (n == 5 && !memcmp(s, "\n<s>\n", 5))
            v->piece[i] = strdup("<s>");
        else if (n == 6 && !memcmp(s, "\n</s>\n", 6))
            v->piece[i] = strdup("</s>");
        else
            v->piece[i] = to_metaspace(s, (size_t)n);
        if (!v->piece[i]) {
            free(buf);
            return qs_errf(err, "out of memory");
        }
        off += (size_t)n;
    }
    free(buf);
    return 0;
}

static int find_piece(const l2c_vocab *v, const char *s, size_t len)
{
    for (int i = 0; i < v->n; i++)
        if (strlen(v->piece[i]) == len && !memcmp(v->piece[i], s, len))
            return i;
    return -1;
}

static bool is_special_or_byte(const l2c_vocab *v, int i)
{
    const char *p = v->piece[i];
    return !strcmp(p, "<unk>") || !strcmp(p, "<s>") || !strcmp(p, "</s>") ||
           (strlen(p) == 6 && !strncmp(p, "<0x", 3) && p[5] == '>');
}

typedef struct {
    int merged, left, right;
    float score;
} merge_t;

static int cmp_merge(const void *a, const void *b)
{
    const merge_t *x = a, *y = b;
    if (x->score != y->score)
        return x->score > y->score ? -1 : 1;
    if (x->merged != y->merged)
        return x->merged - y->merged;
    return x->left - y->left;
}

static cJSON *build_tokenizer_json(const l2c_vocab *v, qs_err *err)
{
    merge_t *merges = NULL;
    size_t n_merges = 0, cap = 0;
    for (int i = 0; i < v->n; i++) {
        if (is_special_or_byte(v, i))
            continue;
        const char *p = v->piece[i];
        size_t len = strlen(p);
        for (size_t cut = 1; cut < len; cut++) {
            if (((unsigned char)p[cut] & 0xC0) == 0x80) /* not a UTF-8 character boundary */
                continue;
            int l = find_piece(v, p, cut), r = find_piece(v, p + cut, len - cut);
            if (l < 0 || r < 0 || is_special_or_byte(v, l) || is_special_or_byte(v, r))
                continue;
            if (n_merges == cap) {
                cap = cap ? cap * 2 : 256;
                merge_t *nm = realloc(merges, cap * sizeof(*merges));
                if (!nm) {
                    free(merges);
                    qs_errf(err, "out of memory");
                    return NULL;
                }
                merges = nm;
            }
            merges[n_merges++] = (merge_t){.merged = i, .left = l, .right = r, .score = v->score[i]};
        }
    }
    qsort(merges, n_merges, sizeof(*merges), cmp_merge);

    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "version", "1.0");
    cJSON_AddNullToObject(root, "truncation");
    cJSON_AddNullToObject(root, "padding");
    cJSON *added = cJSON_AddArrayToObject(root, "added_tokens");
    for (int i = 0; i < v->n && i < 3; i++) {
        cJSON *t = cJSON_CreateObject();
        cJSON_AddNumberToObject(t, "id", i);
        cJSON_AddStringToObject(t, "content", v->piece[i]);
        cJSON_AddBoolToObject(t, "single_word", false);
        cJSON_AddBoolToObject(t, "lstrip", false);
        cJSON_AddBoolToObject(t, "rstrip", false);
        cJSON_AddBoolToObject(t, "normalized", false);
        cJSON_AddBoolToObject(t, "special", true);
        cJSON_AddItemToArray(added, t);
    }
    cJSON *norm = cJSON_AddObjectToObject(root, "normalizer");
    cJSON_AddStringToObject(norm, "type", "Sequence");
    cJSON *norms = cJSON_AddArrayToObject(norm, "normalizers");
    cJSON *prep = cJSON_CreateObject();
    cJSON_AddStringToObject(prep, "type", "Prepend");
    cJSON_AddStringToObject(prep, "prepend", META);
    cJSON_AddItemToArray(norms, prep);
    cJSON *repl = cJSON_CreateObject();
    cJSON_AddStringToObject(repl, "type", "Replace");
    cJSON_AddStringToObject(cJSON_AddObjectToObject(repl, "pattern"), "String", " ");
    cJSON_AddStringToObject(repl, "content", META);
    cJSON_AddItemToArray(norms, repl);
    cJSON_AddNullToObject(root, "pre_tokenizer");

    cJSON *post = cJSON_AddObjectToObject(root, "post_processor");
    cJSON_AddStringToObject(post, "type", "TemplateProcessing");
    const char *seqs[] = {"single", "pair"};
    for (int s = 0; s < 2; s++) {
        cJSON *arr = cJSON_AddArrayToObject(post, seqs[s]);
        for (int part = 0; part < (s ? 4 : 2); part++) {
            cJSON *item = cJSON_CreateObject(), *inner;
            if (part % 2 == 0) {
                inner = cJSON_AddObjectToObject(item, "SpecialToken");
                cJSON_AddStringToObject(inner, "id", "<s>");
            } else {
                inner = cJSON_AddObjectToObject(item, "Sequence");
                cJSON_AddStringToObject(inner, "id", part == 1 ? "A" : "B");
            }
            cJSON_AddNumberToObject(inner, "type_id", part >= 2 ? 1 : 0);
            cJSON_AddItemToArray(arr, item);
        }
    }
    cJSON *st = cJSON_AddObjectToObject(cJSON_AddObjectToObject(post, "special_tokens"), "<s>");
    cJSON_AddStringToObject(st, "id", "<s>");
    cJSON_AddItemToArray(cJSON_AddArrayToObject(st, "ids"), cJSON_CreateNumber(1));
    cJSON_AddItemToArray(cJSON_AddArrayToObject(st, "tokens"), cJSON_CreateString("<s>"));

    cJSON *dec = cJSON_AddObjectToObject(root, "decoder");
    cJSON_AddStringToObject(dec, "type", "Sequence");
    cJSON *decs = cJSON_AddArrayToObject(dec, "decoders");
    cJSON *d1 = cJSON_CreateObject();
    cJSON_AddStringToObject(d1, "type", "Replace");
    cJSON_AddStringToObject(cJSON_AddObjectToObject(d1, "pattern"), "String", META);
    cJSON_AddStringToObject(d1, "content", " ");
    cJSON_AddItemToArray(decs, d1);
    cJSON *d2 = cJSON_CreateObject();
    cJSON_AddStringToObject(d2, "type", "ByteFallback");
    cJSON_AddItemToArray(decs, d2);
    cJSON *d3 = cJSON_CreateObject();
    cJSON_AddStringToObject(d3, "type", "Fuse");
    cJSON_AddItemToArray(decs, d3);
    cJSON *d4 = cJSON_CreateObject();
    cJSON_AddStringToObject(d4, "type", "Strip");
    cJSON_AddStringToObject(d4, "content", " ");
    cJSON_AddNumberToObject(d4, "start", 1);
    cJSON_AddNumberToObject(d4, "stop", 0);
    cJSON_AddItemToArray(decs, d4);

    cJSON *model = cJSON_AddObjectToObject(root, "model");
    cJSON_AddStringToObject(model, "type", "BPE");
    cJSON_AddNullToObject(model, "dropout");
    cJSON_AddStringToObject(model, "unk_token", "<unk>");
    cJSON_AddNullToObject(model, "continuing_subword_prefix");
    cJSON_AddNullToObject(model, "end_of_word_suffix");
    cJSON_AddBoolToObject(model, "fuse_unk", true);
    cJSON_AddBoolToObject(model, "byte_fallback", true);
    cJSON_AddBoolToObject(model, "ignore_merges", false);
    cJSON *vocab = cJSON_AddObjectToObject(model, "vocab");
    for (int i = 0; i < v->n; i++)
        if (!cJSON_GetObjectItemCaseSensitive(vocab, v->piece[i]))
            cJSON_AddNumberToObject(vocab, v->piece[i], i);
    cJSON *mj = cJSON_AddArrayToObject(model, "merges");
    for (size_t i = 0; i < n_merges; i++) {
        cJSON *pair = cJSON_CreateArray();
        cJSON_AddItemToArray(pair, cJSON_CreateString(v->piece[merges[i].left]));
        cJSON_AddItemToArray(pair, cJSON_CreateString(v->piece[merges[i].right]));
        cJSON_AddItemToArray(mj, pair);
    }
    free(merges);
    return root;
}

static int write_json(const char *dir, const char *name, cJSON *obj, qs_err *err)
{
    char path[4096];
    qs_path_join(path, sizeof(path), dir, name);
    char *text = cJSON_Print(obj);
    cJSON_Delete(obj);
    if (!text)
        return qs_errf(err, "%s: out of memory", path);
    int rc = qs_write_file(path, text, strlen(text), err);
    free(text);
    return rc;
}

static cJSON *build_config(const l2c_config *c)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToArray(cJSON_AddArrayToObject(o, "architectures"), cJSON_CreateString("LlamaForCausalLM"));
    cJSON_AddStringToObject(o, "model_type", "llama");
    cJSON_AddNumberToObject(o, "hidden_size", c->dim);
    cJSON_AddNumberToObject(o, "intermediate_size", c->hidden);
    cJSON_AddNumberToObject(o, "num_hidden_layers", c->n_layers);
    cJSON_AddNumberToObject(o, "num_attention_heads", c->n_heads);
    cJSON_AddNumberToObject(o, "num_key_value_heads", c->n_kv_heads);
    cJSON_AddNumberToObject(o, "head_dim", c->dim / c->n_heads);
    cJSON_AddNumberToObject(o, "vocab_size", c->vocab);
    cJSON_AddNumberToObject(o, "max_position_embeddings", c->seq_len);
    cJSON_AddNumberToObject(o, "rms_norm_eps", 1e-5);
    cJSON_AddNumberToObject(o, "rope_theta", 10000.0);
    cJSON_AddBoolToObject(o, "tie_word_embeddings", c->shared);
    cJSON_AddBoolToObject(o, "attention_bias", false);
    cJSON_AddBoolToObject(o, "mlp_bias", false);
    cJSON_AddStringToObject(o, "hidden_act", "silu");
    cJSON_AddNumberToObject(o, "initializer_range", 0.02);
    cJSON_AddNumberToObject(o, "bos_token_id", 1);
    cJSON_AddNumberToObject(o, "eos_token_id", 2);
    cJSON_AddStringToObject(o, "torch_dtype", g_bf16 ? "bfloat16" : "float32");
    return o;
}

static cJSON *build_tokenizer_config(void)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddBoolToObject(o, "add_bos_token", true);
    cJSON_AddBoolToObject(o, "add_eos_token", false);
    cJSON_AddStringToObject(o, "bos_token", "<s>");
    cJSON_AddStringToObject(o, "eos_token", "</s>");
    cJSON_AddStringToObject(o, "unk_token", "<unk>");
    cJSON_AddBoolToObject(o, "clean_up_tokenization_spaces", false);
    cJSON_AddBoolToObject(o, "legacy", true);
    cJSON_AddNumberToObject(o, "model_max_length", 512);
    cJSON_AddStringToObject(o, "tokenizer_class", "LlamaTokenizerFast");
    /* a plain template: the story so far is the user's text, the assistant continues it */
    cJSON_AddStringToObject(o, "chat_template",
                            "{{ bos_token }}{% for message in messages %}{% if message['role'] == 'assistant' %}"
                            "{{ message['content'] + eos_token }}{% else %}{{ message['content'] }}{% endif %}"
                            "{% endfor %}");
    return o;
}

/* Adds a float tensor (ndim 1 or 2) as F32, or as BF16 under --dtype bf16. */
static int add_tensor(qs_st_writer *w, const char *name, int ndim, const int64_t *shape, const float *src, size_t n,
                      qs_err *err)
{
    if (!g_bf16)
        return qs_st_writer_add_copy(w, name, QS_DT_F32, ndim, shape, src, n * sizeof(float), err);
    uint16_t *h = malloc(n * sizeof(uint16_t));
    if (!h)
        return qs_errf(err, "out of memory");
    for (size_t i = 0; i < n; i++)
        h[i] = qs_f32_to_bf16(src[i]);
    int rc = qs_st_writer_add_copy(w, name, QS_DT_BF16, ndim, shape, h, n * sizeof(uint16_t), err);
    free(h);
    return rc;
}

/* Adds a [rows, cols] tensor; permute_heads > 0 applies the rotate-half row permutation. */
static int add_matrix(qs_st_writer *w, const char *name, const float *src, int rows, int cols, int permute_heads,
                      qs_err *err)
{
    int64_t shape[2] = {rows, cols};
    size_t bytes = (size_t)rows * cols * sizeof(float);
    if (permute_heads <= 0)
        return add_tensor(w, name, 2, shape, src, (size_t)rows * cols, err);
    float *dst = malloc(bytes);
    if (!dst)
        return qs_errf(err, "out of memory");
    int hd = rows / permute_heads, half = hd / 2;
    for (int h = 0; h < permute_heads; h++)
        for (int p = 0; p < half; p++)
            for (int c = 0; c < 2; c++)
                memcpy(dst + ((size_t)h * hd + (size_t)c * half + p) * cols, src + ((size_t)h * hd + 2 * p + c) * cols,
                       (size_t)cols * sizeof(float));
    int rc = add_tensor(w, name, 2, shape, dst, (size_t)rows * cols, err);
    free(dst);
    return rc;
}

static int add_vector(qs_st_writer *w, const char *name, const float *src, int n, qs_err *err)
{
    int64_t shape[1] = {n};
    return add_tensor(w, name, 1, shape, src, (size_t)n, err);
}

static int write_weights(const l2c_config *c, const float *wts, size_t n_floats, const char *out_dir, qs_err *err)
{
    int D = c->dim, F = c->hidden, L = c->n_layers, V = c->vocab, hd = c->dim / c->n_heads;
    int KV = c->n_kv_heads * hd;
    size_t need = (size_t)V * D + (size_t)L * (2 * D + D * D + 2 * KV * D + D * D + 3 * F * D) + D +
                  (size_t)c->seq_len * hd;
    if (!c->shared)
        need += (size_t)V * D;
    if (n_floats < need)
        return qs_errf(err, "model file holds %zu floats, the header implies at least %zu", n_floats, need);
    const float *p = wts;
    const float *emb = p;
    p += (size_t)V * D;
    const float *rms_att = p;
    p += (size_t)L * D;
    const float *wq = p;
    p += (size_t)L * D * D;
    const float *wk = p;
    p += (size_t)L * KV * D;
    const float *wv = p;
    p += (size_t)L * KV * D;
    const float *wo = p;
    p += (size_t)L * D * D;
    const float *rms_ffn = p;
    p += (size_t)L * D;
    const float *w1 = p;
    p += (size_t)L * F * D;
    const float *w2 = p;
    p += (size_t)L * D * F;
    const float *w3 = p;
    p += (size_t)L * F * D;
    const float *rms_final = p;
    p += D;
    p += (size_t)c->seq_len * hd; /* legacy freq_cis_real and freq_cis_imag, unused */
    const float *wcls = c->shared ? NULL : p;

    qs_st_writer *w = qs_st_writer_new();
    if (!w)
        return qs_errf(err, "out of memory");
    char name[160];
    int rc = add_matrix(w, "model.embed_tokens.weight", emb, V, D, 0, err);
    for (int l = 0; l < L && rc == 0; l++) {
#define NAME(fmt) (snprintf(name, sizeof(name), "model.layers.%d." fmt, l), name)
        rc = add_vector(w, NAME("input_layernorm.weight"), rms_att + (size_t)l * D, D, err) ||
             add_matrix(w, NAME("self_attn.q_proj.weight"), wq + (size_t)l * D * D, D, D, c->n_heads, err) ||
             add_matrix(w, NAME("self_attn.k_proj.weight"), wk + (size_t)l * KV * D, KV, D, c->n_kv_heads, err) ||
             add_matrix(w, NAME("self_attn.v_proj.weight"), wv + (size_t)l * KV * D, KV, D, 0, err) ||
             add_matrix(w, NAME("self_attn.o_proj.weight"), wo + (size_t)l * D * D, D, D, 0, err) ||
             add_vector(w, NAME("post_attention_layernorm.weight"), rms_ffn + (size_t)l * D, D, err) ||
             add_matrix(w, NAME("mlp.gate_proj.weight"), w1 + (size_t)l * F * D, F, D, 0, err) ||
             add_matrix(w, NAME("mlp.down_proj.weight"), w2 + (size_t)l * D * F, D, F, 0, err) ||
             add_matrix(w, NAME("mlp.up_proj.weight"), w3 + (size_t)l * F * D, F, D, 0, err)
                 ? -1
                 : 0;
#undef NAME
    }
    if (rc == 0)
        rc = add_vector(w, "model.norm.weight", rms_final, D, err);
    if (rc == 0 && wcls)
        rc = add_matrix(w, "lm_head.weight", wcls, V, D, 0, err);
    if (rc == 0) {
        qs_st_writer_set_metadata(w, "format", "pt");
        rc = qs_st_writer_write_sharded(w, out_dir, 0, err);
    }
    qs_st_writer_free(w);
    return rc;
}

int main(int argc, char **argv)
{
    bool dtype_ok = argc == 4;
    if (argc == 6 && !strcmp(argv[4], "--dtype") && (!strcmp(argv[5], "f32") || !strcmp(argv[5], "bf16"))) {
        g_bf16 = !strcmp(argv[5], "bf16");
        dtype_ok = true;
    }
    if (!dtype_ok) {
        fprintf(stderr, "usage: %s MODEL.bin TOKENIZER.bin OUT_DIR [--dtype f32|bf16]\n", argv[0]);
        return 2;
    }
    qs_err err = {{0}};
    l2c_config c = {0};
    float *wts = NULL;
    size_t n_floats = 0;
    l2c_vocab v = {0};
    int rc = 1;
    if (read_model(argv[1], &c, &wts, &n_floats, &err) || read_vocab(argv[2], c.vocab, &v, &err))
        goto done;
    if (mkdir(argv[3], 0755) != 0 && errno != EEXIST) {
        qs_errf(&err, "%s: cannot create folder: %s", argv[3], strerror(errno));
        goto done;
    }
    if (write_weights(&c, wts, n_floats, argv[3], &err))
        goto done;
    cJSON *tok = build_tokenizer_json(&v, &err);
    if (!tok)
        goto done;
    cJSON *gen = cJSON_CreateObject();
    cJSON_AddNumberToObject(gen, "bos_token_id", 1);
    /* llama2.c's models end every story with BOS (id 1) and llama2.c's run.c stops there; the
     * SentencePiece EOS (id 2) stays an end too */
    const int end_ids[] = {1, 2};
    cJSON_AddItemToObject(gen, "eos_token_id", cJSON_CreateIntArray(end_ids, 2));
    if (write_json(argv[3], "tokenizer.json", tok, &err) || write_json(argv[3], "config.json", build_config(&c), &err) ||
        write_json(argv[3], "generation_config.json", gen, &err) ||
        write_json(argv[3], "tokenizer_config.json", build_tokenizer_config(), &err))
        goto done;
    rc = 0;
done:
    if (rc)
        fprintf(stderr, "convert-llama2c: %s\n", err.msg);
    free(wts);
    for (int i = 0; i < v.n; i++)
        free(v.piece ? v.piece[i] : NULL);
    free(v.piece);
    free(v.score);
    return rc;
}
