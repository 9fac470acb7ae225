/* tp_layout.h — the tensor-parallel layout: which heads, KV heads, MLP columns, experts and
 * vocabulary rows each rank holds (docs/parallel.md). Plain arithmetic on the config, below the
 * model that is cut by it (model_tp.h). */
#ifndef QS_MODEL_TP_LAYOUT_H
#define QS_MODEL_TP_LAYOUT_H

#include <stdbool.h>
#include <stdint.h>

#include "model/model_config.h"
#include "util/error.h"

typedef struct qs_tp_layout {
    int rank, size;
    int heads, q_head_first;       /* attention heads of this rank, first global head */
    int kv_heads, kv_head_first;   /* KV heads (one replicated head each when size > num_key_value_heads) */
    int64_t inter, inter_first;    /* dense MLP intermediate columns */
    int64_t moe_inter, moe_inter_first; /* every expert's intermediate columns (experts tensor-parallel) */
    bool expert_parallel;          /* --enable-expert-parallel: whole experts per rank instead */
    int expert_first, experts;     /* the experts this rank holds (all of them without expert parallelism) */
    /* vocabulary rows of the embedding and the lm_head: the padded vocabulary (vocab_size rounded
     * up to a multiple of 64, and of the rank count, as vLLM's VocabParallelEmbedding pads it) cut
     * in vocab_part rows a rank; vocab of them are real (fewer on the last ranks when padded) */
    int64_t vocab, vocab_first, vocab_part;
} qs_tp_layout;

/* The layout of rank `rank` of `size` for config c, or an error naming what does not split. size 1
 * is the whole model. expert_parallel: MoE layers keep
 * whole experts, num_experts / size of them a rank, instead of cutting every expert. */
int qs_tp_layout_plan(const qs_model_config *c, int rank, int size, bool expert_parallel, qs_tp_layout *out,
                      qs_err *err);

#endif
