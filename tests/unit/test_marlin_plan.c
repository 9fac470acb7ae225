/* test_marlin_plan.c — marlin's kernel table (cuda/marlin_plan.h) against the rules it replaced.
 * Before the table, four predicates made the choice — stream_takes (marlin_stream.cu),
 * wgmma_takes (marlin_wgmma.cu), gemv_max_m (marlin_gemv.cu) and gemm()'s order of asking them —
 * and reserve_workspace (marlin_gemm.cu) walked a second copy of the same ladder. Those rules are
 * kept here, as they were, as the reference: over a grid of layer shapes (FP8, 128x128-block FP8,
 * NVFP4; Llama-3.1-8B's, MoE experts', odd ones), multiprocessor counts, with and without the
 * sm_90a kernels, every step size to 300 tokens, x natural or in the packed order, addresses the
 * stream kernel can read or not, and the dev build's knob settings, the table and the per-layer
 * plan made from it must answer as the old rules did. Also a few rows spelled out, so that a
 * change to the table shows in a readable failure. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>

#include "marlin_plan.h"

/* ---- the old rules, as they were (knobs as parameters instead of function statics) ---- */
typedef struct {
    int stream_mode, stream_lo, stream_hi; /* stream_hi already min(knob, 64) */
    int wg_mode, wg_lo, wg_hi;             /* wg_hi already min(knob, 256) */
    int64_t gemv_cap;                      /* min(max(0, knob), 64) */
} old_knobs;

static int64_t old_stages_per_sm(const qs_marlin_shape *l, int sms) { return (l->n_pad / 16 + 8 - 1) / 8 * (l->k_pad / 128) / sms; }

static bool old_ordered_small_step(const qs_marlin_shape *l, int64_t m, int sms)
{
    return l->fp4 && m >= 9 && m <= 16 && old_stages_per_sm(l, sms) >= 40;
}

static bool old_stream_takes(const qs_marlin_shape *l, int64_t m, int sms, bool sm90, bool ordered, const old_knobs *kn)
{
    if (!kn->stream_mode || !sm90 || l->block || m > 64 || l->k_pad % 128 != 0 || l->k % 8 != 0 || l->n % 8 != 0)
        return false;
    if (kn->stream_mode == 2)
        return m >= kn->stream_lo && m <= kn->stream_hi;
    const int64_t per_sm = old_stages_per_sm(l, sms);
    if (m >= 17)
        return !(l->fp4 && per_sm < 10 && m <= 32);
    return m >= 9 && ((!l->fp4 && per_sm >= 20) || (ordered && old_ordered_small_step(l, m, sms)));
}

static bool old_wgmma_takes(const qs_marlin_shape *l, int64_t m, int sms, bool sm90, const old_knobs *kn)
{
    if (!kn->wg_mode || !sm90 || l->block || m < kn->wg_lo || m > kn->wg_hi || l->k_pad % 128 != 0)
        return false;
    if (kn->wg_mode == 2 || l->n_pad / (16 * 8) >= sms)
        return true;
    return m > 64 && l->n_pad >= 4096 && l->k_pad >= 4096;
}

static int64_t old_gemv_max_m(const qs_marlin_shape *l, const old_knobs *kn) { return l->block ? 0 : kn->gemv_cap; }

/* gemm()'s order: stream (when it takes the step and the addresses suit it), wgmma, small-M, tiled */
static qs_marlin_path old_gemm_path(const qs_marlin_shape *l, int64_t m, int sms, bool sm90, bool ordered, bool fits,
                                    const old_knobs *kn)
{
    if (old_stream_takes(l, m, sms, sm90, ordered, kn) && fits)
        return QS_MARLIN_STREAM;
    if (old_wgmma_takes(l, m, sms, sm90, kn))
        return QS_MARLIN_WGMMA;
    if (m <= old_gemv_max_m(l, kn))
        return QS_MARLIN_SMALL_M;
    return QS_MARLIN_TILED;
}
/* ---- end of the old rules ---- */

static qs_marlin_shape shape(bool fp4, bool block, int64_t n, int64_t k)
{
    const int64_t step = fp4 ? 256 : 128; /* marlin_linear.cu's padding: rows to 16, k to a whole stage */
    return (qs_marlin_shape){fp4, block, n, k, (n + 15) / 16 * 16, (k + step - 1) / step * step};
}

