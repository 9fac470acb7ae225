/* marlin_plan.h — which of marlin's four kernels runs a step of m tokens on one layer: the rule
 * table (kMarlinRules, measured on the H200, docs/decisions.md) and the layer's plan made from it
 * once at prepare, rows by token count, that gemm(), input_order() and reserve_workspace() read
 * (marlin_gemm.cu) and that the layer's step plan shows (src/registry/step_plan.h). Plain C with no
 * CUDA type, so that the CPU unit test (tests/unit/test_marlin_plan.c) checks the table over a grid
 * of shapes and token counts without a GPU.
 *   small-M  marlin_small_m.cu: mma.sync over token blocks of 32, k split across CTAs
 *   stream   marlin_stream.cu (sm_90a): one persistent CTA per SM, stream-K over the layer's work
 *   wgmma    marlin_wgmma.cu (sm_90a): warpgroup MMA, 128-row groups
 *   tiled    marlin_gemm.cu: the pipelined tile kernel, every other step (and 128x128-block FP8) */
#ifndef QS_CUDA_MARLIN_PLAN_H
#define QS_CUDA_MARLIN_PLAN_H

#include <stdbool.h>
#include <stdint.h>

typedef enum { QS_MARLIN_TILED, QS_MARLIN_SMALL_M, QS_MARLIN_STREAM, QS_MARLIN_WGMMA } qs_marlin_path;

/* What the rules read of a layer: its packing (NVFP4 or FP8, 128x128 block scales) and shapes. */
typedef struct qs_marlin_shape {
    bool fp4, block;
    int64_t n, k, n_pad, k_pad;
} qs_marlin_shape;

/* What they read of the device: multiprocessors, and whether the sm_90a kernels (stream, wgmma)
 * run (compute capability 9.0 and a build with sm_90a code). */
typedef struct qs_marlin_device {
    int sms;
    bool sm90;
} qs_marlin_device;

/* Measurement knobs (lab_knob.h: read only in a dev build; the product runs QS_MARLIN_SHIPPED):
 * stream / wgmma 0 turn the kernel off, 2 make it take every step from *_min to *_max tokens
 * whatever the layer; wgmma_min / wgmma_max also bound its table rows; small_m_max caps the
 * small-M kernel's tokens. */
typedef struct qs_marlin_knobs {
    int stream, stream_min, stream_max;
    int wgmma, wgmma_min, wgmma_max;
    int small_m_max;
} qs_marlin_knobs;

#define QS_MARLIN_STREAM_MAX_TOKENS 64   /* the stream kernel's largest token tile */
#define QS_MARLIN_WGMMA_MAX_TOKENS 128   /* the wgmma kernel's rows (its knob may raise it to 256) */
#define QS_MARLIN_SMALL_M_MAX_TOKENS 64  /* the small-M kernel's two token blocks */
#define QS_MARLIN_STAGE_K 128            /* k per stage of the sm_90a kernels */
#define QS_MARLIN_SHIPPED \
    ((qs_marlin_knobs){1, 1, QS_MARLIN_STREAM_MAX_TOKENS, 1, 17, QS_MARLIN_WGMMA_MAX_TOKENS, QS_MARLIN_SMALL_M_MAX_TOKENS})

/* When a rule applies, besides its token range. */
typedef enum {
    QS_MARLIN_WHEN_ALWAYS,
    QS_MARLIN_WHEN_FP8_20_STAGES,     /* FP8 with 20+ stages of work per SM */
    QS_MARLIN_WHEN_FP4_40_ORDERED,    /* NVFP4 with 40+ stages per SM, x already in the packed order */
    QS_MARLIN_WHEN_NOT_SMALL_FP4,     /* anything but NVFP4 with fewer than 10 stages per SM */
    QS_MARLIN_WHEN_GROUPS_FILL_SMS,   /* at least one 128-row group per SM */
    QS_MARLIN_WHEN_LLAMA_SIZED        /* 4096+ rows and 4096+ k (the measured Llama-3.1-8B shapes) */
} qs_marlin_when;

typedef struct qs_marlin_rule {
    qs_marlin_path path;
    int min_tokens, max_tokens;
    qs_marlin_when when;
} qs_marlin_rule;

