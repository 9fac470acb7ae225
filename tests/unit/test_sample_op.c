/* test_sample_op.c — the reference sampling op (src/cpu/sample_cpu.c, defined in core/sample.h)
 * against a brute-force implementation of the same definition that sorts instead of searching
 * thresholds, on random logits and parameters (exact token equality: both run on this host, so
 * every weight is the same integer), plus the cases the definition spells out: greedy ties go to
 * the lowest id, top_k = 1 and a tiny top_p leave the argmax, min-p keeps exactly the tokens
 * within its ratio of the top one, banned ids are never drawn, u sweeps the kept tokens in id
 * order in proportion to their probabilities, skipped rows give -1, and bad arguments are errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ops.h"
#include "cpu/backend_cpu.h"

static const float *g_z; /* for the sort comparator */

static int by_z_desc(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    if (g_z[x] != g_z[y])
        return g_z[x] > g_z[y] ? -1 : 1;
    return x - y;
}

static bool banned(const qs_sample_row *r, int i)
{
    for (int j = 0; j < r->n_banned; j++)
        if (r->banned[j] == i)
            return true;
    return false;
}

static int32_t brute_greedy(const float *x, const qs_sample_row *r, int V)
{
    int best = -1;
    for (int i = 0; i < V; i++) {
        if (banned(r, i))
            continue;
        float v = isnan(x[i]) ? -INFINITY : x[i];
        float b = best < 0 ? 0 : (isnan(x[best]) ? -INFINITY : x[best]);
        if (best < 0 || v > b)
            best = i;
    }
    return best < 0 ? 0 : best;
}

/* core/sample.h, step by step, with a sort for the top-k and top-p thresholds. */
static int32_t brute(const float *x, const qs_sample_row *r, int V)
{
    if (r->skip)
        return -1;
    if (r->inv_temperature <= 0)
        return brute_greedy(x, r, V);
    float *z = malloc(sizeof(float) * V);
    int32_t *order = malloc(sizeof(int32_t) * V);
    bool *in = calloc(V, 1);
    int n = 0;
    float zmax = -INFINITY;
    for (int i = 0; i < V; i++) {
        z[i] = qs_sample_z(x[i], r->inv_temperature);
        if (!banned(r, i)) {
            order[n++] = i;
            zmax = z[i] > zmax ? z[i] : zmax;
        }
    }
    int32_t tok = -2;
    if (n == 0 || zmax == -INFINITY) {
        tok = brute_greedy(x, r, V);
        goto done;
    }
    g_z = z;
    qsort(order, n, sizeof(int32_t), by_z_desc);
    for (int j = 0; j < n; j++)
        in[order[j]] = z[order[j]] - zmax >= r->log_min_p;
    if (r->top_k > 0 && r->top_k < n)
        for (int j = 0; j < n; j++)
            in[order[j]] = in[order[j]] && z[order[j]] >= z[order[r->top_k - 1]];
    if (r->top_p > 0 && r->top_p < 1) {
        uint64_t m1 = 0, acc = 0;
        for (int j = 0; j < n; j++)
            m1 += in[order[j]] ? qs_sample_weight(z[order[j]], zmax) : 0;
        uint64_t need = qs_sample_top_p_need(r->top_p, m1);
        float t = zmax;
        for (int j = 0; j < n; j++) {
            if (!in[order[j]])
                continue;
            acc += qs_sample_weight(z[order[j]], zmax);
            if (acc >= need) {
                t = z[order[j]];
                break;
            }
        }
        for (int j = 0; j < n; j++)
            in[order[j]] = in[order[j]] && z[order[j]] >= t;
    }
    uint64_t m2 = 0, cum = 0;
    for (int i = 0; i < V; i++)
        m2 += in[i] ? qs_sample_weight(z[i], zmax) : 0;
    uint64_t target = qs_sample_target(r->u, m2);
    for (int i = 0; i < V && tok == -2; i++) {
        cum += in[i] ? qs_sample_weight(z[i], zmax) : 0;
        if (cum > target)
            tok = i;
    }
done:
    free(z);
    free(order);
    free(in);
    return tok;
}

static qs_sample_row row_of(double temperature, int top_k, double top_p, double min_p, double u)
{
    qs_sample_row r = {0};
    r.inv_temperature = temperature > 0 ? (float)(1.0 / temperature) : 0.0f;
    r.top_k = top_k;
    r.top_p = top_p;
    r.log_min_p = min_p > 0 ? (float)log(min_p) : -INFINITY;
    r.u = u;
    return r;
}

static int32_t op1(const float *x, const qs_sample_row *r, int V)
{
    int32_t tok = -99;
    qs_err err = {{0}};
    if (qs_ops_cpu()->sample(&tok, x, r, 1, V, &err))
        fail_msg("sample: %s", err.msg);
    return tok;
}

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static double rnd(void) /* [0, 1) */
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (double)(g_rng >> 11) * 0x1.0p-53;
}