static qs_marlin_knobs new_knobs(const old_knobs *o)
{
    return (qs_marlin_knobs){o->stream_mode, o->stream_lo, o->stream_hi, o->wg_mode,
                             o->wg_lo,       o->wg_hi,     (int)o->gemv_cap};
}

static const int64_t kRows[] = {8, 24, 64, 136, 512, 1024, 2048, 4096, 6144, 8192, 14336, 16384, 28672, 1000, 4104};
static const int64_t kKs[] = {64, 128, 256, 384, 768, 1000, 1024, 2048, 4096, 5120, 8192, 14336};
static const int kSms[] = {1, 16, 78, 108, 114, 132, 144};

/* Every step size, order and alignment of one layer on one device: the table's answer and the
 * plan's rows against the old rules. Returns the number of (m, order, alignment) cases checked. */
static int check_layer(const qs_marlin_shape *l, int sms, bool sm90, const old_knobs *ok)
{
    const qs_marlin_device d = {sms, sm90};
    const qs_marlin_knobs kn = new_knobs(ok);
    qs_marlin_plan plan;
    qs_marlin_plan_make(l, &d, &kn, &plan);
    assert_true(plan.n_rows >= 1 && plan.n_rows <= QS_MARLIN_PLAN_ROWS);
    assert_true(plan.rows[plan.n_rows - 1].max_tokens == INT64_MAX);
    int cases = 0;
    for (int64_t m = 1; m <= 300; m++) {
        for (int ordered = 0; ordered < 2; ordered++)
            for (int fits = 0; fits < 2; fits++) {
                qs_marlin_path want = old_gemm_path(l, m, sms, sm90, ordered, fits, ok);
                qs_marlin_path got = qs_marlin_path_at(l, &d, &kn, m, ordered, fits);
                if (want != got)
                    fail_msg("%s%s %lldx%lld sms %d sm90 %d m %lld ordered %d aligned %d: table %s, old rules %s",
                             l->fp4 ? "nvfp4" : "fp8", l->block ? "-block" : "", (long long)l->n, (long long)l->k, sms,
                             sm90, (long long)m, ordered, fits, qs_marlin_path_name(got), qs_marlin_path_name(want));
                cases++;
            }
        const qs_marlin_plan_row *r = qs_marlin_plan_row_for(&plan, m);
        assert_int_equal(r->natural, old_gemm_path(l, m, sms, sm90, false, true, ok));
        assert_int_equal(r->ordered, old_gemm_path(l, m, sms, sm90, true, true, ok));
        assert_int_equal(r->unaligned, old_gemm_path(l, m, sms, sm90, false, false, ok));
        /* reserve_workspace's ladder: the stream kernel's workspace where it takes the step with x
         * in either order, and that of the kernel the step falls back to */
        assert_int_equal(r->ordered == QS_MARLIN_STREAM, old_stream_takes(l, m, sms, sm90, true, ok));
    }
    return cases;
}

static void table_matches_the_old_rules(void **state)
{
    (void)state;
    static const old_knobs shipped = {1, 1, 64, 1, 17, 128, 64};
    long cases = 0;
    for (int fp4 = 0; fp4 < 2; fp4++)
        for (int block = 0; block < 2 - fp4; block++)
            for (size_t a = 0; a < sizeof kRows / sizeof kRows[0]; a++)
                for (size_t b = 0; b < sizeof kKs / sizeof kKs[0]; b++)
                    for (size_t c = 0; c < sizeof kSms / sizeof kSms[0]; c++)
                        for (int sm90 = 0; sm90 < 2; sm90++) {
                            qs_marlin_shape l = shape(fp4, block, kRows[a], kKs[b]);
                            cases += check_layer(&l, kSms[c], sm90, &shipped);
                        }
    print_message("%ld (layer, device, tokens, order, alignment) cases agree\n", cases);
    assert_true(cases > 1000000);
}

/* The dev build's knobs (QSERVE_MARLIN_STREAM / _MIN / _MAX, QSERVE_MARLIN_WGMMA / _MIN / _MAX,
 * QSERVE_MARLIN_GEMV) move the same answers as they moved the old rules. */
