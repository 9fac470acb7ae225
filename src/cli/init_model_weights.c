/* init_model_weights.c — random weights for `qserve init-model`: the tensor list of each
 * architecture (HF names and shapes: Llama/Mistral, Qwen2 q/k/v biases, Qwen3 q/k norms,
 * Qwen3-MoE mlp.experts.E.*, Mixtral block_sparse_moe.experts.E.w1/w2/w3, Llama 4's
 * language_model.* with fused 3-D experts), filled in parallel
 * with a counter-based generator (element i of tensor t depends only on seed, t and i, so the
 * result does not depend on the thread count): std 0.02 from a sum of four uniforms, norms 1,
 * biases 0. Shards are generated and written one at a time so memory stays at one shard. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli/init_model.h"
#include "io/safetensors_writer.h"
#include "util/fileio.h"
#include "util/parallel.h"

static void add(qs_init_tensor *list, int *n, qs_init_kind kind, int ndim, int64_t d0, int64_t d1, const char *fmt,
                ...) __attribute__((format(printf, 7, 8)));

static void add(qs_init_tensor *list, int *n, qs_init_kind kind, int ndim, int64_t d0, int64_t d1, const char *fmt, ...)
{
    qs_init_tensor *t = &list[(*n)++];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->name, sizeof t->name, fmt, ap);
    va_end(ap);
    t->ndim = ndim;
    t->shape[0] = d0;
    t->shape[1] = d1;
    t->kind = kind;
}

/* Llama 4 (Llama4ForConditionalGeneration): language_model.* with feed_forward.* blocks, MoE
 * layers holding router, shared expert and the fused 3-D experts transformers saves. */
static int llama4_list(const qs_init_shape *s, const qs_init_llama4 *l4, qs_init_tensor *L)
{
    int c = 0;
    int64_t H = s->hidden, qd = (int64_t)s->heads * s->head_dim, kvd = (int64_t)s->kv_heads * s->head_dim;
    int64_t I = s->inter, E = s->experts;
    const char *P = "language_model.model.layers";
    add(L, &c, QS_INIT_NORMAL, 2, s->vocab, H, "language_model.model.embed_tokens.weight");
    for (int i = 0; i < s->layers; i++) {
        add(L, &c, QS_INIT_ONES, 1, H, 0, "%s.%d.input_layernorm.weight", P, i);
        add(L, &c, QS_INIT_NORMAL, 2, qd, H, "%s.%d.self_attn.q_proj.weight", P, i);
        add(L, &c, QS_INIT_NORMAL, 2, kvd, H, "%s.%d.self_attn.k_proj.weight", P, i);
        add(L, &c, QS_INIT_NORMAL, 2, kvd, H, "%s.%d.self_attn.v_proj.weight", P, i);
        add(L, &c, QS_INIT_NORMAL, 2, H, qd, "%s.%d.self_attn.o_proj.weight", P, i);
        add(L, &c, QS_INIT_ONES, 1, H, 0, "%s.%d.post_attention_layernorm.weight", P, i);
        if ((i + 1) % l4->moe_step == 0) {
            add(L, &c, QS_INIT_NORMAL, 2, E, H, "%s.%d.feed_forward.router.weight", P, i);
            add(L, &c, QS_INIT_NORMAL, 3, E, H, "%s.%d.feed_forward.experts.gate_up_proj", P, i);
            L[c - 1].shape[2] = 2 * I;
            add(L, &c, QS_INIT_NORMAL, 3, E, I, "%s.%d.feed_forward.experts.down_proj", P, i);
            L[c - 1].shape[2] = H;
            add(L, &c, QS_INIT_NORMAL, 2, I, H, "%s.%d.feed_forward.shared_expert.gate_proj.weight", P, i);
            add(L, &c, QS_INIT_NORMAL, 2, I, H, "%s.%d.feed_forward.shared_expert.up_proj.weight", P, i);
            add(L, &c, QS_INIT_NORMAL, 2, H, I, "%s.%d.feed_forward.shared_expert.down_proj.weight", P, i);
        } else {
            add(L, &c, QS_INIT_NORMAL, 2, l4->inter_mlp, H, "%s.%d.feed_forward.gate_proj.weight", P, i);
            add(L, &c, QS_INIT_NORMAL, 2, l4->inter_mlp, H, "%s.%d.feed_forward.up_proj.weight", P, i);
            add(L, &c, QS_INIT_NORMAL, 2, H, l4->inter_mlp, "%s.%d.feed_forward.down_proj.weight", P, i);
        }
    }
    add(L, &c, QS_INIT_ONES, 1, H, 0, "language_model.model.norm.weight");
    add(L, &c, QS_INIT_NORMAL, 2, s->vocab, H, "language_model.lm_head.weight");
    return c;
}

