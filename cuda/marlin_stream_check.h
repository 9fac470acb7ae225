/* marlin_stream_check.h — the stream kernel's work split (marlin_stream_plan.h) checked on the CPU
 * (marlin_stream_check.cu): for every layer of 1..max_groups groups of 1..max_stages stages and
 * every CTA count up to max_ctas, the shares cover the items once with none empty, owner_of names
 * the CTA holding each share's ends, no group is split between more CTAs than max_shares (the
 * partial-sum slots), and a share starts inside a group exactly when its CTA is one of the group's
 * publishing owners (the kernel's publish rule). 0, or -1 with `why` naming the first violation.
 * Needs no GPU; linked when nvcc is found. */
#ifndef QS_CUDA_MARLIN_STREAM_CHECK_H
#define QS_CUDA_MARLIN_STREAM_CHECK_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The stream kernel's work split (marlin_stream_plan.h) for 1..max_groups groups (and the
 * Llama-3.1-8B group counts) of 1..max_stages stages on 1..max_ctas CTAs: shares cover every item
 * once, owner_of names them, max_shares slots suffice, the later owners of a group are exactly the
 * shares that start inside it. 0, or -1 with why. */
int qs_marlin_stream_plan_check(int max_groups, int max_stages, int max_ctas, char *why, size_t why_len);
/* The stream kernel's CTA count (even_share_ctas) for 1..max_items items on several SM counts:
 * between 1 and min(SMs, items), fewer than both only where the shares come out even at 95% of the
 * SMs or more; and 128 on the H200 (132 SMs) for every Llama-3.1-8B layer. 0, or -1 with why. */
int qs_marlin_stream_ctas_check(int max_items, char *why, size_t why_len);
/* The activation rewrite (marlin_stream_rewrite.h) run on the host for FP8 and NVFP4 stages of 16,
 * 24, 32, 40, 48, 56 and 64 tokens: every position of the wgmma image holds the activation that the
 * packed weight in that position of the A fragment multiplies (marlin_layout.h's permutation undone) and no
 * position is left unwritten; and the rewrite-free path's permuted copy of x (item_source_k and
 * transpose_pairs, as marlin_permute.cu runs them) puts at every position the k that position
 * of the packed weights multiplies, and core/act_order.h's qs_act_position sends every k of x to where
 * that copy holds it. 0, or -1 with `why` naming the first wrong position. */
int qs_marlin_stream_rewrite_check(char *why, size_t why_len);

#ifdef __cplusplus
}
#endif

#endif
