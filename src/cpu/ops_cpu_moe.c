/* ops_cpu_moe.c — MoE routing on the CPU: softmax over each token's router logits, the top-k
 * experts (ties broken towards the lower expert id, as torch.topk does on CPU in practice), and the
 * optional renormalisation of the k weights (Mixtral always, Qwen3-MoE when norm_topk_prob), and
 * under expert parallelism the slice of the slots to this rank's experts. The expert MLPs
 * themselves run in the registry-chosen MoE kernel. */
#include "cpu/ops_cpu_internal.h"

#include <math.h>

int qs_cpu_moe_route(const void *router_logits, int32_t *topk_ids, float *topk_weights, int64_t n_tokens,
                     int n_experts, int top_k, bool norm_topk, qs_err *err)
{
    if (top_k <= 0 || top_k > n_experts)
        return qs_errf(err, "moe routing: top_k %d outside 1..%d experts", top_k, n_experts);
    const float *logits = router_logits;
    for (int64_t t = 0; t < n_tokens; t++) {
        const float *l = logits + t * n_experts;
        float max = l[0];
        for (int e = 1; e < n_experts; e++)
            if (l[e] > max)
                max = l[e];
        double sum = 0;
        for (int e = 0; e < n_experts; e++)
            sum += exp((double)l[e] - max);
        int32_t *ids = topk_ids + t * top_k;
        float *w = topk_weights + t * top_k;
        double picked = 0;
        for (int j = 0; j < top_k; j++) {
            int best = -1;
            for (int e = 0; e < n_experts; e++) {
                bool taken = false;
                for (int i = 0; i < j; i++)
                    taken |= ids[i] == e;
                if (!taken && (best < 0 || l[e] > l[best]))
                    best = e;
            }
            ids[j] = best;
            w[j] = (float)(exp((double)l[best] - max) / sum);
            picked += w[j];
        }
        if (norm_topk)
            for (int j = 0; j < top_k; j++)
                w[j] = (float)(w[j] / picked);
    }
    return 0;
}

int qs_cpu_moe_expert_slice(int32_t *topk_ids, float *topk_weights, int64_t n, int first, int count, qs_err *err)
{
    if (first < 0 || count <= 0)
        return qs_errf(err, "moe_expert_slice: experts %d..%d", first, first + count);
    for (int64_t i = 0; i < n; i++) {
        int local = topk_ids[i] - first;
        if (local >= 0 && local < count) {
            topk_ids[i] = local;
        } else {
            topk_ids[i] = -1; /* another rank's expert: skipped by the MoE kernel */
            topk_weights[i] = 0.0f;
        }
    }
    return 0;
}