int qs_init_tensor_list(const qs_init_shape *s, qs_init_tensor **out, int *n, qs_err *err)
{
    const qs_init_llama4 *l4 = qs_init_shape_llama4(s);
    if (l4) {
        qs_init_tensor *L4 = calloc((size_t)(4 + s->layers * 12), sizeof *L4);
        if (!L4)
            return qs_errf(err, "init-model: out of memory for the tensor descriptions");
        *n = llama4_list(s, l4, L4);
        *out = L4;
        return 0;
    }
    int per_layer = 12 + (s->experts > 0 ? 3 * s->experts + 1 : 3);
    int cap = 3 + s->layers * per_layer;
    qs_init_tensor *L = calloc((size_t)cap, sizeof *L);
    if (!L)
        return qs_errf(err, "init-model: out of memory for %d tensor descriptions", cap);
    int c = 0;
    int64_t H = s->hidden, qd = (int64_t)s->heads * s->head_dim, kvd = (int64_t)s->kv_heads * s->head_dim;
    add(L, &c, QS_INIT_NORMAL, 2, s->vocab, H, "model.embed_tokens.weight");
    for (int i = 0; i < s->layers; i++) {
        add(L, &c, QS_INIT_ONES, 1, H, 0, "model.layers.%d.input_layernorm.weight", i);
        add(L, &c, QS_INIT_NORMAL, 2, qd, H, "model.layers.%d.self_attn.q_proj.weight", i);
        add(L, &c, QS_INIT_NORMAL, 2, kvd, H, "model.layers.%d.self_attn.k_proj.weight", i);
        add(L, &c, QS_INIT_NORMAL, 2, kvd, H, "model.layers.%d.self_attn.v_proj.weight", i);
        if (s->qkv_bias) {
            add(L, &c, QS_INIT_ZEROS, 1, qd, 0, "model.layers.%d.self_attn.q_proj.bias", i);
            add(L, &c, QS_INIT_ZEROS, 1, kvd, 0, "model.layers.%d.self_attn.k_proj.bias", i);
            add(L, &c, QS_INIT_ZEROS, 1, kvd, 0, "model.layers.%d.self_attn.v_proj.bias", i);
        }
        if (s->qk_norm) {
            add(L, &c, QS_INIT_ONES, 1, s->head_dim, 0, "model.layers.%d.self_attn.q_norm.weight", i);
            add(L, &c, QS_INIT_ONES, 1, s->head_dim, 0, "model.layers.%d.self_attn.k_norm.weight", i);
        }
        add(L, &c, QS_INIT_NORMAL, 2, H, qd, "model.layers.%d.self_attn.o_proj.weight", i);
        add(L, &c, QS_INIT_ONES, 1, H, 0, "model.layers.%d.post_attention_layernorm.weight", i);
        if (s->experts == 0) {
            add(L, &c, QS_INIT_NORMAL, 2, s->inter, H, "model.layers.%d.mlp.gate_proj.weight", i);
            add(L, &c, QS_INIT_NORMAL, 2, s->inter, H, "model.layers.%d.mlp.up_proj.weight", i);
            add(L, &c, QS_INIT_NORMAL, 2, H, s->inter, "model.layers.%d.mlp.down_proj.weight", i);
        } else if (!strcmp(s->model_type, "mixtral")) {
            add(L, &c, QS_INIT_NORMAL, 2, s->experts, H, "model.layers.%d.block_sparse_moe.gate.weight", i);
            for (int e = 0; e < s->experts; e++) {
                add(L, &c, QS_INIT_NORMAL, 2, s->moe_inter, H, "model.layers.%d.block_sparse_moe.experts.%d.w1.weight",
                    i, e);
                add(L, &c, QS_INIT_NORMAL, 2, H, s->moe_inter, "model.layers.%d.block_sparse_moe.experts.%d.w2.weight",
                    i, e);
                add(L, &c, QS_INIT_NORMAL, 2, s->moe_inter, H, "model.layers.%d.block_sparse_moe.experts.%d.w3.weight",
                    i, e);
            }
        } else {
            add(L, &c, QS_INIT_NORMAL, 2, s->experts, H, "model.layers.%d.mlp.gate.weight", i);
            for (int e = 0; e < s->experts; e++) {
                add(L, &c, QS_INIT_NORMAL, 2, s->moe_inter, H, "model.layers.%d.mlp.experts.%d.gate_proj.weight", i, e);
                add(L, &c, QS_INIT_NORMAL, 2, s->moe_inter, H, "model.layers.%d.mlp.experts.%d.up_proj.weight", i, e);
                add(L, &c, QS_INIT_NORMAL, 2, H, s->moe_inter, "model.layers.%d.mlp.experts.%d.down_proj.weight", i, e);
            }
        }
    }
    add(L, &c, QS_INIT_ONES, 1, H, 0, "model.norm.weight");
    if (!s->tie)
        add(L, &c, QS_INIT_NORMAL, 2, s->vocab, H, "lm_head.weight");
    *out = L;
    *n = c;
    return 0;
}