static void knobs_move_it_as_before(void **state)
{
    (void)state;
    static const old_knobs variants[] = {
        {0, 1, 64, 1, 17, 128, 64},  {2, 1, 64, 1, 17, 128, 64}, {2, 5, 40, 1, 17, 128, 64},
        {1, 1, 64, 0, 17, 128, 64},  {1, 1, 64, 2, 17, 128, 64}, {1, 1, 64, 2, 9, 200, 64},
        {1, 1, 64, 1, 33, 96, 64},   {1, 1, 64, 1, 10, 256, 64}, {1, 1, 64, 1, 17, 128, 0},
        {1, 1, 64, 1, 17, 128, 16},  {0, 1, 64, 0, 17, 128, 8},  {2, 1, 64, 2, 1, 256, 32},
    };
    static const int64_t rows[] = {1024, 4096, 6144, 14336, 28672};
    static const int64_t ks[] = {1000, 4096, 14336};
    for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++)
        for (int fp4 = 0; fp4 < 2; fp4++)
            for (size_t a = 0; a < sizeof rows / sizeof rows[0]; a++)
                for (size_t b = 0; b < sizeof ks / sizeof ks[0]; b++) {
                    qs_marlin_shape l = shape(fp4, false, rows[a], ks[b]);
                    check_layer(&l, 132, true, &variants[v]);
                    check_layer(&l, 78, true, &variants[v]);
                }
}

/* Readable anchors on the H200 (132 SMs, sm_90a): Llama-3.1-8B's o_proj (4096x4096) and
 * gate_up_proj (28672x4096). */
static void h200_rows_read_as_documented(void **state)
{
    (void)state;
    const qs_marlin_device h200 = {132, true};
    const qs_marlin_knobs kn = QS_MARLIN_SHIPPED;
    qs_marlin_shape o_fp8 = shape(false, false, 4096, 4096), gu_fp4 = shape(true, false, 28672, 4096);
    qs_marlin_shape blk = shape(false, true, 4096, 4096);
    assert_int_equal(qs_marlin_path_at(&o_fp8, &h200, &kn, 8, false, true), QS_MARLIN_SMALL_M);
    assert_int_equal(qs_marlin_path_at(&o_fp8, &h200, &kn, 16, false, true), QS_MARLIN_SMALL_M); /* 8 stages/SM */
    assert_int_equal(qs_marlin_path_at(&o_fp8, &h200, &kn, 17, false, true), QS_MARLIN_STREAM);
    assert_int_equal(qs_marlin_path_at(&o_fp8, &h200, &kn, 64, false, true), QS_MARLIN_STREAM);
    assert_int_equal(qs_marlin_path_at(&o_fp8, &h200, &kn, 64, false, false), QS_MARLIN_SMALL_M);
    assert_int_equal(qs_marlin_path_at(&o_fp8, &h200, &kn, 65, false, true), QS_MARLIN_WGMMA);
    assert_int_equal(qs_marlin_path_at(&o_fp8, &h200, &kn, 129, false, true), QS_MARLIN_TILED);
    /* 54 stages per SM: NVFP4 at 9-16 tokens takes the stream kernel only with x in the packed order */
    assert_int_equal(qs_marlin_path_at(&gu_fp4, &h200, &kn, 12, false, true), QS_MARLIN_SMALL_M);
    assert_int_equal(qs_marlin_path_at(&gu_fp4, &h200, &kn, 12, true, true), QS_MARLIN_STREAM);
    /* 224 groups fill 132 SMs: wgmma from 17 tokens where the stream kernel cannot read the addresses */
    assert_int_equal(qs_marlin_path_at(&gu_fp4, &h200, &kn, 17, false, false), QS_MARLIN_WGMMA);
    assert_int_equal(qs_marlin_path_at(&blk, &h200, &kn, 1, false, true), QS_MARLIN_TILED);
    /* without the sm_90a kernels: small-M up to 64 tokens, then tiled */
    const qs_marlin_device a100 = {108, false};
    qs_marlin_plan p;
    qs_marlin_plan_make(&o_fp8, &a100, &kn, &p);
    assert_int_equal(p.n_rows, 2);
    assert_int_equal(p.rows[0].max_tokens, 64);
    assert_int_equal(p.rows[0].natural, QS_MARLIN_SMALL_M);
    assert_int_equal(p.rows[1].natural, QS_MARLIN_TILED);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(table_matches_the_old_rules),
        cmocka_unit_test(knobs_move_it_as_before),
        cmocka_unit_test(h200_rows_read_as_documented),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
