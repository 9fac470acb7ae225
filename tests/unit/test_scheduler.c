/* test_scheduler.c — the engine's scheduler and output rules against a deterministic fake model.
 * The fake stores every token it is given in the KV blocks the block table names and predicts
 * the next token from a hash of the whole context read back through the block table, so a wrong
 * block table, a lost chunk or a bad recompute after preemption changes the output. Every test
 * compares batched runs (chunked prefill, preemption, many sequences) with the reference chain. */
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

static void test_single_sequence_matches_reference(void **state)
{
    (void)state;
    fake_model *fm;
    qs_engine *e = engine_new(&fm, 64, 4, 64, 16, 512);
    int32_t prompt[20];
    make_prompt(prompt, 20, 1);
    qs_seq_request r = greedy_request(prompt, 20, 30, 0);
    r.ignore_eos = true;
    qs_event_sink *sink = qs_event_sink_new();
    qs_err err;
    assert_int_equal(qs_engine_submit(e, &r, 1, sink, &err), QS_SUBMIT_OK);
    run_until_idle(e, 200);
    collected c[1];
    memset(c, 0, sizeof c);
    assert_int_equal(collect(sink, c), 1);
    int32_t want[64];
    int n = reference(prompt, 20, 30, true, want);
    assert_int_equal(c[0].n, n);
    assert_memory_equal(c[0].tokens, want, (size_t)n * sizeof *want);
    assert_int_equal(c[0].finish, QS_FINISH_LENGTH);
    assert_int_equal(c[0].prompt_tokens, 20);
    assert_int_equal(c[0].completion_tokens, 30);
    assert_int_equal(fm->n_used, 0); /* every block returned */
    qs_event_sink_release(sink);
    qs_engine_free(e);
    fake_free(fm);
}

/* 24 sequences with prompts of 1..150 tokens through a small pool: chunked prefill, at most 4
 * sequences at once, preemption by recompute; each output must equal its run alone. */
static void test_batched_chunked_preempted_equals_alone(void **state)
{
    (void)state;
    fake_model *fm;
    enum { N = 24 };
    qs_engine *e = engine_new(&fm, 24, 4, 40, 64, 256);
    static int32_t prompts[N][160];
    int lens[N], max_tokens[N];
    qs_event_sink *sinks[N];
    qs_err err;
    for (int i = 0; i < N; i++) {
        lens[i] = 1 + (i * 37) % 150;
        max_tokens[i] = 5 + (i * 11) % 60;
        make_prompt(prompts[i], lens[i], i);
        sinks[i] = qs_event_sink_new();
        qs_seq_request r = greedy_request(prompts[i], lens[i], max_tokens[i], 0);
        assert_int_equal(qs_engine_submit(e, &r, 1, sinks[i], &err), QS_SUBMIT_OK);
        if (i % 5 == 0) /* some arrive while others already run */
            qs_engine_step(e);
    }
    run_until_idle(e, 5000);
    for (int i = 0; i < N; i++) {
        collected c[1];
        memset(c, 0, sizeof c);
        assert_int_equal(collect(sinks[i], c), 1);
        int32_t want[128];
        int n = reference(prompts[i], lens[i], max_tokens[i], false, want);
        assert_int_equal(c[0].n, n);
        assert_memory_equal(c[0].tokens, want, (size_t)n * sizeof *want);
        assert_int_equal(c[0].finish, want[n - 1] == EOS ? QS_FINISH_STOP : QS_FINISH_LENGTH);
        qs_event_sink_release(sinks[i]);
    }
    qs_engine_load load;
    qs_engine_get_load(e, &load);
    assert_true(load.num_preemptions > 0); /* the pool is too small for 4 long sequences */
    assert_int_equal(load.num_running, 0);
    assert_int_equal(load.num_free_blocks, 24);
    assert_int_equal(fm->n_used, 0);
    assert_true(fm->max_used <= 24);
    for (int s = 0; s < fm->n_steps; s++) {
        assert_true(fm->step_tokens[s] <= 40); /* the token budget holds */
        assert_true(fm->step_seqs[s] <= 4);    /* max_num_seqs holds */
    }
    qs_engine_free(e);
    fake_free(fm);
}

/* A long prompt arriving while a sequence decodes is prefilled in chunks, and the decoding
 * sequence gets a token in every one of those steps. */
