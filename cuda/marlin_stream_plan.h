// marlin_stream_plan.h — how the stream kernel (marlin_stream.cu) splits a layer's work between
// its CTAs, in one place for the kernel (device), its launch plan (host) and the CPU check
// (marlin_stream_check.cu): the layer's items are (128-row group, 128-k stage) pairs in
// group-major order; CTA c of C takes the contiguous share [c T / C, (c+1) T / C) of the T items.
#ifndef QS_CUDA_MARLIN_STREAM_PLAN_H
#define QS_CUDA_MARLIN_STREAM_PLAN_H

#include <stdint.h>

#include "marlin_layout.h" // QS_HD

namespace qs_marlin {

// The first item of CTA c's share (c = ctas: the end of the last share).
QS_HD int64_t share_begin(int64_t c, int64_t items, int64_t ctas) { return c * items / ctas; }

// How far CTA c's share start moves when a layer's groups are each split evenly between P CTAs
// (ctas a multiple of the groups, stages a multiple of P) and the CTA that sums a group takes
// lead * (P - 1) stages more than its P - 1 partners, which take `lead` fewer each: their
// partials are then published before the summing CTA ends its share. Group boundaries stay share
// boundaries, so owner_of still names every group's first and last owner. 0 otherwise (lead 0,
// or no such split). Lead builds only (marlin_stream.cu, QS_MARLIN_STREAM_LEAD: measured slower;
// -1: one kernel calls it with a zero lead its compiler cannot fold, why: there).
QS_HD int64_t lead_shift(int64_t c, int64_t items, int64_t ctas, int64_t stages, int64_t lead)
{
    const int64_t groups = items / stages;
    if (lead <= 0 || groups == 0 || ctas % groups != 0)
        return 0;
    const int64_t owners = ctas / groups;
    if (owners < 2 || stages % owners != 0 || stages / owners <= lead)
        return 0;
    const int64_t j = c % owners;
    return j == 0 ? 0 : (owners - j) * lead;
}

// The CTA whose share holds item w.
QS_HD int owner_of(int64_t w, int64_t items, int64_t ctas) { return (int)(((w + 1) * ctas - 1) / items); }

// The group whose output the CTA with share [lo, hi) readies in red-sum builds (marlin_stream.cu,
// QS_MARLIN_STREAM_RED_SUM): the group its share ends inside, where the share also holds that
// group's first stage — it is then that split group's first owner — or -1.
QS_HD int64_t readied_group(int64_t lo, int64_t hi, int64_t stages)
{
    const int64_t head = (hi - 1) / stages;
    return hi % stages != 0 && head * stages >= lo ? head : -1;
}

// The most CTAs one group of `stages` items can be split between when `items` are shared by
// `ctas` CTAs (ctas <= items): the partial-sum slots a group needs.
QS_HD int64_t max_shares(int64_t stages, int64_t items, int64_t ctas)
{
    const int64_t least = items / ctas; // stages of the shortest share
    const int64_t most = (stages + least - 1) / least + 1;
    return most < ctas ? most : ctas;
}

// CTAs for `items` items on `sms` SMs: where a count down to 95% of the SMs divides the items
// evenly, the largest such count, else one per SM (at most one per item). Even shares measured
// faster on every Llama-3.1-8B layer (marlin_stream.cu, stream_ctas).
QS_HD int64_t even_share_ctas(int64_t items, int64_t sms)
{
    for (int64_t c = sms; c * 20 >= sms * 19; c--)
        if (c <= items && items % c == 0)
            return c;
    return sms < items ? sms : items;
}

} // namespace qs_marlin

#endif
