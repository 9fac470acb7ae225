/* test_engine_fields.c — the engine side of vLLM's request fields, against the deterministic
 * fake model of fake_model.h (one-hot logits: 10 for the hash-chain's next token, 0 elsewhere):
 * prompt logprobs (exact values, one prompt position a step, on the first event),
 * prompt-only scoring, allowed_token_ids, bad_words (one token and a multi-token prefix), and
 * stop_reason for a stop token id. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine/engine.h"
#include "model/kv_cache.h"

#include "fake_model.h"

/* Takes every event; returns the first (the others are freed), tokens into out. */
static qs_engine_event *take_all(qs_event_sink *sink, int32_t *out, int *n, qs_engine_event **last)
{
    qs_engine_event *list = qs_event_sink_take(sink, 0), *first = list;
    *n = 0;
    for (qs_engine_event *ev = list; ev; ev = ev->next) {
        if (ev->token >= 0)
            out[(*n)++] = ev->token;
        *last = ev;
    }
    return first;
}

static void test_prompt_logprobs(void **state)
{
    (void)state;
    fake_model *fm;
    qs_engine *e = engine_new(&fm, 64, 4, 64, 16, 512);
    enum { P = 20 };
    int32_t prompt[P];
    make_prompt(prompt, P, 3);
    prompt[7] = next_token(prompt, 7); /* one prompt token the model predicts: rank 1 */
    qs_seq_request r = greedy_request(prompt, P, 4, 0);
    r.ignore_eos = true;
    r.prompt_logprobs = true;
    r.prompt_logprobs_top = 2;
    qs_event_sink *sink = qs_event_sink_new();
    qs_err err;
    assert_int_equal(qs_engine_submit(e, &r, 1, sink, &err), QS_SUBMIT_OK);
    run_until_idle(e, 200);
    int32_t got[16];
    int n;
    qs_engine_event *last = NULL, *first = take_all(sink, got, &n, &last);
    int32_t want[16];
    assert_int_equal(reference(prompt, P, 4, true, want), n);
    assert_memory_equal(got, want, (size_t)n * sizeof *want); /* generation unchanged */
    assert_non_null(first->prompt_lp);
    assert_int_equal(first->n_prompt_lp, P);
    assert_int_equal(first->prompt_lp[0].token_id, prompt[0]);
    double lse = log(exp(10.0) + (VOCAB - 1));
    for (int i = 1; i < P; i++) {
        const qs_prompt_logprob *lp = &first->prompt_lp[i];
        bool hot = prompt[i] == next_token(prompt, i);
        assert_int_equal(lp->token_id, prompt[i]);
        assert_float_equal(lp->logprob, (hot ? 10.0 : 0.0) - lse, 1e-4);
        if (hot)
            assert_int_equal(lp->rank, 1);
        else
            assert_true(lp->rank >= 2);
        assert_int_equal(lp->n_top, 2);
        assert_int_equal(lp->top_ids[0], next_token(prompt, i));
    }
    /* the prompt ran one position a step, each with its own row of logits */
    for (int s = 0; s < P - 1; s++)
        assert_int_equal(fm->step_tokens[s], 1);
    qs_engine_event_free_list(first);
    assert_int_equal(fm->n_used, 0);
    qs_event_sink_release(sink);
    qs_engine_free(e);
    fake_free(fm);
}

static void test_prompt_only(void **state)
{
    (void)state;
    fake_model *fm;
    qs_engine *e = engine_new(&fm, 64, 4, 64, 16, 512);
    int32_t prompt[9];
    make_prompt(prompt, 9, 5);
    qs_seq_request r = greedy_request(prompt, 9, 1, 0);
    r.prompt_only = true;
    r.prompt_logprobs = true;
    qs_event_sink *sink = qs_event_sink_new();
    qs_err err;
    assert_int_equal(qs_engine_submit(e, &r, 1, sink, &err), QS_SUBMIT_OK);
    run_until_idle(e, 100);
    int32_t got[4];
    int n;
    qs_engine_event *last = NULL, *first = take_all(sink, got, &n, &last);
    assert_int_equal(n, 0); /* nothing generated */
    assert_int_equal(last->finish, QS_FINISH_LENGTH);
    assert_int_equal(last->completion_tokens, 0);
    assert_int_equal(first->n_prompt_lp, 9);
    qs_engine_event_free_list(first);
    qs_event_sink_release(sink);
    qs_engine_free(e);
    fake_free(fm);
}