static void test_chunked_prefill_keeps_decoding(void **state)
{
    (void)state;
    fake_model *fm;
    qs_engine *e = engine_new(&fm, 64, 4, 16, 16, 512);
    int32_t short_prompt[4], long_prompt[200];
    make_prompt(short_prompt, 4, 3);
    make_prompt(long_prompt, 200, 4);
    qs_event_sink *a = qs_event_sink_new(), *b = qs_event_sink_new();
    qs_err err;
    qs_seq_request ra = greedy_request(short_prompt, 4, 100, 0);
    ra.ignore_eos = true;
    assert_int_equal(qs_engine_submit(e, &ra, 1, a, &err), QS_SUBMIT_OK);
    qs_engine_step(e); /* a: prefill, first token */
    qs_seq_request rb = greedy_request(long_prompt, 200, 3, 0);
    rb.ignore_eos = true;
    assert_int_equal(qs_engine_submit(e, &rb, 1, b, &err), QS_SUBMIT_OK);
    int steps_for_prefill = 0;
    collected ca[1], cb[1];
    memset(ca, 0, sizeof ca);
    memset(cb, 0, sizeof cb);
    collect(a, ca);
    assert_int_equal(ca[0].n, 1);
    while (cb[0].n == 0) {
        int before = ca[0].n;
        assert_int_equal(qs_engine_step(e), 1);
        collect(a, ca);
        collect(b, cb);
        assert_int_equal(ca[0].n, before + 1); /* a decoded in this step too */
        assert_true(fm->step_tokens[fm->n_steps - 1] <= 16);
        steps_for_prefill++;
    }
    assert_true(steps_for_prefill >= 200 / 15);
    run_until_idle(e, 500);
    collect(a, ca);
    collect(b, cb);
    int32_t want[128];
    int n = reference(long_prompt, 200, 3, true, want);
    assert_int_equal(cb[0].n, n);
    assert_memory_equal(cb[0].tokens, want, (size_t)n * sizeof *want);
    n = reference(short_prompt, 4, 100, true, want);
    assert_int_equal(ca[0].n, n);
    assert_memory_equal(ca[0].tokens, want, (size_t)n * sizeof *want);
    qs_event_sink_release(a);
    qs_event_sink_release(b);
    qs_engine_free(e);
    fake_free(fm);
}

static void test_queue_bound_and_length_check(void **state)
{
    (void)state;
    fake_model *fm;
    qs_engine *e = engine_new(&fm, 64, 2, 32, 3, 128);
    int32_t prompt[8];
    make_prompt(prompt, 8, 5);
    qs_event_sink *sink = qs_event_sink_new();
    qs_err err;
    qs_seq_request r[4];
    for (int i = 0; i < 4; i++)
        r[i] = greedy_request(prompt, 8, 4, i);
    /* 4 sequences can never fit a queue of 3: refused as invalid (400), not "retry later" */
    assert_int_equal(qs_engine_submit(e, r, 4, sink, &err), QS_SUBMIT_TOO_MANY);
    assert_non_null(strstr(err.msg, "needs 4 sequences"));
    assert_non_null(strstr(err.msg, "at most 3"));
    assert_int_equal(qs_engine_submit(e, r, 3, sink, &err), QS_SUBMIT_OK);
    assert_int_equal(qs_engine_submit(e, r, 1, sink, &err), QS_SUBMIT_QUEUE_FULL);
    assert_non_null(strstr(err.msg, "--max-num-queued-reqs 3"));
    assert_int_equal(qs_engine_submit(e, r, 1, sink, &err), QS_SUBMIT_QUEUE_FULL);
    qs_seq_request too_long = greedy_request(prompt, 8, 121, 0);
    assert_int_equal(qs_engine_submit(e, &too_long, 1, sink, &err), QS_SUBMIT_INVALID);
    assert_non_null(strstr(err.msg, "maximum context length is 128"));
    assert_non_null(strstr(err.msg, "129"));
    int32_t bad = VOCAB + 5;
    qs_seq_request bad_id = greedy_request(&bad, 1, 4, 0);
    assert_int_equal(qs_engine_submit(e, &bad_id, 1, sink, &err), QS_SUBMIT_INVALID);
    run_until_idle(e, 100);
    collected c[4];
    memset(c, 0, sizeof c);
    assert_int_equal(collect(sink, c), 3);
    qs_event_sink_release(sink);
    qs_engine_free(e);
    fake_free(fm);
}

