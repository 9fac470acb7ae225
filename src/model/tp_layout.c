/* tp_layout.c — which heads, KV heads, MLP columns, experts and (padded) vocabulary rows each
 * tensor-parallel rank holds, as vLLM assigns them (tp_layout.h). */
#include "model/tp_layout.h"

#include <stdio.h>

/* vLLM's VocabParallelEmbedding pads the vocabulary to a multiple of 64 (DEFAULT_VOCAB_PADDING_SIZE)
 * and cuts that in equal parts; here to a multiple of lcm(64, ranks), the same for any rank count
 * that divides 64, and one that still cuts evenly for the others. */
static int64_t vocab_padding(int size)
{
    int64_t a = 64, b = size;
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return 64 / a * size;
}

int qs_tp_layout_plan(const qs_model_config *c, int rank, int size, bool expert_parallel, qs_tp_layout *out,
                      qs_err *err)
{
    *out = (qs_tp_layout){.rank = rank,
                          .size = size,
                          .heads = c->num_heads,
                          .kv_heads = c->num_kv_heads,
                          .inter = c->intermediate_size,
                          .moe_inter = c->moe_intermediate_size,
                          .experts = c->num_experts,
                          .vocab = c->vocab_size,
                          .vocab_part = c->vocab_size};
    if (expert_parallel && size == 1)
        return qs_errf(err, "--enable-expert-parallel needs --tensor-parallel-size > 1 (the ranks to spread the "
                            "experts over)");
    if (size == 1)
        return 0;
    if (expert_parallel && c->num_experts <= 0)
        return qs_errf(err, "--enable-expert-parallel: %s has no MoE layers", c->arch_name);
    if (expert_parallel && (c->num_experts % size || c->num_experts / size < c->num_experts_per_tok))
        return qs_errf(err, "--enable-expert-parallel: %d experts over %d ranks must split evenly into at least "
                            "num_experts_per_tok %d a rank",
                       c->num_experts, size, c->num_experts_per_tok);
    /* (Llama 4's shared expert is moe_intermediate_size wide and cut even under expert parallelism) */
    if ((!expert_parallel || c->llama4) && c->num_experts > 0 && c->moe_intermediate_size % size)
        return qs_errf(err, "--tensor-parallel-size %d does not divide the experts' intermediate size %d", size,
                       c->moe_intermediate_size);
    if (c->num_heads % size)
        return qs_errf(err, "--tensor-parallel-size %d does not divide num_attention_heads %d", size, c->num_heads);
    if (size <= c->num_kv_heads ? c->num_kv_heads % size : size % c->num_kv_heads)
        return qs_errf(err, "--tensor-parallel-size %d and num_key_value_heads %d: one must divide the other", size,
                       c->num_kv_heads);
    if (c->intermediate_size % size)
        return qs_errf(err, "--tensor-parallel-size %d does not divide intermediate_size %d", size,
                       c->intermediate_size);
    int64_t pad_to = vocab_padding(size), padded = (c->vocab_size + pad_to - 1) / pad_to * pad_to;
    int64_t part = padded / size, last_first = (size - 1) * part;
    if (last_first >= c->vocab_size || part > c->vocab_size)
        return qs_errf(err, "--tensor-parallel-size %d: vocab_size %d is too small to split (padded to %lld, %lld rows "
                            "a rank, the last rank would hold none)",
                       size, c->vocab_size, (long long)padded, (long long)part);
    out->heads = c->num_heads / size;
    out->q_head_first = rank * out->heads;
    if (size <= c->num_kv_heads) {
        out->kv_heads = c->num_kv_heads / size;
        out->kv_head_first = rank * out->kv_heads;
    } else { /* more ranks than KV heads: each holds one, replicated over size / num_kv_heads ranks */
        out->kv_heads = 1;
        out->kv_head_first = rank / (size / c->num_kv_heads);
    }
    out->inter = c->intermediate_size / size;
    out->inter_first = rank * out->inter;
    out->expert_parallel = expert_parallel;
    if (expert_parallel) {
        out->experts = c->num_experts / size;
        out->expert_first = rank * out->experts;
    }
    if (c->num_experts > 0 && (!expert_parallel || c->llama4)) {
        out->moe_inter = c->moe_intermediate_size / size;
        out->moe_inter_first = rank * out->moe_inter;
    }
    out->vocab_part = part;
    out->vocab_first = rank * part;
    out->vocab = (out->vocab_first + part <= c->vocab_size ? part : c->vocab_size - out->vocab_first);
    return 0;
}
