/* ops_cpu.c — the CPU implementation of the ops interface (core/ops.h): memory, weight
 * upload, embedding, RMSNorm, bias, RoPE, SwiGLU (also over a fused gate/up output), the column
 * split of a fused q/k/v output and row gathers over float32 activations.
 * Attention and the KV cache writes live in ops_cpu_attention.c, MoE routing in ops_cpu_moe.c,
 * sampling in sample_cpu.c.
 * Plain, obviously-right C: this is the executable specification the CUDA ops are tested
 * against. Row loops go through qs_parallel_for where the work is large enough to pay. */
#include "cpu/ops_cpu.h"
#include "cpu/ops_cpu_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/parallel.h"

static void *cpu_alloc(size_t bytes, qs_err *err)
{
    void *p = calloc(1, bytes ? bytes : 1);
    if (!p)
        qs_errf(err, "cpu ops: out of memory allocating %zu bytes", bytes);
    return p;
}

static void cpu_free(void *p) { free(p); }

static int cpu_copy(void *dst, const void *src, size_t bytes, qs_err *err)
{
    (void)err;
    if (bytes)
        memmove(dst, src, bytes);
    return 0;
}

static void *cpu_upload_tensor(const qs_tensor *t, qs_err *err)
{
    if (t->dtype != QS_DT_F32 && t->dtype != QS_DT_F16 && t->dtype != QS_DT_BF16 && t->dtype != QS_DT_F64) {
        qs_errf(err, "tensor %s: dtype %s is not a float type the CPU ops can load", t->name,
                qs_dtype_name(t->dtype));
        return NULL;
    }
    if (!t->data) {
        qs_errf(err, "tensor %s: no data mapped", t->name);
        return NULL;
    }
    float *w = cpu_alloc((size_t)t->numel * sizeof(float), err);
    if (!w)
        return NULL;
    for (int64_t i = 0; i < t->numel; i++)
        w[i] = qs_tensor_get_f32(t, i);
    return w;
}

static int cpu_acts_copy_f32(float *dst, const void *src, int64_t n, qs_err *err)
{
    return cpu_copy(dst, src, (size_t)n * sizeof(float), err);
}

static int cpu_acts_from_f32(void *dst, const float *src, int64_t n, qs_err *err)
{
    return cpu_copy(dst, src, (size_t)n * sizeof(float), err);
}

static int cpu_embedding(void *out, const void *table, const int32_t *ids, int64_t n_tokens, int64_t d, qs_err *err)
{
    (void)err;
    float *o = out;
    const float *tab = table;
    for (int64_t t = 0; t < n_tokens; t++)
        memcpy(o + t * d, tab + (int64_t)ids[t] * d, (size_t)d * sizeof(float));
    return 0;
}

/* out[qs_act_position(order, i)] = the normalised x[i]. */
static void rmsnorm_row(float *out, const float *x, const float *w, int64_t d, float eps, qs_act_order order)
{
    double ss = 0;
    for (int64_t i = 0; i < d; i++)
        ss += (double)x[i] * x[i];
    float inv = (float)(1.0 / sqrt(ss / (double)d + eps));
    for (int64_t i = 0; i < d; i++)
        out[qs_act_position(order, i)] = x[i] * inv * w[i];
}

typedef struct {
    float *out, *residual;
    const float *x, *w;
    int64_t d;
    float eps;
    qs_act_order order;
} norm_job;

static void rmsnorm_range(void *ctx, int64_t b, int64_t e)
{
    norm_job *j = ctx;
    for (int64_t r = b; r < e; r++)
        rmsnorm_row(j->out + r * j->d, j->x + r * j->d, j->w, j->d, j->eps, QS_ACT_NATURAL);
}

static int cpu_rmsnorm(void *out, const void *x, const void *w, int64_t rows, int64_t d, float eps, qs_err *err)
{
    (void)err;
    norm_job j = {.out = out, .x = x, .w = w, .d = d, .eps = eps};
    qs_parallel_for(rows, 64, rmsnorm_range, &j);
    return 0;
}

static void add_rmsnorm_range(void *ctx, int64_t b, int64_t e)
{
    norm_job *j = ctx;
    for (int64_t r = b; r < e; r++) {
        float *res = j->residual + r * j->d;
        const float *x = j->x + r * j->d;
        for (int64_t i = 0; i < j->d; i++)
            res[i] += x[i];
        rmsnorm_row(j->out + r * j->d, res, j->w, j->d, j->eps, j->order);
    }
}

static int cpu_add_rmsnorm(void *residual, const void *x, void *out, const void *w, int64_t rows, int64_t d,
                           float eps, qs_act_order order, qs_err *err)
{
    if (qs_act_order_check(order, d, "add_rmsnorm", err))
        return -1;
    norm_job j = {.out = out, .residual = residual, .x = x, .w = w, .d = d, .eps = eps, .order = order};
    qs_parallel_for(rows, 64, add_rmsnorm_range, &j);
    return 0;
}

static int cpu_add_bias(void *y, const void *bias, int64_t rows, int64_t n, qs_err *err)
{
    (void)err;
    float *o = y;
    const float *b = bias;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t i = 0; i < n; i++)
            o[r * n + i] += b[i];
    return 0;
}

