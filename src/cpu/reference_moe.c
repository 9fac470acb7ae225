/* reference_moe.c — the CPU `reference` MoE kernel: every expert projection is a reference linear
 * (its own scheme, scales and activation quantization). apply groups the tokens by expert, runs
 * gate and up on that expert's rows, SwiGLU h = silu(gate) * up, then down, and keeps each
 * (token, slot) result; the output of a token is then sum_j w[j] * out[j] in slot order, so a
 * token's result never depends on which other tokens share the batch. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/reference_kernels.h"
#include "cpu/reference_linear_impl.h"

typedef struct {
    int num_experts, top_k;
    int64_t hidden, inter;
    qs_ref_linear *gate, *up, *down;   /* [num_experts] each */
} ref_moe;

static void moe_free(ref_moe *M)
{
    if (!M)
        return;
    for (int e = 0; e < M->num_experts; e++) {
        if (M->gate)
            qs_ref_linear_destroy(&M->gate[e]);
        if (M->up)
            qs_ref_linear_destroy(&M->up[e]);
        if (M->down)
            qs_ref_linear_destroy(&M->down[e]);
    }
    free(M->gate);
    free(M->up);
    free(M->down);
    free(M);
}

static int ref_can_moe(const qs_moe_desc *d, char *why, size_t cap)
{
    if (!d->gate || !d->up || !d->down || d->num_experts <= 0 || d->top_k <= 0 || d->top_k > d->num_experts) {
        snprintf(why, cap, "MoE layer %s is incomplete (experts %d, top-k %d)", d->name, d->num_experts, d->top_k);
        return 0;
    }
    for (int e = 0; e < d->num_experts; e++) {
        const qs_linear_desc *p[3] = {&d->gate[e], &d->up[e], &d->down[e]};
        for (int j = 0; j < 3; j++)
            if (!qs_ref_linear_check(p[j], why, cap))
                return 0;
        if (d->gate[e].n != d->inter || d->gate[e].k != d->hidden || d->up[e].n != d->inter ||
            d->up[e].k != d->hidden || d->down[e].n != d->hidden || d->down[e].k != d->inter) {
            snprintf(why, cap, "MoE layer %s: expert %d shapes do not match hidden %lld / intermediate %lld", d->name,
                     e, (long long)d->hidden, (long long)d->inter);
            return 0;
        }
    }
    return 1;
}

static int ref_prepare_moe(const qs_moe_desc *d, void **state, qs_err *err)
{
    char why[QS_REASON_MAX];
    if (!ref_can_moe(d, why, sizeof why))
        return qs_errf(err, "reference MoE: %s", why);
    ref_moe *M = calloc(1, sizeof *M);
    if (!M)
        return qs_errf(err, "MoE layer %s: out of memory", d->name);
    M->num_experts = d->num_experts;
    M->top_k = d->top_k;
    M->hidden = d->hidden;
    M->inter = d->inter;
    M->gate = calloc((size_t)d->num_experts, sizeof *M->gate);
    M->up = calloc((size_t)d->num_experts, sizeof *M->up);
    M->down = calloc((size_t)d->num_experts, sizeof *M->down);
    if (!M->gate || !M->up || !M->down) {
        moe_free(M);
        return qs_errf(err, "MoE layer %s: out of memory", d->name);
    }
    for (int e = 0; e < d->num_experts; e++)
        if (qs_ref_linear_init(&M->gate[e], &d->gate[e], err) || qs_ref_linear_init(&M->up[e], &d->up[e], err) ||
            qs_ref_linear_init(&M->down[e], &d->down[e], err)) {
            moe_free(M);
            return qs_err_prefix(err, "MoE layer %s expert %d: ", d->name, e);
        }
    *state = M;
    return 0;
}

static int ref_apply_moe(const void *state, const void *xv, const int32_t *ids, const float *weights, void *yv,
                         int64_t m, void *stream, qs_err *err)
{
    (void)stream;
    const ref_moe *M = state;
    const float *x = xv;
    float *y = yv;
    int64_t H = M->hidden, I = M->inter, K = M->top_k;
    if (m <= 0)
        return 0;
    for (int64_t t = 0; t < m * K; t++) /* (-1: another rank's expert, skipped) */
        if (ids[t] < -1 || ids[t] >= M->num_experts)
            return qs_errf(err, "MoE: topk_ids[%lld][%lld] = %d is outside 0..%d", (long long)(t / K),
                           (long long)(t % K), ids[t], M->num_experts - 1);
    int rc = -1;
    float *slot_out = malloc((size_t)(m * K * H) * sizeof(float));
    int64_t *rows = malloc((size_t)(m * K) * sizeof(int64_t));
    float *xe = malloc((size_t)(m * K * H) * sizeof(float));
    float *g = malloc((size_t)(m * K * I) * sizeof(float));
    float *u = malloc((size_t)(m * K * I) * sizeof(float));
    float *de = malloc((size_t)(m * K * H) * sizeof(float));
    if (!slot_out || !rows || !xe || !g || !u || !de) {
        qs_errf(err, "MoE: out of memory for %lld tokens", (long long)m);
        goto done;
    }
    for (int e = 0; e < M->num_experts; e++) {
        int64_t cnt = 0;
        for (int64_t t = 0; t < m * K; t++)
            if (ids[t] == e) {
                rows[cnt] = t;
                memcpy(xe + cnt * H, x + (t / K) * H, (size_t)H * sizeof(float));
                cnt++;
            }
        if (!cnt)
            continue;
        if (qs_ref_linear_run(&M->gate[e], xe, g, cnt, err) || qs_ref_linear_run(&M->up[e], xe, u, cnt, err))
            goto done;
        for (int64_t i = 0; i < cnt * I; i++)
            g[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
        if (qs_ref_linear_run(&M->down[e], g, de, cnt, err))
            goto done;
        for (int64_t r = 0; r < cnt; r++)
            memcpy(slot_out + rows[r] * H, de + r * H, (size_t)H * sizeof(float));
    }
    for (int64_t i = 0; i < m; i++) {
        float *yi = y + i * H;
        for (int64_t h = 0; h < H; h++)
            yi[h] = 0.0f;
        for (int64_t j = 0; j < K; j++) {
            if (ids[i * K + j] < 0)
                continue;
            float w = weights[i * K + j];
            const float *o = slot_out + (i * K + j) * H;
            for (int64_t h = 0; h < H; h++)
                yi[h] += w * o[h];
        }
    }
    rc = 0;
done:
    free(slot_out);
    free(rows);
    free(xe);
    free(g);
    free(u);
    free(de);
    return rc;
}

static void ref_release_moe(void *state)
{
    moe_free(state);
}

const qs_kernel qs_kernel_reference_moe = {
    .name = "reference",
    .platform = QS_PLATFORM_CPU,
    .kind = QS_KIND_MOE,
    .schemes = (1u << QS_SCHEME_COUNT) - 1u,
    .batch_invariant = true,
    .is_supported = qs_ref_is_supported,
    .can_implement_moe = ref_can_moe,
    .prepare_moe = ref_prepare_moe,
    .apply_moe = ref_apply_moe,
    .release = ref_release_moe,
};