static void test_abort_frees_blocks_at_once(void **state)
{
    (void)state;
    fake_model *fm;
    qs_engine *e = engine_new(&fm, 64, 4, 64, 16, 512);
    int32_t prompt[40];
    make_prompt(prompt, 40, 6);
    qs_event_sink *keep = qs_event_sink_new(), *gone = qs_event_sink_new();
    qs_err err;
    qs_seq_request r = greedy_request(prompt, 40, 200, 0);
    r.ignore_eos = true;
    qs_seq_request two[2] = {r, r};
    two[1].choice = 1;
    assert_int_equal(qs_engine_submit(e, &r, 1, keep, &err), QS_SUBMIT_OK);
    assert_int_equal(qs_engine_submit(e, two, 2, gone, &err), QS_SUBMIT_OK);
    for (int i = 0; i < 5; i++)
        qs_engine_step(e);
    int used_before = fm->n_used;
    qs_engine_abort_sink(e, gone);
    qs_engine_step(e);
    assert_true(fm->n_used < used_before);
    assert_int_equal(fm->n_used, (40 + 7 + QS_KV_BLOCK_SIZE - 1) / QS_KV_BLOCK_SIZE); /* only `keep` holds blocks */
    collected c[2];
    memset(c, 0, sizeof c);
    assert_int_equal(collect(gone, c), 2);
    assert_int_equal(c[0].finish, QS_FINISH_ABORT);
    assert_int_equal(c[1].finish, QS_FINISH_ABORT);
    /* the survivor is undisturbed */
    run_until_idle(e, 1000);
    collected k[1];
    memset(k, 0, sizeof k);
    assert_int_equal(collect(keep, k), 1);
    int32_t want[256];
    int n = reference(prompt, 40, 200, true, want);
    assert_int_equal(k[0].n, n);
    assert_memory_equal(k[0].tokens, want, (size_t)n * sizeof *want);
    qs_event_sink_release(keep);
    qs_event_sink_release(gone);
    qs_engine_free(e);
    fake_free(fm);
}

/* EOS ends a sequence unless ignore_eos; min_tokens keeps it going; stop_token_ids end it. */
static void test_end_tokens(void **state)
{
    (void)state;
    fake_model *fm;
    qs_engine *e = engine_new(&fm, 64, 4, 64, 16, 512);
    /* find a prompt whose greedy chain reaches EOS within 60 tokens */
    int32_t prompt[6], chain[64];
    int salt = 0, n = 0;
    for (; salt < 1000; salt++) {
        make_prompt(prompt, 6, salt);
        n = reference(prompt, 6, 60, false, chain);
        if (chain[n - 1] == EOS && n >= 3)
            break;
    }
    assert_true(salt < 1000);
    qs_err err;
    qs_event_sink *s1 = qs_event_sink_new(), *s2 = qs_event_sink_new(), *s3 = qs_event_sink_new();
    qs_seq_request plain = greedy_request(prompt, 6, 60, 0);
    qs_seq_request ignore = plain;
    ignore.ignore_eos = true;
    qs_seq_request stop_id = plain;
    int32_t stop_at = chain[1];
    stop_id.stop_token_ids = &stop_at;
    stop_id.n_stop_token_ids = 1;
    assert_int_equal(qs_engine_submit(e, &plain, 1, s1, &err), QS_SUBMIT_OK);
    assert_int_equal(qs_engine_submit(e, &ignore, 1, s2, &err), QS_SUBMIT_OK);
    assert_int_equal(qs_engine_submit(e, &stop_id, 1, s3, &err), QS_SUBMIT_OK);
    run_until_idle(e, 500);
    collected c1[1], c2[1], c3[1];
    memset(c1, 0, sizeof c1);
    memset(c2, 0, sizeof c2);
    memset(c3, 0, sizeof c3);
    collect(s1, c1);
    collect(s2, c2);
    collect(s3, c3);
    assert_int_equal(c1[0].finish, QS_FINISH_STOP);
    assert_int_equal(c1[0].n, n);
    assert_int_equal(c2[0].finish, QS_FINISH_LENGTH);
    assert_int_equal(c2[0].n, 60);
    assert_int_equal(c3[0].finish, QS_FINISH_STOP);
    int first_stop = 0;
    while (chain[first_stop] != stop_at)
        first_stop++;
    assert_int_equal(c3[0].n, first_stop + 1);
    qs_event_sink_release(s1);
    qs_event_sink_release(s2);
    qs_event_sink_release(s3);
    qs_engine_free(e);
    fake_free(fm);
}