static void random_rows_match_brute_force(void **state)
{
    (void)state;
    const int vocabs[] = {1, 2, 7, 512, 1000, 4099, 32000};
    const double temps[] = {0, 0.3, 1, 1.7};
    const int top_ks[] = {0, 1, 2, 5, 50, 1000};
    const double top_ps[] = {1, 0.95, 0.5, 0.01, 1e-9};
    const double min_ps[] = {0, 0.01, 0.2, 0.9};
    int checked = 0;
    for (size_t vi = 0; vi < sizeof vocabs / sizeof *vocabs; vi++) {
        int V = vocabs[vi];
        int n_rows = V > 5000 ? 12 : 40;
        float *x = malloc(sizeof(float) * (size_t)V * n_rows);
        qs_sample_row *rows = calloc(n_rows, sizeof *rows);
        int32_t *tok = malloc(sizeof(int32_t) * n_rows);
        for (int r = 0; r < n_rows; r++) {
            double scale = r % 3 == 0 ? 2 : (r % 3 == 1 ? 8 : 30);
            for (int i = 0; i < V; i++) {
                float v = (float)((rnd() * 2 - 1) * scale);
                if (r % 4 == 1) /* coarse values: many ties */
                    v = roundf(v * 4) / 4;
                x[(size_t)r * V + i] = v;
            }
            if (r % 11 == 5)
                x[(size_t)r * V + (int)(rnd() * V)] = -INFINITY;
            rows[r] = row_of(temps[(int)(rnd() * 4)], top_ks[(int)(rnd() * 6)], top_ps[(int)(rnd() * 5)],
                             min_ps[(int)(rnd() * 4)], rnd());
            rows[r].n_banned = r % 5 == 2 ? (int)(rnd() * 6) : 0;
            for (int j = 0; j < rows[r].n_banned; j++)
                rows[r].banned[j] = (int32_t)(rnd() * (V + 2)) - 1; /* also out of range */
            rows[r].skip = r % 13 == 7;
        }
        qs_err err = {{0}};
        assert_int_equal(qs_ops_cpu()->sample(tok, x, rows, n_rows, V, &err), 0);
        for (int r = 0; r < n_rows; r++) {
            int32_t want = brute(x + (size_t)r * V, &rows[r], V);
            if (tok[r] != want)
                fail_msg("vocab %d row %d (1/T %g, top_k %d, top_p %g, log min_p %g, u %.17g, %d banned): op %d, "
                         "brute force %d",
                         V, r, rows[r].inv_temperature, rows[r].top_k, rows[r].top_p, rows[r].log_min_p, rows[r].u,
                         rows[r].n_banned, tok[r], want);
            checked++;
        }
        free(x);
        free(rows);
        free(tok);
    }
    assert_true(checked > 200);
}

static void greedy_ties_go_to_the_lowest_id(void **state)
{
    (void)state;
    float x[12] = {0, 1, 2, 5, 1, 5, 0, 0, 0, 5, 3, NAN};
    qs_sample_row r = row_of(0, 0, 1, 0, 0.5);
    assert_int_equal(op1(x, &r, 12), 3);
    r.n_banned = 1;
    r.banned[0] = 3;
    assert_int_equal(op1(x, &r, 12), 5);
    r.n_banned = 3;
    r.banned[1] = 5;
    r.banned[2] = 9;
    assert_int_equal(op1(x, &r, 12), 10);
    float nz[3] = {-0.0f, 0.0f, -1};
    r = row_of(0, 0, 1, 0, 0.5);
    assert_int_equal(op1(nz, &r, 3), 0); /* -0 and +0 tie */
}

static void top_k_1_and_tiny_top_p_leave_the_argmax(void **state)
{
    (void)state;
    float x[100];
    for (int i = 0; i < 100; i++)
        x[i] = (float)sin(i * 1.3) * 3;
    int am = 0;
    for (int i = 1; i < 100; i++)
        am = x[i] > x[am] ? i : am;
    for (int k = 0; k < 50; k++) {
        double u = k / 50.0;
        qs_sample_row r = row_of(1.0, 1, 1, 0, u);
        assert_int_equal(op1(x, &r, 100), am);
        r = row_of(0.7, 0, 1e-6, 0, u);
        assert_int_equal(op1(x, &r, 100), am);
    }
    /* ties at the top with top_k = 1: both are kept (the definition keeps ties), half the u each */
    x[17] = x[am];
    int lo = am < 17 ? am : 17, hi = am < 17 ? 17 : am, seen_lo = 0, seen_hi = 0;
    for (int k = 0; k < 100; k++) {
        qs_sample_row r = row_of(1.0, 1, 1, 0, k / 100.0);
        int32_t t = op1(x, &r, 100);
        assert_true(t == lo || t == hi);
        seen_lo += t == lo;
        seen_hi += t == hi;
    }
    assert_int_equal(seen_lo, 50);
    assert_int_equal(seen_hi, 50);
}

