/* sample_cpu.c — the reference sampling op (ops.h: sample; the algorithm is defined in
 * core/sample.h) over float32 logits. It follows the same steps as the CUDA kernel
 * (cuda/sample_cuda.cu) — a greedy pass, threshold searches by a three-level radix select over
 * the keys (12, 12 and 8 bits) instead of a sort, then a walk in id order — one row at a time
 * with per-row arrays, so that the two can be compared token for token; tests/unit/test_sample_op.c
 * checks it against a plain sort-based implementation of the definition. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/ops_cpu_internal.h"

static bool is_banned(const qs_sample_row *r, int64_t id)
{
    for (int j = 0; j < r->n_banned; j++)
        if (r->banned[j] == id)
            return true;
    return false;
}

/* Step 1: the allowed id with the largest logit (NaN as -inf), ties to the lowest; 0 when none. */
static int32_t greedy(const float *x, const unsigned char *allowed, int64_t V)
{
    int64_t best = -1;
    float bx = 0;
    for (int64_t i = 0; i < V; i++) {
        if (!allowed[i])
            continue;
        float v = x[i] != x[i] ? -INFINITY : x[i];
        if (best < 0 || v > bx) {
            best = i;
            bx = v;
        }
    }
    return best < 0 ? 0 : (int32_t)best;
}

/* The largest key t such that the candidates (in[i]) with key >= t weigh at least need (weight
 * w[i], or 1 each when w is NULL): the top-k and top-p thresholds. Digits of 12, 12 and 8 bits
 * from the top; `above` is the weight of candidates above the prefix found so far. */
static uint32_t select_key(const uint32_t *key, const uint64_t *w, const unsigned char *in, int64_t V, uint64_t need,
                           uint64_t hist[4096])
{
    static const int shift[3] = {20, 8, 0}, bits[3] = {12, 12, 8};
    uint32_t prefix = 0;
    uint64_t above = 0;
    for (int l = 0; l < 3; l++) {
        int nb = 1 << bits[l], hi = shift[l] + bits[l];
        memset(hist, 0, sizeof(uint64_t) * (size_t)nb);
        for (int64_t i = 0; i < V; i++)
            if (in[i] && (hi == 32 || (key[i] >> hi) == (prefix >> hi)))
                hist[(key[i] >> shift[l]) & (uint32_t)(nb - 1)] += w ? w[i] : 1;
        int b = nb - 1;
        for (; b > 0; b--) {
            if (above + hist[b] >= need)
                break;
            above += hist[b];
        }
        prefix |= (uint32_t)b << shift[l];
    }
    return prefix;
}

typedef struct row_scratch {
    float *z;
    uint32_t *key;
    uint64_t *w;
    unsigned char *allowed, *in;
    uint64_t hist[4096];
} row_scratch;

static int32_t sample_row(const float *x, const qs_sample_row *r, int64_t V, row_scratch *s)
{
    int64_t n_allowed = 0;
    for (int64_t i = 0; i < V; i++) {
        s->allowed[i] = !is_banned(r, i);
        n_allowed += s->allowed[i];
    }
    if (r->inv_temperature <= 0 || n_allowed == 0)
        return greedy(x, s->allowed, V);
    float zmax = -INFINITY;
    for (int64_t i = 0; i < V; i++) {
        s->z[i] = qs_sample_z(x[i], r->inv_temperature);
        if (s->allowed[i] && s->z[i] > zmax)
            zmax = s->z[i];
    }
    if (zmax == -INFINITY)
        return greedy(x, s->allowed, V);
    for (int64_t i = 0; i < V; i++) {
        s->key[i] = qs_sample_key(s->z[i]);
        s->w[i] = s->allowed[i] ? qs_sample_weight(s->z[i], zmax) : 0;
        s->in[i] = s->allowed[i] && qs_sample_min_p_ok(s->z[i], zmax, r->log_min_p);
    }
    if (r->top_k > 0 && r->top_k < n_allowed) { /* step 5: the top_k-th largest key among the allowed */
        uint32_t kth = select_key(s->key, NULL, s->allowed, V, (uint64_t)r->top_k, s->hist);
        for (int64_t i = 0; i < V; i++)
            s->in[i] = s->in[i] && s->key[i] >= kth;
    }
    if (r->top_p > 0 && r->top_p < 1) { /* step 6 */
        uint64_t m1 = 0;
        for (int64_t i = 0; i < V; i++)
            m1 += s->in[i] ? s->w[i] : 0;
        uint32_t t = select_key(s->key, s->w, s->in, V, qs_sample_top_p_need(r->top_p, m1), s->hist);
        for (int64_t i = 0; i < V; i++)
            s->in[i] = s->in[i] && s->key[i] >= t;
    }
    uint64_t m2 = 0; /* step 7 */
    for (int64_t i = 0; i < V; i++)
        m2 += s->in[i] ? s->w[i] : 0;
    uint64_t target = qs_sample_target(r->u, m2), cum = 0;
    for (int64_t i = 0; i < V; i++) {
        cum += s->in[i] ? s->w[i] : 0;
        if (cum > target)
            return (int32_t)i;
    }
    return greedy(x, s->allowed, V); /* not reached: the top id weighs 2^40 */
}

int qs_cpu_sample(int32_t *tokens, const void *logits, const qs_sample_row *rows, int64_t n_rows, int64_t vocab,
                  qs_err *err)
{
    if (vocab < 1 || vocab > QS_SAMPLE_MAX_VOCAB)
        return qs_errf(err, "sample: vocab_size %lld outside 1..%d", (long long)vocab, QS_SAMPLE_MAX_VOCAB);
    for (int64_t r = 0; r < n_rows; r++)
        if (rows[r].n_banned < 0 || rows[r].n_banned > QS_SAMPLE_MAX_BANNED)
            return qs_errf(err, "sample: row %lld bans %d ids, outside 0..%d", (long long)r, rows[r].n_banned,
                           QS_SAMPLE_MAX_BANNED);
    row_scratch s = {malloc(sizeof(float) * (size_t)vocab), malloc(sizeof(uint32_t) * (size_t)vocab),
                     malloc(sizeof(uint64_t) * (size_t)vocab), malloc((size_t)vocab), malloc((size_t)vocab), {0}};
    int rc = 0;
    if (!s.z || !s.key || !s.w || !s.allowed || !s.in) {
        rc = qs_errf(err, "sample: out of memory for a row of %lld logits", (long long)vocab);
        goto done;
    }
    const float *x = logits;
    for (int64_t r = 0; r < n_rows; r++)
        tokens[r] = rows[r].skip ? -1 : sample_row(x + r * vocab, &rows[r], vocab, &s);
done:
    free(s.z);
    free(s.key);
    free(s.w);
    free(s.allowed);
    free(s.in);
    return rc;
}