static int64_t numel(const qs_init_tensor *t)
{
    return t->ndim == 1 ? t->shape[0] : t->shape[0] * t->shape[1] * (t->ndim == 3 ? t->shape[2] : 1);
}

uint64_t qs_init_weight_bytes(const qs_init_shape *s, qs_dtype dtype)
{
    qs_init_tensor *L;
    int n;
    if (qs_init_tensor_list(s, &L, &n, NULL))
        return 0;
    uint64_t total = 0;
    for (int i = 0; i < n; i++)
        total += (uint64_t)numel(&L[i]) * (uint64_t)(qs_dtype_bits(dtype) / 8);
    free(L);
    return total;
}

static inline uint64_t splitmix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

typedef struct {
    void *data;
    qs_dtype dtype;
    qs_init_kind kind;
    uint64_t key;
    float std;
} fill_job;

static void fill_range(void *ctx, int64_t begin, int64_t end)
{
    const fill_job *j = ctx;
    /* Irwin-Hall of four 16-bit uniforms: mean 2, variance 1/3 */
    const float norm = 1.7320508f / 65536.0f;
    for (int64_t i = begin; i < end; i++) {
        float v;
        if (j->kind == QS_INIT_NORMAL) {
            uint64_t h = splitmix64(j->key + (uint64_t)i);
            float sum = (float)(h & 0xFFFF) + (float)((h >> 16) & 0xFFFF) + (float)((h >> 32) & 0xFFFF) +
                        (float)(h >> 48);
            v = (sum - 131070.0f) * norm * j->std;
        } else {
            v = j->kind == QS_INIT_ONES ? 1.0f : 0.0f;
        }
        if (j->dtype == QS_DT_F32) {
            ((float *)j->data)[i] = v;
        } else { /* BF16, round to nearest even (values are finite) */
            uint32_t u;
            memcpy(&u, &v, 4);
            u += 0x7FFFu + ((u >> 16) & 1u);
            ((uint16_t *)j->data)[i] = (uint16_t)(u >> 16);
        }
    }
}

static int write_index(const char *dir, const qs_init_tensor *L, const int *shard_of, int n, int n_shards,
                       uint64_t total, qs_err *err)
{
    cJSON *root = cJSON_CreateObject();
    cJSON *meta = cJSON_AddObjectToObject(root, "metadata");
    cJSON_AddNumberToObject(meta, "total_size", (double)total);
    cJSON *map = cJSON_AddObjectToObject(root, "weight_map");
    char fname[64];
    for (int i = 0; i < n; i++) {
        snprintf(fname, sizeof fname, "model-%05d-of-%05d.safetensors", shard_of[i] + 1, n_shards);
        cJSON_AddStringToObject(map, L[i].name, fname);
    }
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    if (!text)
        return qs_errf(err, "model.safetensors.index.json: out of memory");
    char path[2048];
    int rc = qs_write_file(qs_path_join(path, sizeof path, dir, "model.safetensors.index.json"), text, strlen(text), err);
    free(text);
    return rc;
}

