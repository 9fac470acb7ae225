/* sampler.c — one row of logits to the next token (sampler.h). The order, as vLLM applies it:
 *   1. logit_bias (added to the raw logits)
 *   2. repetition penalty (HF: positive logits divided, negative multiplied) over prompt and
 *      output tokens; presence and frequency penalties (OpenAI: minus presence for any occurrence,
 *      minus frequency times the count) over output tokens
 *   3. temperature (skipped when greedy)
 *   4. logprobs: log-softmax of these processed logits, before any truncation
 *   5. greedy argmax when temperature is 0; else one draw by the sampling op's definition
 *      (core/sample.h: temperature, min-p, top-k, top-p, then a walk in id order) with one uniform
 *      from the sequence's own PRNG, through the CPU op, so host and device pick the same token.
 * The PRNG is xoshiro256** seeded through splitmix64 from the request seed, or from the engine
 * seed and the request index when the request has none, so every run is reproducible.
 * Requests that need none of steps 1, 2 and 4 may instead be sampled on the device
 * (qs_sampler_device_row: core/sample.h), which draws the same one uniform per token from the same
 * PRNG: asking for logprobs (or a zero logit_bias) never changes a seeded request's text. */
#include "engine/sampler.h"

#include "core/ops.h"
#include "device/backends.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct qs_sampler_state {
    uint64_t rng[4];
    int vocab;
    int32_t *out_count;    /* occurrences in the output */
    unsigned char *seen;   /* occurs in prompt or output (repetition penalty) */
};

void qs_sampling_params_defaults(qs_sampling_params *p)
{
    memset(p, 0, sizeof(*p));
    p->temperature = 1.0;
    p->top_p = 1.0;
    p->top_k = 0;
    p->min_p = 0.0;
    p->repetition_penalty = 1.0;
    p->logprobs = -1;
}

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t xoshiro_next(uint64_t *s)
{
    uint64_t result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

/* Uniform double in [0, 1) from the top 53 bits. */
static double uniform(qs_sampler_state *s) { return (double)(xoshiro_next(s->rng) >> 11) * 0x1.0p-53; }

qs_sampler_state *qs_sampler_state_new(const qs_sampling_params *p, int vocab_size, uint64_t engine_seed,
                                       uint64_t request_index)
{
    if (vocab_size <= 0)
        return NULL;
    qs_sampler_state *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->vocab = vocab_size;
    s->out_count = calloc((size_t)vocab_size, sizeof(int32_t));
    s->seen = calloc((size_t)vocab_size, 1);
    if (!s->out_count || !s->seen) {
        qs_sampler_state_free(s);
        return NULL;
    }
    uint64_t x = p && p->has_seed ? p->seed : engine_seed ^ splitmix64(&(uint64_t){request_index + 0x51ed});
    for (int i = 0; i < 4; i++)
        s->rng[i] = splitmix64(&x);
    return s;
}

void qs_sampler_state_free(qs_sampler_state *s)
{
    if (!s)
        return;
    free(s->out_count);
    free(s->seen);
    free(s);
}

void qs_sampler_observe_prompt(qs_sampler_state *s, const int32_t *ids, int n)
{
    for (int i = 0; i < n; i++)
        if (ids[i] >= 0 && ids[i] < s->vocab)
            s->seen[ids[i]] = 1;
}

void qs_sampler_observe_output(qs_sampler_state *s, int32_t id)
{
    if (id < 0 || id >= s->vocab)
        return;
    s->seen[id] = 1;
    s->out_count[id]++;
}

static void apply_penalties(const qs_sampling_params *p, const qs_sampler_state *s, float *logits, int vocab)
{
    bool rep = p->repetition_penalty > 0 && p->repetition_penalty != 1.0;
    bool pres = p->presence_penalty != 0, freq = p->frequency_penalty != 0;
    if (!s || (!rep && !pres && !freq))
        return;
    for (int i = 0; i < vocab; i++) {
        if (rep && s->seen[i])
            logits[i] = logits[i] > 0 ? (float)(logits[i] / p->repetition_penalty)
                                      : (float)(logits[i] * p->repetition_penalty);
        if (s->out_count[i] > 0) {
            if (freq)
                logits[i] -= (float)(p->frequency_penalty * s->out_count[i]);
            if (pres)
                logits[i] -= (float)p->presence_penalty;
        }
    }
}

static int argmax(const float *x, int n)
{
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best])
            best = i;
    return best;
}

