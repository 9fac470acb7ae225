/* ops_cpu_llama4.c — the CPU ops only Llama 4 needs (core/ops.h): interleaved-pair RoPE, the NoPE
 * layers' attention temperature, top-1 routing whose sigmoid score scales the expert's input, and
 * the element-wise add of the shared expert. Written as plainly as transformers' modeling_llama4.py
 * computes them, in float32. */
#include "cpu/ops_cpu_internal.h"

#include <math.h>

int qs_cpu_rope_interleaved(void *x, const int32_t *pos, const void *inv_freq, int64_t n_tokens, int n_heads,
                            int head_dim, qs_err *err)
{
    (void)err;
    float *v = x;
    const float *f = inv_freq;
    for (int64_t t = 0; t < n_tokens; t++)
        for (int i = 0; i < head_dim / 2; i++) {
            float angle = (float)pos[t] * f[i];
            float c = cosf(angle), s = sinf(angle);
            for (int h = 0; h < n_heads; h++) {
                float *p = v + (t * n_heads + h) * (int64_t)head_dim + 2 * i;
                float re = p[0], im = p[1];
                p[0] = re * c - im * s; /* (re + i im) * (c + i s) */
                p[1] = re * s + im * c;
            }
        }
    return 0;
}

int qs_cpu_attn_temperature(void *x, const int32_t *pos, int64_t n_tokens, int64_t n, float floor_scale,
                            float attn_scale, qs_err *err)
{
    (void)err;
    float *v = x;
    for (int64_t t = 0; t < n_tokens; t++) {
        float scale = log1pf(floorf(((float)pos[t] + 1.0f) / floor_scale)) * attn_scale + 1.0f;
        for (int64_t i = 0; i < n; i++)
            v[t * n + i] *= scale;
    }
    return 0;
}

int qs_cpu_moe_route_scale_input(const void *router_logits, const void *x, void *x_scaled, int32_t *topk_ids,
                                 float *topk_weights, int64_t n_tokens, int n_experts, int64_t d, qs_err *err)
{
    if (n_experts <= 0)
        return qs_errf(err, "llama4 routing: %d experts", n_experts);
    const float *l = router_logits, *in = x;
    float *out = x_scaled;
    for (int64_t t = 0; t < n_tokens; t++) {
        const float *r = l + t * n_experts;
        int best = 0;
        for (int e = 1; e < n_experts; e++)
            if (r[e] > r[best])
                best = e;
        topk_ids[t] = best;
        topk_weights[t] = 1.0f;
        float s = 1.0f / (1.0f + expf(-r[best]));
        for (int64_t i = 0; i < d; i++)
            out[t * d + i] = in[t * d + i] * s;
    }
    return 0;
}

int qs_cpu_add(void *y, const void *x, int64_t n, qs_err *err)
{
    (void)err;
    float *a = y;
    const float *b = x;
    for (int64_t i = 0; i < n; i++)
        a[i] += b[i];
    return 0;
}
