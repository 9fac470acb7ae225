// marlin_stream_check.cu — the stream kernel's work split (marlin_stream_plan.h) checked on the
// host against its invariants, and its activation rewrite (marlin_stream_rewrite.h, the kernel's
// own code run on the host) against the packer's k permutation (marlin_stream_check.h).
#include <stdio.h>
#include <string.h>
#include <vector>

#include "marlin_stream_check.h"
#include "core/act_order.h"
#include "marlin_stream_plan.h"
#include "marlin_stream_rewrite.h"

namespace {

using namespace qs_marlin;

// One layer of `groups` x `stages` items on `ctas` CTAs, shared as the kernel shares them; 0 or -1
// with why.
int check_split(int64_t groups, int64_t stages, int64_t ctas, char *why, size_t why_len)
{
    const int64_t items = groups * stages, slots = max_shares(stages, items, ctas);
    auto fail = [&](const char *what, int64_t c) {
        snprintf(why, why_len, "%lld groups x %lld stages on %lld CTAs: %s (CTA or group %lld)", (long long)groups,
                 (long long)stages, (long long)ctas, what, (long long)c);
        return -1;
    };
    auto begin = [&](int64_t c) { return share_begin(c, items, ctas); };
    if (begin(0) != 0 || begin(ctas) != items)
        return fail("the shares do not cover the items", 0);
    for (int64_t c = 0; c < ctas; c++) {
        const int64_t lo = begin(c), hi = begin(c + 1);
        if (hi <= lo)
            return fail("an empty share", c);
        // owner_of and share_begin are both monotonic: the ends of each share decide it
        if (owner_of(lo, items, ctas) != c || owner_of(hi - 1, items, ctas) != c)
            return fail("owner_of misnames a share's end", c);
    }
    for (int64_t g = 0; g < groups; g++) {
        const int first = owner_of(g * stages, items, ctas), last = owner_of(g * stages + stages - 1, items, ctas);
        if (last - first + 1 > slots)
            return fail("a group split between more CTAs than max_shares", g);
        // the summing CTA (first) holds the group's first stage: its share cannot start inside
        // the group; every later owner's share does (so it publishes once, at its start)
        if (begin(first) > g * stages)
            return fail("the group's first stage is not in its first owner's share", g);
        for (int64_t c = first + 1; c <= last; c++) {
            const int64_t lo = begin(c);
            if (lo % stages == 0 || lo / stages != g)
                return fail("a later owner's share does not start inside the group", c);
        }
    }
    return 0;
}

// One stage of NT tokens: every activation a distinct 16-bit code (token, k), placed where the
// tensor copy puts it, rewritten item by item as the kernel does; then slice s, logical position
// j of the image must hold the activation of the k that A's position j multiplies: the unit's k
// fp8_logical_source_k / fp4_logical_source_k of the slot (marlin_layout.h).
template <bool FP4, int NT> int check_rewrite(char *why, size_t why_len)
{
    constexpr int kStage = 128, kUnit = FP4 ? 64 : 32, kSlices = kStage / 16;
    std::vector<uint4> staged_words(NT * kStage * 2 / 16), image_words(NT * kStage * 2 / 16);
    uint8_t *staged = (uint8_t *)staged_words.data(), *image = (uint8_t *)image_words.data();
    auto code = [](int n, int k) { return (uint16_t)(n * kStage + k); };
    for (int n = 0; n < NT; n++)
        for (int k = 0; k < kStage; k++) {
            const uint16_t v = code(n, k);
            memcpy(staged + staged_offset(NT, n, k), &v, 2);
        }
    memset(image, 0xFF, NT * kStage * 2); // poisoned: a position no item writes reads as 0xFFFF
    for (int q = 0; q < 4; q++)
        for (int n = 0; n < NT; n++)
            rewrite_item<FP4, NT>(staged, image, n, q);
    for (int s = 0; s < kSlices; s++)
        for (int n = 0; n < NT; n++)
            for (int j = 0; j < 16; j++) {
                const int pos = (s * 16) % kUnit + j, unit = s * 16 / kUnit;
                const int k = unit * kUnit + (FP4 ? fp4_logical_source_k(pos) : fp8_logical_source_k(pos));
                uint16_t got;
                memcpy(&got, image + image_offset(NT, n, s, j), 2);
                if (got != code(n, k)) {
                    snprintf(why, why_len,
                             "%s rewrite, %d tokens: slice %d, token %d, position %d holds (token %d, k %d), "
                             "wants (token %d, k %d)",
                             FP4 ? "NVFP4" : "FP8", NT, s, n, j, got / kStage, got % kStage, n, k);
                    return -1;
                }
            }
    return 0;
}

// check_rewrite for every token tile the kernel is built for.
template <bool FP4, int... NT> int check_rewrites(char *why, size_t why_len)
{
    return (check_rewrite<FP4, NT>(why, why_len) || ...);
}

// The rewrite-free path's copy of x (permute_activations' item math, marlin_permute.cu): for every 32-k item of a
// 512-k row, copy position j must hold x's k of the unit's logical source of j, as the rewritten
// image does (check_rewrite) — the consumers read either with the same slots.
template <bool FP4> int check_permute(char *why, size_t why_len)
{
    constexpr int kRow = 512, kUnit = FP4 ? 64 : 32;
    std::vector<uint4> x_words(kRow * 2 / 16), xp_words(kRow * 2 / 16);
    for (int k = 0; k < kRow; k++) {
        const uint16_t v = (uint16_t)k; // (memcpy: the words are read as uint4)
        memcpy((uint8_t *)x_words.data() + 2 * k, &v, 2);
    }
    memset(xp_words.data(), 0xFF, kRow * 2);
    for (int b = 0; b < kRow / 32; b++) {
        uint4 ch[4], core[4];
        for (int c = 0; c < 4; c++)
            ch[c] = x_words[item_source_k<FP4>(b, c) / 8];
        transpose_pairs(ch, core);
        for (int o = 0; o < 4; o++)
            xp_words[(32 * b) / 8 + o] = core[o];
    }
    for (int j = 0; j < kRow; j++) {
        const int unit = j / kUnit, pos = j % kUnit;
        const int k = unit * kUnit + (FP4 ? fp4_logical_source_k(pos) : fp8_logical_source_k(pos));
        uint16_t got;
        memcpy(&got, (const uint8_t *)xp_words.data() + 2 * j, 2);
        if (got != k) {
            snprintf(why, why_len, "%s permuted copy: position %d holds k %d, wants %d", FP4 ? "NVFP4" : "FP8", j, got,
                     k);
            return -1;
        }
    }
    // The map the ops that produce x write it by (core/act_order.h) lands every k where the copy has it.
    const qs_act_order order = FP4 ? QS_ACT_MARLIN_FP4 : QS_ACT_MARLIN_FP8;
    for (int k = 0; k < kRow; k++) {
        const int64_t j = qs_act_position(order, k);
        uint16_t got = 0xFFFF;
        if (j >= 0 && j < kRow)
            memcpy(&got, (const uint8_t *)xp_words.data() + 2 * j, 2);
        if (got != k) {
            snprintf(why, why_len, "%s activation order: k %d goes to position %lld, which the copy gives k %d",
                     FP4 ? "NVFP4" : "FP8", k, (long long)j, got);
            return -1;
        }
    }
    return 0;
}

extern "C" int qs_marlin_stream_rewrite_check(char *why, size_t why_len)
{
    if (check_permute<false>(why, why_len) || check_permute<true>(why, why_len))
        return -1;
    if (check_rewrites<false, 16, 24, 32, 40, 48, 56, 64>(why, why_len) ||
        check_rewrites<true, 16, 24, 32, 40, 48, 56, 64>(why, why_len))
        return -1;
    return 0;
}

// even_share_ctas for `items` on `sms` SMs: at least one CTA and at most one per SM and per item;
// fewer than both only for an even split at 95% of the SMs or more; and no even count in that
// range that the rule should have preferred (a larger one, or any one where the SM count itself
// does not divide the items).
int check_ctas(int64_t items, int64_t sms, char *why, size_t why_len)
{
    const int64_t c = even_share_ctas(items, sms), most = sms < items ? sms : items;
    const char *bad = nullptr;
    if (c < 1 || c > most)
        bad = "outside 1 .. min(SMs, items)";
    else if (c < most && items % c != 0)
        bad = "fewer CTAs than the SMs, and the shares are not even";
    else if (c < most && c * 20 < sms * 19)
        bad = "fewer than 95% of the SMs";
    for (int64_t d = sms; !bad && d * 20 >= sms * 19; d--)
        if (d != c && d <= items && items % d == 0 && (d > c || items % c != 0))
            bad = "an even count was passed over";
    if (bad)
        snprintf(why, why_len, "%lld items on %lld SMs: %lld CTAs, %s", (long long)items, (long long)sms,
                 (long long)c, bad);
    return bad ? -1 : 0;
}

} // namespace