int qs_init_write_weights(const char *dir, const qs_init_shape *s, uint64_t seed, qs_dtype dtype, size_t shard_bytes,
                          qs_err *err)
{
    qs_init_tensor *L;
    int n;
    if (qs_init_tensor_list(s, &L, &n, err))
        return -1;
    int esize = qs_dtype_bits(dtype) / 8;
    uint64_t total = qs_init_weight_bytes(s, dtype);
    struct statvfs vfs;
    if (statvfs(dir, &vfs) == 0) {
        uint64_t avail = (uint64_t)vfs.f_bavail * vfs.f_frsize;
        if (total + (total >> 6) > avail) {
            free(L);
            return qs_errf(err, "%s needs %.1f GB of weights but %s has %.1f GB free (use --config-only to write "
                           "config and tokenizer only)", s->name, total / 1e9, dir, avail / 1e9);
        }
    }
    /* assign shards in order */
    int *shard_of = malloc((size_t)n * sizeof *shard_of);
    if (!shard_of) {
        free(L);
        return qs_errf(err, "init-model: out of memory");
    }
    int n_shards = 0;
    uint64_t in_shard = 0, largest = 0;
    for (int i = 0; i < n; i++) {
        uint64_t b = ((uint64_t)numel(&L[i]) * (uint64_t)esize + 63) & ~(uint64_t)63;
        if (n_shards == 0 || (shard_bytes && in_shard > 0 && in_shard + b > shard_bytes)) {
            n_shards++;
            in_shard = 0;
        }
        shard_of[i] = n_shards - 1;
        in_shard += b;
        if (in_shard > largest)
            largest = in_shard;
    }
    /* one arena for the largest shard, reused by every shard: pages are faulted in once */
    uint8_t *arena = malloc((size_t)largest + 64);
    if (!arena) {
        free(shard_of);
        free(L);
        return qs_errf(err, "init-model: out of memory for a %.2f GB shard (try a smaller --shard-size)",
                       largest / 1e9);
    }
    /* a single file or an index from an earlier run would shadow what we write now */
    char stale[2048];
    unlink(qs_path_join(stale, sizeof stale, dir, "model.safetensors"));
    unlink(qs_path_join(stale, sizeof stale, dir, "model.safetensors.index.json"));
    int rc = 0;
    for (int sh = 0; sh < n_shards && rc == 0; sh++) {
        qs_st_writer *w = qs_st_writer_new();
        if (!w) {
            rc = qs_errf(err, "init-model: out of memory");
            break;
        }
        size_t offset = 0;
        qs_st_writer_set_metadata(w, "format", "pt");
        for (int i = 0; i < n && rc == 0; i++) {
            if (shard_of[i] != sh)
                continue;
            int64_t ne = numel(&L[i]);
            size_t bytes = (size_t)ne * (size_t)esize;
            void *buf = arena + offset;
            offset += (bytes + 63) & ~(size_t)63;
            fill_job job = {buf, dtype, L[i].kind, splitmix64(seed * 0x100000001B3ull + (uint64_t)i) << 20, 0.02f};
            qs_parallel_for(ne, 1 << 16, fill_range, &job);
            rc = qs_st_writer_add(w, L[i].name, dtype, L[i].ndim, L[i].shape, buf, bytes, err);
        }
        if (rc == 0) {
            char fname[64], path[2048];
            if (n_shards == 1)
                snprintf(fname, sizeof fname, "model.safetensors");
            else
                snprintf(fname, sizeof fname, "model-%05d-of-%05d.safetensors", sh + 1, n_shards);
            rc = qs_st_writer_write(w, qs_path_join(path, sizeof path, dir, fname), err);
        }
        qs_st_writer_free(w);
    }
    free(arena);
    if (rc == 0 && n_shards > 1)
        rc = write_index(dir, L, shard_of, n, n_shards, total, err);
    free(shard_of);
    free(L);
    return rc;
}