static void min_p_keeps_tokens_within_its_ratio(void **state)
{
    (void)state;
    float x[40];
    for (int i = 0; i < 40; i++)
        x[i] = -(float)((i * 7) % 40) * 0.5f; /* a permutation of 0, -0.5, ..., -19.5 */
    /* min_p = e^-2.2: kept are z >= -2.2, i.e. the five values 0 .. -2 */
    bool kept[40] = {0}, seen[40] = {0};
    for (int i = 0; i < 40; i++)
        kept[i] = x[i] >= -2.2f;
    for (int k = 0; k < 400; k++) {
        qs_sample_row r = row_of(1.0, 0, 1, exp(-2.2), k / 400.0);
        int32_t t = op1(x, &r, 40);
        assert_true(t >= 0 && t < 40);
        if (!kept[t])
            fail_msg("token %d (logit %g) is below min_p", t, x[t]);
        seen[t] = true;
    }
    for (int i = 0; i < 40; i++)
        if (kept[i] && !seen[i])
            fail_msg("token %d (logit %g) is within min_p but never drawn", i, x[i]);
}

static void banned_ids_are_never_drawn(void **state)
{
    (void)state;
    float x[64];
    for (int i = 0; i < 64; i++)
        x[i] = (float)(i % 8) * 0.1f;
    x[7] = 30; /* the top token, by far */
    qs_sample_row r = row_of(1.0, 0, 1, 0, 0.5);
    r.n_banned = 2;
    r.banned[0] = 7;
    r.banned[1] = 15;
    for (int k = 0; k < 200; k++) {
        r.u = k / 200.0;
        int32_t t = op1(x, &r, 64);
        assert_true(t != 7 && t != 15 && t >= 0 && t < 64);
    }
    /* everything banned but one id; everything banned; every allowed logit -inf */
    float y[4] = {1, 2, 3, 4};
    r.n_banned = 3;
    r.banned[0] = 0, r.banned[1] = 1, r.banned[2] = 3;
    assert_int_equal(op1(y, &r, 4), 2);
    r.n_banned = 4;
    r.banned[3] = 2;
    assert_int_equal(op1(y, &r, 4), 0);
    float ninf[4] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY};
    r.n_banned = 1;
    r.banned[0] = 0;
    assert_int_equal(op1(ninf, &r, 4), 1);
}

static void u_sweeps_ids_in_proportion(void **state)
{
    (void)state;
    /* probabilities 1 : 2 : 3 (weights exact to 2^-40) and a token far below */
    float x[5] = {0, logf(2), -100, logf(3), -100};
    int count[5] = {0};
    int prev = -1;
    for (int k = 0; k < 6000; k++) {
        qs_sample_row r = row_of(1.0, 0, 1, 0, (k + 0.5) / 6000.0);
        int32_t t = op1(x, &r, 5);
        assert_true(t >= prev); /* the walk is in id order */
        prev = t;
        count[t]++;
    }
    assert_true(abs(count[0] - 1000) <= 1 && abs(count[1] - 2000) <= 1 && abs(count[3] - 3000) <= 1);
    assert_int_equal(count[2] + count[4], 0);
    qs_sample_row r = row_of(1.0, 0, 1, 0, 0.0);
    assert_int_equal(op1(x, &r, 5), 0);
    r.u = 1.0 - 0x1.0p-53;
    assert_int_equal(op1(x, &r, 5), 3);
    r.top_p = 0.5; /* 3/6 reaches 0.5 alone */
    for (int k = 0; k < 20; k++) {
        r.u = k / 20.0;
        assert_int_equal(op1(x, &r, 5), 3);
    }
}

static void skipped_rows_and_bad_arguments(void **state)
{
    (void)state;
    float x[8] = {0};
    qs_sample_row rows[2] = {row_of(0, 0, 1, 0, 0), row_of(0, 0, 1, 0, 0)};
    rows[1].skip = 1;
    int32_t tok[2] = {-7, -7};
    qs_err err = {{0}};
    assert_int_equal(qs_ops_cpu()->sample(tok, x, rows, 2, 8, &err), 0);
    assert_int_equal(tok[0], 0);
    assert_int_equal(tok[1], -1);
    assert_int_equal(qs_ops_cpu()->sample(tok, x, rows, 1, 0, &err), -1);
    assert_non_null(strstr(err.msg, "vocab_size"));
    rows[0].n_banned = QS_SAMPLE_MAX_BANNED + 1;
    assert_int_equal(qs_ops_cpu()->sample(tok, x, rows, 1, 8, &err), -1);
    assert_non_null(strstr(err.msg, "bans"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(random_rows_match_brute_force),
        cmocka_unit_test(greedy_ties_go_to_the_lowest_id),
        cmocka_unit_test(top_k_1_and_tiny_top_p_leave_the_argmax),
        cmocka_unit_test(min_p_keeps_tokens_within_its_ratio),
        cmocka_unit_test(banned_ids_are_never_drawn),
        cmocka_unit_test(u_sweeps_ids_in_proportion),
        cmocka_unit_test(skipped_rows_and_bad_arguments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
