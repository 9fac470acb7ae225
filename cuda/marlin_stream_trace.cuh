// marlin_stream_trace.cuh — the stream kernel's measurement trace (marlin_stream.cu), compiled in
// only with -DQS_MARLIN_STREAM_TRACE: the device-side records (trace, trace_phase: nothing in other
// builds) and, in trace builds, the host's printing of them. How to build and read it:
// docs/marlin.md ("The stream kernel's timeline"), scripts/stream_trace_summary.py.
#ifndef QS_CUDA_MARLIN_STREAM_TRACE_CUH
#define QS_CUDA_MARLIN_STREAM_TRACE_CUH

#include <stdint.h>
#ifdef QS_MARLIN_STREAM_TRACE
#include <stdio.h>

#include <algorithm>
#include <utility>
#include <vector>
#endif

#include "marlin_device.cuh" // Params

namespace qs_marlin {
namespace {

// Trace builds (-DQS_MARLIN_STREAM_TRACE, for measurements): CTA 0 records the SM clock at each
// event of its first kTraceItems items — what each role waited for and when — and the host prints
// the timeline (print_timeline). Other builds compile trace() to nothing.
#ifdef QS_MARLIN_STREAM_TRACE
constexpr int kTraceItems = 64;
#endif
enum TraceEvent {
    kWeightCopy,   // the weight producer issued the item's copy (its slot was free)
    kActCopy,      // the activation producer issued the item's copy
    kStaged,       // rewriter warp 0 saw the staged activations
    kRewritten,    // rewriter warp 0 finished the rewrite (arrived on the act ring's full barrier)
    kWeightsIn,    // consumer warp 0 saw the item's weights
    kExpanded,     // consumer warp 0 expanded them
    kActIn,        // consumer warp 0 saw the item's rewritten activations
    kIssued,       // consumer warp 0 committed the item's wgmma group
    kPrevDone,     // consumer warp 0's wait for the previous group returned
    kActIn1,       // consumer warp 4 (the second warpgroup) saw the item's activations
    kTraceEvents
};
__device__ __forceinline__ void trace(const Params &p, int event, int64_t item)
{
#ifdef QS_MARLIN_STREAM_TRACE
    if (blockIdx.x == 0 && item < kTraceItems && (threadIdx.x & 31) == 0)
        p.trace[event * kTraceItems + item] = clock64();
#else
    (void)p, (void)event, (void)item;
#endif
}

// Trace builds also record, for every CTA, when its consumer thread 0 passed each phase of the
// call (the global timer in ns and the SM clock): where the time outside the steady stream goes.
enum TracePhase {
    kEnter,        // the CTA started
    kGridWaited,   // the previous kernel's writes are visible
    kFirstWeights, // the first stage's weights arrived
    kFirstActs,    // the first stage's activations were rewritten
    kLastSegment,  // the last segment of the share started
    kStreamEnd,    // the last wgmma group completed
    kSummed,       // the last segment's split partials were waited for (CTAs that sum a split group only)
    kExit,         // the last stores were issued
    kSm,           // (not a time: 1 + the SM the CTA ran on)
    kTracePhases
};
__device__ __forceinline__ void trace_phase(const Params &p, int phase)
{
#ifdef QS_MARLIN_STREAM_TRACE
    if (threadIdx.x == 0) {
        long long ns;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
        p.phases[(blockIdx.x * kTracePhases + phase) * 2] = ns;
        p.phases[(blockIdx.x * kTracePhases + phase) * 2 + 1] = clock64();
        if (phase == kEnter) {
            unsigned sm;
            asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
            p.phases[(blockIdx.x * kTracePhases + kSm) * 2] = sm + 1;
        }
    }
#else
    (void)p, (void)phase;
#endif
}

#ifdef QS_MARLIN_STREAM_TRACE
// CTA 0's timeline of a traced call (dev: its kTraceEvents x kTraceItems SM clocks, the stream
// synchronized), per item each event's clock minus the first event's.
int print_timeline(const long long *dev, bool fp4, int64_t n, int64_t k, int m, qs_err *err)
{
    long long host[kTraceEvents * kTraceItems];
    QS_CUDA_TRY(cudaMemcpy(host, dev, sizeof host, cudaMemcpyDeviceToHost), err);
    long long t0 = 0;
    for (long long t : host)
        if (t && (!t0 || t < t0))
            t0 = t;
    fprintf(stderr, "stream trace: %s %d x %d, %d tokens, CTA 0 (SM clocks from its first event)\n",
            fp4 ? "NVFP4" : "FP8", (int)n, (int)k, m);
    fprintf(stderr, "item  wcopy  xcopy staged rewrit   w_in  expand  x_in0 issued prevdn  x_in1\n");
    for (int i = 0; i < kTraceItems; i++) {
        if (!host[kWeightsIn * kTraceItems + i])
            break;
        fprintf(stderr, "%4d", i);
        for (int e = 0; e < kTraceEvents; e++) {
            const long long t = host[e * kTraceItems + i];
            fprintf(stderr, " %6lld", t ? t - t0 : -1);
        }
        fprintf(stderr, "\n");
    }
    return 0;
}

// Trace builds: every CTA's phase times of the traced call, as min / median / max over the CTAs of
// the time since the first CTA started (a phase a CTA never passed counts as its previous one, but
// "summed" counts only the CTAs that summed a split group),
// and CTA 0's SM clock rate over the call.
int print_phases(const long long *dev, unsigned ctas, qs_err *err)
{
    std::vector<long long> h((size_t)2 * kTracePhases * ctas);
    QS_CUDA_TRY(cudaMemcpy(h.data(), dev, h.size() * sizeof(long long), cudaMemcpyDeviceToHost), err);
    long long t0 = h[0];
    for (unsigned c = 0; c < ctas; c++)
        t0 = std::min(t0, h[(size_t)c * kTracePhases * 2]);
    static const char *const names[kSm] = {"enter",       "grid waited", "first weights", "first acts",
                                           "last segment", "stream end",  "summed",        "exit"};
    fprintf(stderr, "stream phases (%u CTAs, ns since the first CTA started: min / median / max)\n", ctas);
    std::vector<long long> col;
    for (int e = 0; e < kSm; e++) {
        // "summed" over the CTAs that summed a split group only: for the others it would repeat
        // their stream end and blur the row
        col.clear();
        for (unsigned c = 0; c < ctas; c++) {
            if (e == kSummed && !h[((size_t)c * kTracePhases + e) * 2])
                continue;
            int f = e;
            while (f > 0 && !h[((size_t)c * kTracePhases + f) * 2])
                f--;
            col.push_back(h[((size_t)c * kTracePhases + f) * 2] - t0);
        }
        if (col.empty()) {
            fprintf(stderr, "  %-14s (no CTA)\n", names[e]);
            continue;
        }
        std::sort(col.begin(), col.end());
        fprintf(stderr, "  %-14s %7lld %7lld %7lld", names[e], col[0], col[col.size() / 2], col.back());
        if (col.size() != ctas)
            fprintf(stderr, "  (%zu CTAs)", col.size());
        fprintf(stderr, "\n");
    }
    const long long dns = h[kExit * 2] - h[kEnter * 2], dclk = h[kExit * 2 + 1] - h[kEnter * 2 + 1];
    if (dns > 0)
        fprintf(stderr, "  CTA 0: %lld ns, %lld clk: %.0f MHz\n", dns, dclk, 1e3 * (double)dclk / (double)dns);
    // Each CTA's stream (first activations to stream end, ns), slowest first, with its SM: whether
    // the spread at the end follows particular SMs.
    std::vector<std::pair<long long, unsigned>> streams;
    for (unsigned c = 0; c < ctas; c++) {
        const long long *ph = &h[(size_t)c * kTracePhases * 2];
        if (ph[kFirstActs * 2] && ph[kStreamEnd * 2])
            streams.push_back({ph[kStreamEnd * 2] - ph[kFirstActs * 2], c});
    }
    std::sort(streams.rbegin(), streams.rend());
    fprintf(stderr, "  streams (ns, slowest first; cta/sm):");
    for (size_t i = 0; i < streams.size(); i++)
        fprintf(stderr, "%s %lld %u/%lld", i % 8 ? "" : "\n   ", streams[i].first, streams[i].second,
                h[((size_t)streams[i].second * kTracePhases + kSm) * 2] - 1);
    fprintf(stderr, "\n");
    return 0;
}
#endif

} // namespace
} // namespace qs_marlin

#endif
