/* test_sampler.c — the sampler against hand-computed expectations (greedy, logit_bias, the
 * repetition / presence / frequency penalties, logprobs) and, for the random parts, statistics
 * over many seeded draws: temperature, top-k, top-p and min-p keep exactly the tokens they should,
 * with frequencies within tolerance of the renormalised probabilities; equal seeds repeat. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "engine/sampler.h"

#define V 6
static const float BASE[V] = {1.0f, 3.0f, 2.0f, -1.0f, 0.5f, 2.9f};

static int32_t sample_once(const qs_sampling_params *p, qs_sampler_state *s, qs_token_logprobs *lp)
{
    float l[V];
    memcpy(l, BASE, sizeof(l));
    return qs_sample(p, s, l, V, lp);
}

static void greedy_picks_argmax(void **state)
{
    qs_sampling_params p;
    qs_sampling_params_defaults(&p);
    assert_true(p.temperature == 1.0 && p.top_p == 1.0 && p.logprobs == -1);
    p.temperature = 0;
    qs_sampler_state *s = qs_sampler_state_new(&p, V, 0, 0);
    assert_int_equal(sample_once(&p, s, NULL), 1);
    qs_sampler_state_free(s);
}

static void logit_bias_shifts_choice(void **state)
{
    qs_sampling_params p;
    qs_sampling_params_defaults(&p);
    p.temperature = 0;
    qs_logit_bias b[2] = {{3, 10.0f}, {999, 5.0f}}; /* an out-of-range id is ignored */
    p.logit_bias = b;
    p.n_logit_bias = 2;
    qs_sampler_state *s = qs_sampler_state_new(&p, V, 0, 0);
    assert_int_equal(sample_once(&p, s, NULL), 3); /* -1 + 10 = 9 */
    qs_sampler_state_free(s);
}

static void penalties_follow_hf_and_openai(void **state)
{
    qs_sampling_params p;
    qs_sampling_params_defaults(&p);
    p.temperature = 0;
    p.repetition_penalty = 2.0;
    p.presence_penalty = 0.5;
    p.frequency_penalty = 0.25;
    qs_sampler_state *s = qs_sampler_state_new(&p, V, 0, 0);
    int32_t prompt[1] = {3};
    qs_sampler_observe_prompt(s, prompt, 1);
    qs_sampler_observe_output(s, 1);
    qs_sampler_observe_output(s, 1);
    float l[V];
    memcpy(l, BASE, sizeof(l));
    p.logprobs = 0;
    qs_token_logprobs lp;
    int32_t t = qs_sample(&p, s, l, V, &lp);
    /* token 1: 3 / 2 = 1.5, then - 0.5 presence - 2 * 0.25 frequency = 0.5 */
    assert_float_equal(l[1], 0.5f, 1e-6);
    /* token 3 (prompt only): negative, multiplied: -2; no presence/frequency from the prompt */
    assert_float_equal(l[3], -2.0f, 1e-6);
    assert_float_equal(l[5], 2.9f, 1e-6);
    assert_int_equal(t, 5);
    qs_sampler_state_free(s);
}

static void logprobs_are_log_softmax(void **state)
{
    qs_sampling_params p;
    qs_sampling_params_defaults(&p);
    p.temperature = 0;
    p.logprobs = 2;
    qs_sampler_state *s = qs_sampler_state_new(&p, V, 0, 0);
    qs_token_logprobs lp;
    int32_t t = sample_once(&p, s, &lp);
    double z = 0;
    for (int i = 0; i < V; i++)
        z += exp(BASE[i]);
    assert_int_equal(t, 1);
    assert_int_equal(lp.token_id, 1);
    assert_float_equal(lp.logprob, 3.0 - log(z), 1e-5);
    assert_int_equal(lp.n_top, 2);
    assert_int_equal(lp.top_ids[0], 1);
    assert_int_equal(lp.top_ids[1], 5);
    assert_float_equal(lp.top_logprobs[1], 2.9 - log(z), 1e-5);
    /* with temperature 2 the logprobs are of the tempered distribution */
    p.temperature = 2.0;
    sample_once(&p, s, &lp);
    double z2 = 0;
    for (int i = 0; i < V; i++)
        z2 += exp(BASE[i] / 2);
    assert_float_equal(lp.top_logprobs[0], 1.5 - log(z2), 1e-5);
    qs_sampler_state_free(s);
}

/* Draws n tokens and counts them. */
static void histogram(const qs_sampling_params *p, int n, int *counts)
{
    qs_sampler_state *s = qs_sampler_state_new(p, V, 42, 0);
    memset(counts, 0, sizeof(int) * V);
    for (int i = 0; i < n; i++)
        counts[sample_once(p, s, NULL)]++;
    qs_sampler_state_free(s);
}