static void run_masked(const qs_seq_request *r, int32_t *got, int *n, qs_engine_event **last_copy)
{
    fake_model *fm;
    qs_engine *e = engine_new(&fm, 64, 4, 64, 16, 512);
    qs_event_sink *sink = qs_event_sink_new();
    qs_err err;
    assert_int_equal(qs_engine_submit(e, r, 1, sink, &err), QS_SUBMIT_OK);
    run_until_idle(e, 200);
    qs_engine_event *last = NULL, *first = take_all(sink, got, n, &last);
    *last_copy = calloc(1, sizeof **last_copy);
    **last_copy = *last;
    (*last_copy)->text = NULL;
    (*last_copy)->stop_str = NULL;
    (*last_copy)->prompt_lp = NULL;
    (*last_copy)->next = NULL;
    qs_engine_event_free_list(first);
    qs_event_sink_release(sink);
    qs_engine_free(e);
    fake_free(fm);
}

static void test_allowed_and_bad_words(void **state)
{
    (void)state;
    int32_t prompt[12], want[8], got[8];
    make_prompt(prompt, 12, 9);
    int n_want = reference(prompt, 12, 6, true, want), n;
    qs_engine_event *last;

    qs_seq_request r = greedy_request(prompt, 12, 6, 0);
    r.ignore_eos = true;
    int32_t allowed[] = {33, 5};
    r.allowed_token_ids = allowed;
    r.n_allowed_token_ids = 2;
    run_masked(&r, got, &n, &last);
    free(last);
    assert_int_equal(n, 6);
    for (int i = 0; i < n; i++)
        assert_true(got[i] == 5 || got[i] == 33);

    /* a one-token bad word never appears; the greedy choice moves elsewhere */
    r = greedy_request(prompt, 12, 6, 0);
    r.ignore_eos = true;
    int32_t bad_ids[] = {want[0], want[1], want[2]};
    int one[] = {1};
    r.bad_word_ids = bad_ids;
    r.bad_word_lens = one;
    r.n_bad_words = 1;
    run_masked(&r, got, &n, &last);
    free(last);
    for (int i = 0; i < n; i++)
        assert_int_not_equal(got[i], want[0]);

    /* a three-token bad word: its last token is banned only right after the first two */
    assert_int_equal(n_want, 6);
    int three[] = {3};
    r = greedy_request(prompt, 12, 6, 0);
    r.ignore_eos = true;
    r.bad_word_ids = bad_ids;
    r.bad_word_lens = three;
    r.n_bad_words = 1;
    run_masked(&r, got, &n, &last);
    free(last);
    assert_int_equal(got[0], want[0]);
    assert_int_equal(got[1], want[1]);
    assert_int_not_equal(got[2], want[2]);
}

static void test_stop_reason_token(void **state)
{
    (void)state;
    int32_t prompt[10], want[8], got[8];
    make_prompt(prompt, 10, 4);
    reference(prompt, 10, 6, true, want);
    if (want[0] == EOS || want[1] == EOS || want[2] == EOS)
        skip();
    qs_seq_request r = greedy_request(prompt, 10, 6, 0);
    r.stop_token_ids = &want[2];
    r.n_stop_token_ids = 1;
    int n;
    qs_engine_event *last;
    run_masked(&r, got, &n, &last);
    assert_int_equal(last->finish, QS_FINISH_STOP);
    assert_int_equal(last->stop_token, want[2]);
    free(last);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prompt_logprobs),
        cmocka_unit_test(test_prompt_only),
        cmocka_unit_test(test_allowed_and_bad_words),
        cmocka_unit_test(test_stop_reason_token),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