/* THE table: the first rule whose kernel can run the layer (qs_marlin_runs), whose token range
 * holds m and whose condition holds picks the kernel. Stages of work per SM (128 rows x 128 k
 * each) on the H200: Llama-3.1-8B 4096x4096 8, 6144x4096 12, 4096x14336 27, 28672x4096 54.
 *  - stream from 17 tokens beats the small-M kernel on every Llama-3.1-8B layer but NVFP4's
 *    smallest up to 32 tokens (4096x4096 NVFP4 at 17 / 32: 7.7 / 8.2 against 7.0 / 7.4 us); at
 *    9-16 only on FP8 layers of 20+ stages per SM (28672x4096 33.7 against 38.1 us), and on NVFP4
 *    ones of 40+ when the op before writes x in the packed order (28672x4096 at 9 / 12 / 16 tokens
 *    24.4 / 24.7 / 25.3 -> 23.7 / 23.8 / 23.9 us); up to 8 tokens nowhere (its fixed cost, ~4 us a
 *    call, is the small-M kernel's whole time).
 *  - wgmma from 17 tokens on layers whose 128-row groups fill the SMs without k slices
 *    (28672x4096 at 32 tokens: 50 against 64 us), and at 65-128 on Llama-3.1-8B-sized layers,
 *    where it beats the tiled kernel on every shape; smaller ones (MoE experts) keep the latter.
 *  - small-M up to 64 tokens (two token blocks); 128x128-block FP8 stays on the tiled kernel. */
static const qs_marlin_rule kMarlinRules[] = {
    {QS_MARLIN_STREAM, 9, 16, QS_MARLIN_WHEN_FP8_20_STAGES},
    {QS_MARLIN_STREAM, 9, 16, QS_MARLIN_WHEN_FP4_40_ORDERED},
    {QS_MARLIN_STREAM, 17, 32, QS_MARLIN_WHEN_NOT_SMALL_FP4},
    {QS_MARLIN_STREAM, 33, QS_MARLIN_STREAM_MAX_TOKENS, QS_MARLIN_WHEN_ALWAYS},
    /* (the wgmma kernel's own range, 17-128 tokens, bounds these two rows: qs_marlin_runs) */
    {QS_MARLIN_WGMMA, 1, INT32_MAX, QS_MARLIN_WHEN_GROUPS_FILL_SMS},
    {QS_MARLIN_WGMMA, 65, INT32_MAX, QS_MARLIN_WHEN_LLAMA_SIZED},
    {QS_MARLIN_SMALL_M, 1, QS_MARLIN_SMALL_M_MAX_TOKENS, QS_MARLIN_WHEN_ALWAYS},
    {QS_MARLIN_TILED, 1, INT32_MAX, QS_MARLIN_WHEN_ALWAYS},
};

/* Stages of work per SM: 128-row groups x 128-k stages over the multiprocessors. */
static inline int64_t qs_marlin_stages_per_sm(const qs_marlin_shape *l, int sms)
{
    return (l->n_pad / 16 + 7) / 8 * (l->k_pad / QS_MARLIN_STAGE_K) / sms;
}

/* Whether `path` can run a step of m tokens of the layer at all (its limits, not the table's
 * measurements). The stream kernel's activation tensor map needs rows of a multiple of 16 bytes,
 * its 16-byte output stores rows of a multiple of 8; both sm_90a kernels read whole 128-k stages. */
static inline bool qs_marlin_runs(qs_marlin_path path, const qs_marlin_shape *l, const qs_marlin_device *d,
                                  const qs_marlin_knobs *kn, int64_t m)
{
    switch (path) {
    case QS_MARLIN_STREAM:
        return kn->stream && d->sm90 && !l->block && m <= QS_MARLIN_STREAM_MAX_TOKENS &&
               l->k_pad % QS_MARLIN_STAGE_K == 0 && l->k % 8 == 0 && l->n % 8 == 0;
    case QS_MARLIN_WGMMA:
        return kn->wgmma && d->sm90 && !l->block && m >= kn->wgmma_min && m <= kn->wgmma_max &&
               l->k_pad % QS_MARLIN_STAGE_K == 0;
    case QS_MARLIN_SMALL_M:
        return !l->block && m <= kn->small_m_max;
    case QS_MARLIN_TILED:
        return true;
    }
    return false;
}

static inline bool qs_marlin_when_holds(qs_marlin_when w, const qs_marlin_shape *l, const qs_marlin_device *d,
                                        bool ordered)
{
    switch (w) {
    case QS_MARLIN_WHEN_ALWAYS:
        return true;
    case QS_MARLIN_WHEN_FP8_20_STAGES:
        return !l->fp4 && qs_marlin_stages_per_sm(l, d->sms) >= 20;
    case QS_MARLIN_WHEN_FP4_40_ORDERED:
        return ordered && l->fp4 && qs_marlin_stages_per_sm(l, d->sms) >= 40;
    case QS_MARLIN_WHEN_NOT_SMALL_FP4:
        return !(l->fp4 && qs_marlin_stages_per_sm(l, d->sms) < 10);
    case QS_MARLIN_WHEN_GROUPS_FILL_SMS:
        return l->n_pad / (16 * 8) >= d->sms;
    case QS_MARLIN_WHEN_LLAMA_SIZED:
        return l->n_pad >= 4096 && l->k_pad >= 4096;
    }
    return false;
}