static void test_forward_error_finishes_batch(void **state)
{
    (void)state;
    fake_model *fm;
    qs_engine *e = engine_new(&fm, 64, 4, 64, 16, 512);
    int32_t prompt[10];
    make_prompt(prompt, 10, 9);
    qs_event_sink *sink = qs_event_sink_new();
    qs_err err;
    qs_seq_request r = greedy_request(prompt, 10, 10, 0);
    assert_int_equal(qs_engine_submit(e, &r, 1, sink, &err), QS_SUBMIT_OK);
    fm->fail_next = true;
    assert_int_equal(qs_engine_step(e), -1);
    collected c[1];
    memset(c, 0, sizeof c);
    assert_int_equal(collect(sink, c), 1);
    assert_int_equal(c[0].finish, QS_FINISH_ERROR);
    assert_int_equal(fm->n_used, 0);
    /* the engine keeps serving */
    qs_event_sink *sink2 = qs_event_sink_new();
    assert_int_equal(qs_engine_submit(e, &r, 1, sink2, &err), QS_SUBMIT_OK);
    run_until_idle(e, 100);
    collected c2[1];
    memset(c2, 0, sizeof c2);
    assert_int_equal(collect(sink2, c2), 1);
    assert_true(c2[0].finish == QS_FINISH_STOP || c2[0].finish == QS_FINISH_LENGTH);
    qs_event_sink_release(sink);
    qs_event_sink_release(sink2);
    qs_engine_free(e);
    fake_free(fm);
}

/* With its own thread the engine serves sequences submitted from here and stops cleanly. */
static void test_threaded_engine(void **state)
{
    (void)state;
    qs_engine_backend be;
    fake_model *fm = fake_new(64, &be);
    static const int32_t eos[] = {EOS};
    qs_engine_options opt = {.max_num_seqs = 8, .max_num_batched_tokens = 64, .max_num_queued_reqs = 64,
                             .max_model_len = 256, .eos_ids = eos, .n_eos = 1, .start_thread = true};
    qs_engine *e;
    qs_err err;
    assert_int_equal(qs_engine_create(&opt, &be, &e, &err), 0);
    int32_t prompt[12];
    make_prompt(prompt, 12, 11);
    qs_event_sink *sink = qs_event_sink_new();
    qs_seq_request r[3];
    for (int i = 0; i < 3; i++) {
        r[i] = greedy_request(prompt, 12, 20, i);
        r[i].ignore_eos = true;
    }
    assert_int_equal(qs_engine_submit(e, r, 3, sink, &err), QS_SUBMIT_OK);
    collected c[3];
    memset(c, 0, sizeof c);
    int finished = 0;
    for (int tries = 0; tries < 500 && finished < 3; tries++) {
        qs_engine_event *list = qs_event_sink_take(sink, 20);
        for (qs_engine_event *ev = list; ev; ev = ev->next) {
            if (ev->token >= 0)
                c[ev->choice].tokens[c[ev->choice].n++] = ev->token;
            finished += ev->finish != QS_FINISH_NONE;
        }
        qs_engine_event_free_list(list);
    }
    assert_int_equal(finished, 3);
    int32_t want[32];
    int n = reference(prompt, 12, 20, true, want);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(c[i].n, n);
        assert_memory_equal(c[i].tokens, want, (size_t)n * sizeof *want);
    }
    qs_engine_stats st;
    qs_engine_get_stats(e, &st);
    assert_int_equal(st.generation_tokens_total, 60);
    assert_int_equal(st.prompt_tokens_total, 36);
    assert_int_equal(st.finished[QS_FINISH_LENGTH], 3);
    assert_int_equal(st.ttft.count, 3);
    assert_int_equal(st.itl.count, 57);
    qs_event_sink_release(sink);
    qs_engine_free(e);
    fake_free(fm);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_single_sequence_matches_reference),
        cmocka_unit_test(test_batched_chunked_preempted_equals_alone),
        cmocka_unit_test(test_chunked_prefill_keeps_decoding),
        cmocka_unit_test(test_queue_bound_and_length_check),
        cmocka_unit_test(test_abort_frees_blocks_at_once),
        cmocka_unit_test(test_end_tokens),
        cmocka_unit_test(test_forward_error_finishes_batch),
        cmocka_unit_test(test_threaded_engine),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