extern "C" int qs_marlin_stream_ctas_check(int max_items, char *why, size_t why_len)
{
    static const int64_t sms[] = {1, 8, 20, 78, 108, 114, 132, 144, 170};
    for (int64_t s : sms)
        for (int64_t items = 1; items <= max_items; items++)
            if (check_ctas(items, s, why, why_len))
                return -1;
    // the H200's 132 SMs: 128 CTAs on every Llama-3.1-8B layer (32 / 48 / 224 / 32 groups of 32 /
    // 32 / 32 / 112 stages)
    static const int64_t llama_items[] = {32 * 32, 48 * 32, 224 * 32, 32 * 112};
    for (int64_t items : llama_items)
        if (even_share_ctas(items, 132) != 128) {
            snprintf(why, why_len, "%lld items on 132 SMs: %lld CTAs, not 128", (long long)items,
                     (long long)even_share_ctas(items, 132));
            return -1;
        }
    return 0;
}

extern "C" int qs_marlin_stream_plan_check(int max_groups, int max_stages, int max_ctas, char *why, size_t why_len)
{
    // every small layer, then the Llama-3.1-8B layers' group counts at every stage count
    static const int large_groups[] = {96, 224, 448};
    for (int groups = 1; groups <= max_groups + 3; groups++) {
        const int g = groups <= max_groups ? groups : large_groups[groups - max_groups - 1];
        for (int stages = 1; stages <= max_stages; stages++)
            for (int ctas = 1; ctas <= max_ctas && ctas <= (int64_t)g * stages; ctas++)
                if (check_split(g, stages, ctas, why, why_len))
                    return -1;
    }
    return 0;
}