/* The kernel for a step of m tokens: x in the packed order (ordered) or natural, and whether the
 * activations' and output's addresses suit the stream kernel (aligned: both 16-byte aligned). A
 * knob at 2 makes its kernel take every step of its range before any rule is read. */
static inline qs_marlin_path qs_marlin_path_at(const qs_marlin_shape *l, const qs_marlin_device *d,
                                               const qs_marlin_knobs *kn, int64_t m, bool ordered, bool aligned)
{
    if (aligned && kn->stream == 2 && qs_marlin_runs(QS_MARLIN_STREAM, l, d, kn, m) && m >= kn->stream_min &&
        m <= kn->stream_max)
        return QS_MARLIN_STREAM;
    for (size_t i = 0; i < sizeof kMarlinRules / sizeof kMarlinRules[0]; i++) {
        const qs_marlin_rule *r = &kMarlinRules[i];
        if ((r->path == QS_MARLIN_STREAM && (!aligned || kn->stream == 2)) || !qs_marlin_runs(r->path, l, d, kn, m))
            continue;
        if (r->path == QS_MARLIN_WGMMA && kn->wgmma == 2)
            return QS_MARLIN_WGMMA; /* forced: its whole range (qs_marlin_runs bounds it) */
        if (m >= r->min_tokens && m <= r->max_tokens && qs_marlin_when_holds(r->when, l, d, ordered))
            return r->path;
    }
    return QS_MARLIN_TILED;
}

/* One layer's plan: row i serves steps of (rows[i-1].max_tokens, rows[i].max_tokens] tokens; the
 * last row every larger step. natural: x in natural order; ordered: x in the packed order;
 * unaligned: addresses the stream kernel cannot read (and what reserve_workspace also sizes for). */
typedef struct qs_marlin_plan_row {
    int64_t max_tokens;
    qs_marlin_path natural, ordered, unaligned;
} qs_marlin_plan_row;

#define QS_MARLIN_PLAN_ROWS 24
/* Beyond this many tokens every rule's range has ended (the wgmma knob's ceiling). */
#define QS_MARLIN_PLAN_LAST_RULE_TOKENS 256

typedef struct qs_marlin_plan {
    int n_rows;
    qs_marlin_plan_row rows[QS_MARLIN_PLAN_ROWS];
} qs_marlin_plan;

/* Walks the table for every step size up to the last rule's end and keeps one row per run of
 * equal answers. */
static inline void qs_marlin_plan_make(const qs_marlin_shape *l, const qs_marlin_device *d, const qs_marlin_knobs *kn,
                                       qs_marlin_plan *p)
{
    p->n_rows = 0;
    for (int64_t m = 1; m <= QS_MARLIN_PLAN_LAST_RULE_TOKENS + 1; m++) {
        qs_marlin_plan_row r = {m, qs_marlin_path_at(l, d, kn, m, false, true), qs_marlin_path_at(l, d, kn, m, true, true),
                                qs_marlin_path_at(l, d, kn, m, false, false)};
        qs_marlin_plan_row *last = p->n_rows ? &p->rows[p->n_rows - 1] : NULL;
        if (last && last->natural == r.natural && last->ordered == r.ordered && last->unaligned == r.unaligned)
            last->max_tokens = m;
        else if (p->n_rows < QS_MARLIN_PLAN_ROWS)
            p->rows[p->n_rows++] = r;
    }
    p->rows[p->n_rows - 1].max_tokens = INT64_MAX;
}

/* The row that serves a step of m tokens. */
static inline const qs_marlin_plan_row *qs_marlin_plan_row_for(const qs_marlin_plan *p, int64_t m)
{
    int i = 0;
    while (i < p->n_rows - 1 && m > p->rows[i].max_tokens)
        i++;
    return &p->rows[i];
}

static inline const char *qs_marlin_path_name(qs_marlin_path path)
{
    switch (path) {
    case QS_MARLIN_TILED:
        return "tiled";
    case QS_MARLIN_SMALL_M:
        return "small-M";
    case QS_MARLIN_STREAM:
        return "stream";
    case QS_MARLIN_WGMMA:
        return "wgmma";
    }
    return "?";
}

#endif
