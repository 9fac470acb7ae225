/* sampler.h — turns one row of logits into the next token, as the OpenAI / vLLM parameters say:
 * logit_bias, repetition / presence / frequency penalties, temperature (0 = greedy), top-k,
 * top-p, min-p, a per-request seed (reproducible), and top-N logprobs of the final distribution
 * before truncation (as vLLM reports them). */
#ifndef QS_ENGINE_SAMPLER_H
#define QS_ENGINE_SAMPLER_H

#include <stdbool.h>
#include <stdint.h>

#include "core/sample.h"

#define QS_MAX_LOGPROBS 20
/* Temperatures below this are greedy (as vLLM's _SAMPLING_EPS): dividing logits by a tiny
 * temperature overflows to inf/NaN and samples garbage. */
#define QS_SAMPLING_EPS 1e-5

typedef struct qs_logit_bias {
    int32_t token_id;
    float bias;
} qs_logit_bias;

typedef struct qs_sampling_params {
    double temperature;          /* 0 = greedy; default 1 */
    double top_p;                /* (0,1]; default 1 */
    int top_k;                   /* 0 or -1 = off */
    double min_p;                /* [0,1]; default 0 */
    double presence_penalty;     /* [-2,2] */
    double frequency_penalty;    /* [-2,2] */
    double repetition_penalty;   /* > 0; 1 = off; applies to prompt and output tokens */
    bool has_seed;
    uint64_t seed;
    const qs_logit_bias *logit_bias;
    int n_logit_bias;
    int logprobs;                /* -1 = none; else top-N (0..QS_MAX_LOGPROBS) plus the chosen one */
} qs_sampling_params;

void qs_sampling_params_defaults(qs_sampling_params *p);

/* Per-sequence sampler state: RNG and token counts for the penalties. */
typedef struct qs_sampler_state qs_sampler_state;
/* engine_seed is used when the request has no seed, so runs are reproducible per server seed. */
qs_sampler_state *qs_sampler_state_new(const qs_sampling_params *p, int vocab_size, uint64_t engine_seed,
                                       uint64_t request_index);
void qs_sampler_state_free(qs_sampler_state *s);
/* Record prompt tokens (repetition penalty) and generated tokens (all penalties). */
void qs_sampler_observe_prompt(qs_sampler_state *s, const int32_t *ids, int n);
void qs_sampler_observe_output(qs_sampler_state *s, int32_t id);

typedef struct qs_token_logprobs {
    int32_t token_id;
    float logprob;               /* of the chosen token */
    int n_top;
    int32_t top_ids[QS_MAX_LOGPROBS];
    float top_logprobs[QS_MAX_LOGPROBS];
} qs_token_logprobs;

/* Sampling on the device (core/sample.h) instead of qs_sample: whether p asks for nothing the
 * device op lacks (no logit_bias, no repetition / presence / frequency penalty, no logprobs). */
bool qs_sampling_device_ok(const qs_sampling_params *p);
/* Fills row's temperature, top-k, top-p and min-p from p (skip and banned ids are left as they
 * are) and, unless the row is greedy (temperature 0, or no state), draws its u from s: the one
 * uniform qs_sample would have drawn for this token, so a seed still decides the output. */
void qs_sampler_device_row(const qs_sampling_params *p, qs_sampler_state *s, qs_sample_row *row);

/* Samples from logits[vocab_size] (modified in place). lp may be NULL when p->logprobs < 0. */
int32_t qs_sample(const qs_sampling_params *p, qs_sampler_state *s, float *logits, int vocab_size,
                  qs_token_logprobs *lp);

#endif