static int cpu_rope(void *x, const int32_t *pos, const void *inv_freq, int64_t n_tokens, int n_heads, int head_dim,
                    qs_err *err)
{
    (void)err;
    float *v = x;
    const float *f = inv_freq;
    int half = head_dim / 2;
    for (int64_t t = 0; t < n_tokens; t++) {
        for (int i = 0; i < half; i++) {
            /* float32 angle as HF computes it (position * inv_freq in fp32), then cos/sin */
            float angle = (float)pos[t] * f[i];
            float c = cosf(angle), s = sinf(angle);
            for (int h = 0; h < n_heads; h++) {
                float *row = v + (t * n_heads + h) * (int64_t)head_dim;
                float a = row[i], b = row[i + half];
                row[i] = a * c - b * s;
                row[i + half] = b * c + a * s;
            }
        }
    }
    return 0;
}

static int cpu_swiglu(void *out, const void *gate, const void *up, int64_t rows, int64_t n, qs_err *err)
{
    (void)err;
    float *o = out;
    const float *g = gate, *u = up;
    for (int64_t i = 0; i < rows * n; i++)
        o[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
    return 0;
}

/* Same expression as cpu_swiglu, so a fused gate/up layer gives bitwise the same activations. */
static int cpu_swiglu_gate_up(void *out, const void *gate_up, int64_t rows, int64_t n, qs_act_order order,
                              qs_err *err)
{
    if (qs_act_order_check(order, n, "swiglu_gate_up", err))
        return -1;
    float *o = out;
    const float *x = gate_up;
    for (int64_t r = 0; r < rows; r++) {
        const float *g = x + r * 2 * n, *u = g + n;
        for (int64_t i = 0; i < n; i++)
            o[r * n + qs_act_position(order, i)] = g[i] / (1.0f + expf(-g[i])) * u[i];
    }
    return 0;
}

static int cpu_split_qkv(void *out0, void *out1, void *out2, const void *x, int64_t rows, int64_t n0, int64_t n1,
                         int64_t n2, qs_err *err)
{
    (void)err;
    const float *in = x;
    float *q = out0, *k = out1, *v = out2;
    int64_t w = n0 + n1 + n2;
    for (int64_t r = 0; r < rows; r++) {
        const float *row = in + r * w;
        memcpy(q + r * n0, row, sizeof(float) * (size_t)n0);
        memcpy(k + r * n1, row + n0, sizeof(float) * (size_t)n1);
        memcpy(v + r * n2, row + n0 + n1, sizeof(float) * (size_t)n2);
    }
    return 0;
}

/* The four ops qkv_rope_cache stands for, one after another, through scratch k and v rows. */
static int cpu_qkv_rope_cache(void *q, void *k_cache, void *v_cache, const void *qkv, const qs_attn_batch *b,
                              const void *inv_freq, int n_heads, int n_kv_heads, int head_dim, qs_err *err)
{
    const int64_t T = b->n_tokens, nq = (int64_t)n_heads * head_dim, nkv = (int64_t)n_kv_heads * head_dim;
    float *k = malloc(sizeof(float) * (size_t)(2 * T * nkv + 1)), *v = k + T * nkv; /* (+1: never zero) */
    int rc = !k ? qs_errf(err, "qkv_rope_cache: out of memory for %lld tokens", (long long)T)
                : cpu_split_qkv(q, k, v, qkv, T, nq, nkv, nkv, err) ||
                      cpu_rope(q, b->tok_pos, inv_freq, T, n_heads, head_dim, err) ||
                      cpu_rope(k, b->tok_pos, inv_freq, T, n_kv_heads, head_dim, err) ||
                      qs_cpu_kv_write(k_cache, v_cache, k, v, b, n_kv_heads, head_dim, err);
    free(k);
    return rc ? -1 : 0;
}

static int cpu_gather_rows(void *out, const void *x, const int32_t *rows, int64_t n, int64_t d, qs_err *err)
{
    (void)err;
    float *o = out;
    const float *in = x;
    for (int64_t i = 0; i < n; i++)
        memmove(o + i * d, in + (int64_t)rows[i] * d, (size_t)d * sizeof(float));
    return 0;
}

static const qs_ops CPU_OPS = {
    .name = "cpu",
    .platform = QS_PLATFORM_CPU,
    .act_size = sizeof(float),
    .alloc = cpu_alloc,
    .free = cpu_free,
    .copy_to_device = cpu_copy,
    .copy_to_host = cpu_copy,
    .upload_tensor = cpu_upload_tensor,
    .acts_to_host_f32 = cpu_acts_copy_f32,
    .acts_from_host_f32 = cpu_acts_from_f32,
    .embedding = cpu_embedding,
    .rmsnorm = cpu_rmsnorm,
    .add_rmsnorm = cpu_add_rmsnorm,
    .add_bias = cpu_add_bias,
    .rope = cpu_rope,
    .kv_write = qs_cpu_kv_write,
    .attention = qs_cpu_attention,
    .swiglu = cpu_swiglu,
    .moe_route = qs_cpu_moe_route,
    .gather_rows = cpu_gather_rows,
    .split_qkv = cpu_split_qkv,
    .swiglu_gate_up = cpu_swiglu_gate_up,
    .qkv_rope_cache = cpu_qkv_rope_cache,
    .sample = qs_cpu_sample,
    .rope_interleaved = qs_cpu_rope_interleaved,
    .attn_temperature = qs_cpu_attn_temperature,
    .moe_route_scale_input = qs_cpu_moe_route_scale_input,
    .moe_expert_slice = qs_cpu_moe_expert_slice,
    .add = qs_cpu_add,
};

const qs_ops *qs_ops_cpu(void) { return &CPU_OPS; }