/* Fills lp from the log-softmax of logits: the chosen token and the top n (ties: lower id). */
static void fill_logprobs(const float *logits, int vocab, int32_t chosen, int n, qs_token_logprobs *lp)
{
    float max = logits[argmax(logits, vocab)];
    double sum = 0;
    for (int i = 0; i < vocab; i++)
        sum += exp((double)logits[i] - max);
    double lse = max + log(sum);
    lp->token_id = chosen;
    lp->logprob = (float)(logits[chosen] - lse);
    if (n > QS_MAX_LOGPROBS)
        n = QS_MAX_LOGPROBS;
    if (n > vocab)
        n = vocab;
    lp->n_top = 0;
    for (int j = 0; j < n; j++) {
        int best = -1;
        for (int i = 0; i < vocab; i++) {
            bool taken = false;
            for (int k = 0; k < j && !taken; k++)
                taken = lp->top_ids[k] == i;
            if (!taken && (best < 0 || logits[i] > logits[best]))
                best = i;
        }
        lp->top_ids[j] = best;
        lp->top_logprobs[j] = (float)(logits[best] - lse);
        lp->n_top++;
    }
}

/* One draw with the sampling op's definition (core/sample.h), on the host: the same token the
 * device would pick for the same logits and uniform, so a seed decides the output whether or not
 * the request also asks for logprobs or a logit_bias. */
static int32_t draw(const qs_sampling_params *p, qs_sampler_state *s, const float *logits, int vocab)
{
    qs_sample_row row;
    memset(&row, 0, sizeof row);
    qs_sampler_device_row(p, s, &row);
    int32_t token = -1;
    qs_err err = {{0}};
    if (qs_ops_for_platform(QS_PLATFORM_CPU, NULL)->sample(&token, logits, &row, 1, vocab, &err) || token < 0)
        return argmax(logits, vocab); /* out of memory: still a valid token */
    return token;
}

int32_t qs_sample(const qs_sampling_params *p, qs_sampler_state *s, float *logits, int vocab_size,
                  qs_token_logprobs *lp)
{
    for (int i = 0; i < p->n_logit_bias; i++) {
        int32_t id = p->logit_bias[i].token_id;
        if (id >= 0 && id < vocab_size)
            logits[id] += p->logit_bias[i].bias;
    }
    apply_penalties(p, s, logits, vocab_size);
    bool greedy = p->temperature < QS_SAMPLING_EPS || !s;
    int32_t chosen = greedy ? argmax(logits, vocab_size) : draw(p, s, logits, vocab_size);
    if (lp && p->logprobs >= 0) {
        if (!greedy && p->temperature != 1.0)
            for (int i = 0; i < vocab_size; i++)
                logits[i] = (float)(logits[i] / p->temperature);
        fill_logprobs(logits, vocab_size, chosen, p->logprobs, lp);
    }
    return chosen;
}

bool qs_sampling_device_ok(const qs_sampling_params *p)
{
    bool rep = p->repetition_penalty > 0 && p->repetition_penalty != 1.0;
    return p->n_logit_bias == 0 && !rep && p->presence_penalty == 0 && p->frequency_penalty == 0 && p->logprobs < 0;
}

void qs_sampler_device_row(const qs_sampling_params *p, qs_sampler_state *s, qs_sample_row *row)
{
    bool greedy = p->temperature < QS_SAMPLING_EPS || !s;
    row->inv_temperature = greedy ? 0.0f : (p->temperature == 1.0 ? 1.0f : (float)(1.0 / p->temperature));
    row->top_k = p->top_k;
    row->top_p = p->top_p;
    row->log_min_p = p->min_p > 0 ? (float)log(p->min_p) : -INFINITY;
    row->u = greedy ? 0.0 : uniform(s);
}
