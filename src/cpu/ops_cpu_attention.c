/* ops_cpu_attention.c — paged KV writes and causal GQA attention over block tables on the CPU
 * (with a sliding window, or Llama 4's chunks: blocks before the chunk are never read).
 * The cache layout is per layer [block][kv_head][slot][head_dim] (core/kv_layout.h), its
 * elements float32, bf16 (rounded to nearest even on write) or FP8 E4M3: x / scale rounded and
 * saturated on write, code * scale on read, with the layer's K and V scales (the reference the
 * CUDA kernels are tested against). Each
 * (token, query head) pair is independent, so attention is split over them with qs_parallel_for;
 * the softmax runs in double with the running maximum subtracted, written out plainly. Output rows
 * go in the order o_proj's kernel reads (core/act_order.h). */
#include "cpu/ops_cpu_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/fp8.h"
#include "core/kv_layout.h"
#include "core/tensor.h"
#include "util/parallel.h"

static inline int64_t cache_offset(int32_t block, int kv_head, int slot, int n_kv_heads, int head_dim)
{
    return (((int64_t)block * n_kv_heads + kv_head) * QS_KV_BLOCK_SIZE + slot) * head_dim;
}

/* One head's row of n elements into the cache at element offset off. */
static void store_row(void *cache, int64_t off, const float *x, int n, qs_kv_dtype dt, float scale)
{
    if (dt == QS_KV_FP8_E4M3) {
        uint8_t *c = (uint8_t *)cache + off;
        float inv = 1.0f / scale;
        for (int i = 0; i < n; i++)
            c[i] = qs_f32_to_e4m3(x[i] * inv);
    } else if (dt == QS_KV_BF16) {
        qs_f32_to_bf16_n(x, (uint16_t *)cache + off, (size_t)n);
    } else {
        memcpy((float *)cache + off, x, (size_t)n * sizeof(float));
    }
}

/* A cache row back as float32: a pointer into the cache, or tmp filled. */
static const float *load_row(const void *cache, int64_t off, int n, qs_kv_dtype dt, float scale, float *tmp)
{
    if (dt == QS_KV_FP8_E4M3) {
        const float *table = qs_e4m3_table();
        const uint8_t *c = (const uint8_t *)cache + off;
        for (int i = 0; i < n; i++)
            tmp[i] = table[c[i]] * scale;
        return tmp;
    }
    if (dt == QS_KV_BF16) {
        const uint16_t *c = (const uint16_t *)cache + off;
        for (int i = 0; i < n; i++)
            tmp[i] = qs_bf16_to_f32(c[i]);
        return tmp;
    }
    return (const float *)cache + off;
}

int qs_cpu_kv_write(void *k_cache, void *v_cache, const void *k, const void *v, const qs_attn_batch *b,
                    int n_kv_heads, int head_dim, qs_err *err)
{
    (void)err;
    const float *kin = k, *vin = v;
    int64_t row = (int64_t)n_kv_heads * head_dim;
    for (int64_t t = 0; t < b->n_tokens; t++) {
        if (b->slot_mapping[t] < 0) /* a padding row: nothing to keep */
            continue;
        int32_t block = b->slot_mapping[t] / QS_KV_BLOCK_SIZE;
        int slot = b->slot_mapping[t] % QS_KV_BLOCK_SIZE;
        for (int h = 0; h < n_kv_heads; h++) {
            int64_t off = cache_offset(block, h, slot, n_kv_heads, head_dim);
            store_row(k_cache, off, kin + t * row + (int64_t)h * head_dim, head_dim, b->kv_dtype, b->k_scale);
            store_row(v_cache, off, vin + t * row + (int64_t)h * head_dim, head_dim, b->kv_dtype, b->v_scale);
        }
    }
    return 0;
}

typedef struct {
    float *out;
    const float *q;
    const void *kc, *vc;
    const qs_attn_batch *b;
    int n_heads, n_kv_heads, head_dim;
    float scale;
    qs_act_order order; /* of out's rows */
} attn_job;