/* Expected probabilities of BASE / T restricted to `keep`, renormalised. */
static void expect(double T, const int *keep, double *prob)
{
    double z = 0;
    for (int i = 0; i < V; i++) {
        prob[i] = keep[i] ? exp(BASE[i] / T) : 0;
        z += prob[i];
    }
    for (int i = 0; i < V; i++)
        prob[i] /= z;
}

static void assert_matches(const int *counts, const double *prob, int n)
{
    for (int i = 0; i < V; i++) {
        double f = (double)counts[i] / n, sd = sqrt(prob[i] * (1 - prob[i]) / n);
        if (prob[i] == 0 && counts[i] != 0)
            fail_msg("token %d drawn %d times but should be excluded", i, counts[i]);
        if (fabs(f - prob[i]) > 5 * sd + 1e-9)
            fail_msg("token %d: frequency %.4f, expected %.4f (sd %.4f)", i, f, prob[i], sd);
    }
}

enum { DRAWS = 40000 };

static void temperature_distribution(void **state)
{
    qs_sampling_params p;
    qs_sampling_params_defaults(&p);
    p.temperature = 1.5;
    int counts[V], keep[V] = {1, 1, 1, 1, 1, 1};
    double prob[V];
    histogram(&p, DRAWS, counts);
    expect(1.5, keep, prob);
    assert_matches(counts, prob, DRAWS);
}

static void top_k_keeps_k(void **state)
{
    qs_sampling_params p;
    qs_sampling_params_defaults(&p);
    p.top_k = 3; /* tokens 1, 5, 2 */
    int counts[V], keep[V] = {0, 1, 1, 0, 0, 1};
    double prob[V];
    histogram(&p, DRAWS, counts);
    expect(1.0, keep, prob);
    assert_matches(counts, prob, DRAWS);
}

static void top_p_keeps_smallest_prefix(void **state)
{
    /* probabilities (T=1): 1:.3815 5:.3452 2:.1404 0:.0516 4:.0313 3:.0070 ; top_p 0.8 needs
     * 1, 5, 2 (cumulative .867) */
    qs_sampling_params p;
    qs_sampling_params_defaults(&p);
    p.top_p = 0.8;
    int counts[V], keep[V] = {0, 1, 1, 0, 0, 1};
    double prob[V];
    histogram(&p, DRAWS, counts);
    expect(1.0, keep, prob);
    assert_matches(counts, prob, DRAWS);
}

static void min_p_drops_unlikely(void **state)
{
    /* min_p 0.2: floor 0.2 * .3815 = .0763 keeps 1, 5, 2 */
    qs_sampling_params p;
    qs_sampling_params_defaults(&p);
    p.min_p = 0.2;
    int counts[V], keep[V] = {0, 1, 1, 0, 0, 1};
    double prob[V];
    histogram(&p, DRAWS, counts);
    expect(1.0, keep, prob);
    assert_matches(counts, prob, DRAWS);
}

static void seeds_reproduce(void **state)
{
    qs_sampling_params p;
    qs_sampling_params_defaults(&p);
    p.has_seed = true;
    p.seed = 1234;
    qs_sampler_state *a = qs_sampler_state_new(&p, V, 1, 0), *b = qs_sampler_state_new(&p, V, 2, 9);
    int same = 0;
    for (int i = 0; i < 200; i++)
        same += sample_once(&p, a, NULL) == sample_once(&p, b, NULL);
    assert_int_equal(same, 200); /* the request seed wins over engine seed and index */
    qs_sampler_state_free(a);
    qs_sampler_state_free(b);
    p.has_seed = false; /* different request indices without a seed: different streams */
    a = qs_sampler_state_new(&p, V, 1, 0);
    b = qs_sampler_state_new(&p, V, 1, 1);
    same = 0;
    for (int i = 0; i < 200; i++)
        same += sample_once(&p, a, NULL) == sample_once(&p, b, NULL);
    assert_true(same < 150);
    qs_sampler_state_free(a);
    qs_sampler_state_free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(greedy_picks_argmax),       cmocka_unit_test(logit_bias_shifts_choice),
        cmocka_unit_test(penalties_follow_hf_and_openai), cmocka_unit_test(logprobs_are_log_softmax),
        cmocka_unit_test(temperature_distribution),  cmocka_unit_test(top_k_keeps_k),
        cmocka_unit_test(top_p_keeps_smallest_prefix), cmocka_unit_test(min_p_drops_unlikely),
        cmocka_unit_test(seeds_reproduce),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
