/* prompt_logprobs.c — one prompt position's log-probabilities (see prompt_logprobs.h). */
#include "engine/prompt_logprobs.h"

#include <math.h>
#include <stdbool.h>

void qs_prompt_logprob_fill(const float *logits, int vocab, int32_t token, int n_top, qs_prompt_logprob *out)
{
    float max = -INFINITY;
    for (int i = 0; i < vocab; i++)
        if (logits[i] > max)
            max = logits[i];
    double sum = 0;
    for (int i = 0; i < vocab; i++)
        sum += exp((double)logits[i] - max);
    double lse = max + log(sum);
    float x = token >= 0 && token < vocab ? logits[token] : -INFINITY;
    int rank = 1;
    for (int i = 0; i < vocab; i++)
        rank += logits[i] > x || (logits[i] == x && i < token);
    out->token_id = token;
    out->logprob = (float)(x - lse);
    out->rank = rank;
    if (n_top > QS_MAX_PROMPT_LOGPROBS)
        n_top = QS_MAX_PROMPT_LOGPROBS;
    if (n_top > vocab)
        n_top = vocab;
    out->n_top = 0;
    /* n_top is at most 20: a selection pass per slot beats sorting the vocabulary */
    for (int j = 0; j < n_top; j++) {
        int best = -1;
        for (int i = 0; i < vocab; i++) {
            bool taken = false;
            for (int k = 0; k < j && !taken; k++)
                taken = out->top_ids[k] == i;
            if (!taken && (best < 0 || logits[i] > logits[best]))
                best = i;
        }
        out->top_ids[j] = best;
        out->top_logprobs[j] = (float)(logits[best] - lse);
        out->n_top++;
    }
}