static void attend_one(const attn_job *j, int64_t t, int h, double *scores, double *acc, float *tmp)
{
    const qs_attn_batch *b = j->b;
    int hd = j->head_dim;
    int kvh = h / (j->n_heads / j->n_kv_heads);
    int n_ctx = b->tok_pos[t] + 1;
    int first = b->sliding_window > 0 && n_ctx > b->sliding_window ? n_ctx - b->sliding_window : 0;
    if (b->attention_chunk > 0 && b->tok_pos[t] / b->attention_chunk * b->attention_chunk > first)
        first = b->tok_pos[t] / b->attention_chunk * b->attention_chunk; /* chunked local attention */
    const int32_t *table = b->block_tables + (int64_t)b->tok_seq[t] * b->max_blocks;
    const float *q = j->q + (t * j->n_heads + h) * (int64_t)hd;
    double max = -INFINITY;
    for (int p = first; p < n_ctx; p++) {
        const float *k = load_row(j->kc,
                                  cache_offset(table[p / QS_KV_BLOCK_SIZE], kvh, p % QS_KV_BLOCK_SIZE, j->n_kv_heads, hd),
                                  hd, b->kv_dtype, b->k_scale, tmp);
        double dot = 0;
        for (int i = 0; i < hd; i++)
            dot += (double)q[i] * k[i];
        scores[p] = dot * j->scale;
        if (scores[p] > max)
            max = scores[p];
    }
    double sum = 0;
    for (int p = first; p < n_ctx; p++) {
        scores[p] = exp(scores[p] - max);
        sum += scores[p];
    }
    for (int i = 0; i < hd; i++)
        acc[i] = 0;
    for (int p = first; p < n_ctx; p++) {
        const float *v = load_row(j->vc,
                                  cache_offset(table[p / QS_KV_BLOCK_SIZE], kvh, p % QS_KV_BLOCK_SIZE, j->n_kv_heads, hd),
                                  hd, b->kv_dtype, b->v_scale, tmp);
        double w = scores[p] / sum;
        for (int i = 0; i < hd; i++)
            acc[i] += w * v[i];
    }
    int64_t row = (int64_t)j->n_heads * hd;
    float *o = j->out + t * row;
    for (int i = 0; i < hd; i++)
        o[qs_act_position(j->order, (int64_t)h * hd + i)] = (float)acc[i];
}

static void attention_range(void *ctx, int64_t begin, int64_t end)
{
    attn_job *j = ctx;
    int max_ctx = 0;
    for (int64_t w = begin; w < end; w++) {
        int64_t t = w / j->n_heads;
        if (j->b->tok_pos[t] + 1 > max_ctx)
            max_ctx = j->b->tok_pos[t] + 1;
    }
    double *scores = malloc(sizeof(double) * (size_t)(max_ctx + j->head_dim) + sizeof(float) * (size_t)j->head_dim);
    if (!scores)
        abort(); /* a few KB per thread: only a broken machine gets here */
    double *acc = scores + max_ctx;
    float *tmp = (float *)(acc + j->head_dim);
    for (int64_t w = begin; w < end; w++)
        attend_one(j, w / j->n_heads, (int)(w % j->n_heads), scores, acc, tmp);
    free(scores);
}

int qs_cpu_attention(void *out, const void *q, const void *k_cache, const void *v_cache, const qs_attn_batch *b,
                     int n_heads, int n_kv_heads, int head_dim, float scale, qs_act_order order, qs_err *err)
{
    if (n_kv_heads <= 0 || n_heads % n_kv_heads != 0)
        return qs_errf(err, "attention: %d query heads do not group over %d kv heads", n_heads, n_kv_heads);
    if (qs_act_order_check(order, (int64_t)n_heads * head_dim, "attention", err))
        return -1;
    attn_job j = {.out = out, .q = q, .kc = k_cache, .vc = v_cache, .b = b, .n_heads = n_heads,
                  .n_kv_heads = n_kv_heads, .head_dim = head_dim, .scale = scale, .order = order};
    qs_parallel_for(b->n_tokens * n_heads, 4, attention_range, &j);
    return 0;
}
