/* prompt_logprobs.h — vLLM's prompt_logprobs: for each prompt token after the first, its
 * log-probability under the model given the tokens before it, its rank, and the top-N
 * alternatives, from the raw logits (log-softmax, no temperature or penalties, as vLLM reports
 * prompt logprobs). The engine computes them by running the prompt one position a step with
 * logits for each (the forward pass returns one row of logits per sequence and step). */
#ifndef QS_ENGINE_PROMPT_LOGPROBS_H
#define QS_ENGINE_PROMPT_LOGPROBS_H

#include <stdint.h>

#define QS_MAX_PROMPT_LOGPROBS 20

typedef struct qs_prompt_logprob {
    int32_t token_id;
    float logprob;
    int rank;                  /* 1 = the most likely token */
    int n_top;
    int32_t top_ids[QS_MAX_PROMPT_LOGPROBS];
    float top_logprobs[QS_MAX_PROMPT_LOGPROBS];
} qs_prompt_logprob;

/* Fills out for `token` from logits[vocab] (not modified): its logprob and rank and the n_top
 * most likely ids (ties to the lower id). */
void qs_prompt_logprob_fill(const float *logits, int vocab, int32_t token, int n_top, qs_prompt_logprob *out);

#endif
