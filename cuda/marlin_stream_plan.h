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

// The CTA whose share holds item w.
QS_HD int owner_of(int64_t w, int64_t items, int64_t ctas) { return (int)(((w + 1) * ctas - 1) / items); }

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
