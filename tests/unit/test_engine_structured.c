/* test_engine_structured.c — structured outputs inside the engine, with the deterministic fake
 * model (fake_model.h) and a synthetic 64-token vocabulary: constrained sequences (n = 3, seeded
 * temperature 1, and greedy) batched together with free ones all end with "stop" and their text
 * fully matches the regex (checked with PCRE2); the free sequences are untouched by the masks
 * (the same tokens as when they run alone); a grammar that completes with nothing left to add
 * ends the sequence without EOS; EOS is never sampled before the output is complete. With a
 * reasoning end token, the grammar is dormant (the output is the free one) until that token is
 * sampled and constrains what follows; a prompt whose last think tag closes the reasoning makes
 * it active from the first token. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "fake_model.h"
#include "structured/structured.h"

static const char *const PIECES[VOCAB] = {
    "", "a", "b", "c", "x", "y", "z", "ab", "bc", "ca", "yz", "xa", "cab", "d", "e", "f",
    "g", "h", "i", "j", "k", "l", "m", "n", "o", "p", "q", "r", "s", "t", "u", "v",
    "w", "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "aa", "bb", "cc", "zz", "ax",
    "by", "cz", "-", "_", " ", "!", "?", ".", ",", ";", ":", "'", "ba", "cb", "ac", "xyz",
};

/* The regex's grammar (the test fails where it does not compile). */
static qs_grammar *regex_grammar(const char *re)
{
    qs_err err;
    qs_grammar *g = qs_grammar_compile(QS_SO_REGEX, re, strlen(re), NULL, &err);
    assert_non_null(g);
    return g;
}

static qs_vocab_trie *make_trie(void)
{
    const uint8_t *bytes[VOCAB];
    int lens[VOCAB];
    for (int i = 0; i < VOCAB; i++) {
        bytes[i] = (const uint8_t *)PIECES[i];
        lens[i] = (int)strlen(PIECES[i]);
    }
    int32_t eos = EOS;
    qs_err err;
    qs_vocab_trie *t = qs_vocab_trie_new(VOCAB, bytes, lens, &eos, 1, &err);
    assert_non_null(t);
    return t;
}

typedef struct out {
    int32_t tokens[256];
    int n;
    qs_finish_reason finish;
} out;

static void run(qs_engine *e, qs_event_sink **sinks, int n_sinks, out *o, int per_sink)
{
    for (int step = 0; step < 400; step++) {
        qs_engine_step(e);
        for (int s = 0; s < n_sinks; s++) {
            qs_engine_event *list = qs_event_sink_take(sinks[s], 0);
            for (qs_engine_event *ev = list; ev; ev = ev->next) {
                out *x = &o[s * per_sink + ev->choice];
                if (ev->token >= 0 && x->n < 256)
                    x->tokens[x->n++] = ev->token;
                if (ev->finish != QS_FINISH_NONE)
                    x->finish = ev->finish;
            }
            qs_engine_event_free_list(list);
        }
    }
}

static qs_engine *engine(fake_model **fm, const qs_vocab_trie *t)
{
    qs_engine_backend be;
    *fm = fake_new(256, &be);
    static const int32_t eos[] = {EOS};
    qs_engine_options opt = {.max_num_seqs = 8, .max_num_batched_tokens = 256, .max_num_queued_reqs = 64,
                             .max_model_len = 512, .eos_ids = eos, .n_eos = 1, .vocab_trie = t};
    qs_engine *e;
    qs_err err;
    assert_int_equal(qs_engine_create(&opt, &be, &e, &err), 0);
    return e;
}

static qs_seq_request request(const int32_t *prompt, int n, double temperature, uint64_t seed, qs_grammar *g)
{
    qs_seq_request r = {0};
    r.prompt = prompt;
    r.n_prompt = n;
    qs_sampling_params_defaults(&r.sampling);
    r.sampling.temperature = temperature;
    r.sampling.has_seed = true;
    r.sampling.seed = seed;
    r.max_tokens = 60;
    r.grammar = g;
    return r;
}

static void text_of(const out *o, char *buf, size_t cap)
{
    buf[0] = 0;
    for (int i = 0; i < o->n; i++)
        if (o->tokens[i] != EOS)
            strncat(buf, PIECES[o->tokens[i]], cap - strlen(buf) - 1);
}

static void constrained_and_free_in_one_batch(void **state)
{
    (void)state;
    qs_vocab_trie *t = make_trie();
    qs_grammar *g = regex_grammar("[a-c]{2,6}(x|yz)?!");
    qs_err err;
    int ec;
    PCRE2_SIZE eo;
    pcre2_code *pc = pcre2_compile((PCRE2_SPTR) "^(?:[a-c]{2,6}(x|yz)?!)$", PCRE2_ZERO_TERMINATED, PCRE2_DOLLAR_ENDONLY,
                                   &ec, &eo, NULL);
    pcre2_match_data *md = pcre2_match_data_create(1, NULL);
    int32_t prompt[5] = {13, 14, 15, 16, 17};

    /* the free requests alone, for reference */
    fake_model *fm;
    qs_engine *e = engine(&fm, t);
    qs_event_sink *alone = qs_event_sink_new();
    qs_seq_request fr[2] = {request(prompt, 5, 1.0, 11, NULL), request(prompt, 5, 0.0, 0, NULL)};
    fr[1].choice = 1;
    assert_int_equal(qs_engine_submit(e, fr, 2, alone, &err), QS_SUBMIT_OK);
    out ref[2];
    memset(ref, 0, sizeof ref);
    run(e, &alone, 1, ref, 2);
    qs_event_sink_release(alone);
    qs_engine_free(e);
    fake_free(fm);

    for (int round = 0; round < 20; round++) {
        e = engine(&fm, t);
        qs_event_sink *sinks[3] = {qs_event_sink_new(), qs_event_sink_new(), qs_event_sink_new()};
        qs_seq_request cr[3];
        for (int k = 0; k < 3; k++) {
            cr[k] = request(prompt, 5, round == 0 && k == 2 ? 0.0 : 1.0, (uint64_t)(round * 3 + k), g);
            cr[k].choice = k;
        }
        qs_seq_request fr2[2] = {fr[0], fr[1]};
        assert_int_equal(qs_engine_submit(e, fr2, 2, sinks[0], &err), QS_SUBMIT_OK);
        assert_int_equal(qs_engine_submit(e, cr, 3, sinks[1], &err), QS_SUBMIT_OK);
        qs_seq_request one = request(prompt, 5, 1.0, 1000 + (uint64_t)round, g);
        assert_int_equal(qs_engine_submit(e, &one, 1, sinks[2], &err), QS_SUBMIT_OK);
        out o[9];
        memset(o, 0, sizeof o);
        run(e, sinks, 3, o, 3);
        /* free ones: unchanged by the constrained neighbours */
        for (int k = 0; k < 2; k++) {
            assert_int_equal(o[k].n, ref[k].n);
            assert_memory_equal(o[k].tokens, ref[k].tokens, sizeof(int32_t) * (size_t)ref[k].n);
        }
        /* constrained ones: complete, matching, ended by the grammar (nothing can follow '!') */
        for (int k = 3; k < 7; k++) {
            char text[512];
            text_of(&o[k], text, sizeof text);
            if (o[k].finish != QS_FINISH_STOP || pcre2_match(pc, (PCRE2_SPTR)text, strlen(text), 0, 0, md, NULL) < 0)
                fail_msg("round %d seq %d: finish %d, text \"%s\"", round, k, o[k].finish, text);
            assert_int_not_equal(o[k].tokens[o[k].n - 1], EOS); /* the grammar ended it, not EOS */
        }
        for (int s = 0; s < 3; s++)
            qs_event_sink_release(sinks[s]);
        qs_engine_free(e);
        fake_free(fm);
    }
    pcre2_match_data_free(md);
    pcre2_code_free(pc);
    qs_grammar_release(g);
    qs_vocab_trie_free(t);
}

/* Where the output may stop or go on, EOS is allowed only once it is complete. */
static void eos_only_when_complete(void **state)
{
    (void)state;
    qs_vocab_trie *t = make_trie();
    qs_err err;
    qs_grammar *g = qs_grammar_from_choices((const char *const[]){"ab", "abcab"}, 2, NULL, &err);
    assert_non_null(g);
    int32_t prompt[3] = {20, 21, 22};
    for (int round = 0; round < 30; round++) {
        fake_model *fm;
        qs_engine *e = engine(&fm, t);
        qs_event_sink *sink = qs_event_sink_new();
        qs_seq_request r = request(prompt, 3, 1.0, (uint64_t)round, g);
        assert_int_equal(qs_engine_submit(e, &r, 1, sink, &err), QS_SUBMIT_OK);
        out o[1];
        memset(o, 0, sizeof o);
        run(e, &sink, 1, o, 1);
        char text[64];
        text_of(&o[0], text, sizeof text);
        assert_int_equal(o[0].finish, QS_FINISH_STOP);
        if (strcmp(text, "ab") && strcmp(text, "abcab"))
            fail_msg("round %d: \"%s\"", round, text);
        if (!strcmp(text, "ab")) /* it stopped early: only EOS can have ended it */
            assert_int_equal(o[0].tokens[o[0].n - 1], EOS);
        qs_event_sink_release(sink);
        qs_engine_free(e);
        fake_free(fm);
    }
    qs_grammar_release(g);
    qs_vocab_trie_free(t);
}

/* The greedy output of prompt through a fresh engine: free when g is NULL, else under g, which
 * waits for end_id when the reasoning has not ended in the prompt (start_id / end_id < 0: none). */
static out greedy_run(const qs_vocab_trie *t, const int32_t *prompt, int n, qs_grammar *g, int32_t start_id,
                      int32_t end_id)
{
    fake_model *fm;
    qs_engine *e = engine(&fm, t);
    qs_event_sink *sink = qs_event_sink_new();
    qs_seq_request r = request(prompt, n, 0.0, 0, g);
    if (g) {
        r.grammar_after_reasoning = true;
        r.reasoning_start_id = start_id;
        r.reasoning_end_id = end_id;
    }
    qs_err err;
    assert_int_equal(qs_engine_submit(e, &r, 1, sink, &err), QS_SUBMIT_OK);
    out o;
    memset(&o, 0, sizeof o);
    run(e, &sink, 1, &o, 1);
    qs_event_sink_release(sink);
    qs_engine_free(e);
    fake_free(fm);
    return o;
}

static out free_greedy(const qs_vocab_trie *t, const int32_t *prompt, int n)
{
    return greedy_run(t, prompt, n, NULL, -1, -1);
}

static out constrained_greedy(const qs_vocab_trie *t, const int32_t *prompt, int n, qs_grammar *g, int32_t start_id,
                              int32_t end_id)
{
    return greedy_run(t, prompt, n, g, start_id, end_id);
}

static bool matches_digits(const out *o, int from)
{
    char text[512] = "";
    for (int i = from; i < o->n; i++)
        strncat(text, PIECES[o->tokens[i]], sizeof text - strlen(text) - 1);
    size_t len = strlen(text);
    if (len < 3 || len > 5)
        return false;
    for (size_t i = 0; i < len; i++)
        if (text[i] < '0' || text[i] > '9')
            return false;
    return true;
}

/* The grammar sleeps through the reasoning: the output is the free one, tokens the grammar
 * forbids included, up to and with the end token; what follows is masked. */
static void grammar_dormant_until_reasoning_ends(void **state)
{
    (void)state;
    qs_vocab_trie *t = make_trie();
    qs_grammar *g = regex_grammar("[0-9]{3,5}");
    int32_t prompt[4] = {23, 24, 25, 26};
    out ref = free_greedy(t, prompt, 4);
    /* the end token: the free output's fourth token (not seen before it, not EOS, not a digit) */
    assert_true(ref.n > 4);
    int32_t end_id = ref.tokens[3];
    for (int i = 0; i < 3; i++)
        assert_int_not_equal(ref.tokens[i], end_id);
    assert_int_not_equal(end_id, EOS);
    bool forbidden_before = false; /* the grammar would have refused some of the reasoning */
    for (int i = 0; i <= 3; i++)
        forbidden_before |= !(PIECES[ref.tokens[i]][0] >= '0' && PIECES[ref.tokens[i]][0] <= '9');
    assert_true(forbidden_before);

    out o = constrained_greedy(t, prompt, 4, g, -1, end_id);
    assert_true(o.n > 4);
    assert_memory_equal(o.tokens, ref.tokens, 4 * sizeof(int32_t));
    if (o.finish != QS_FINISH_STOP || !matches_digits(&o, 4))
        fail_msg("finish %d after %d tokens: the answer does not match", o.finish, o.n);

    /* without the reasoning rule the same grammar constrains the first token already */
    out from_start = constrained_greedy(t, prompt, 4, g, -1, -1);
    if (from_start.finish != QS_FINISH_STOP || !matches_digits(&from_start, 0))
        fail_msg("a grammar without an end token must constrain from the start");
    qs_grammar_release(g);
    qs_vocab_trie_free(t);
}

/* vLLM's is_reasoning_end over the prompt: the last think tag decides. */
static void prompt_that_closed_reasoning_activates_grammar(void **state)
{
    (void)state;
    qs_vocab_trie *t = make_trie();
    qs_grammar *g = regex_grammar("[0-9]{3,5}");
    enum { START = 60, END = 61 };
    int32_t closed[5] = {23, START, 24, END, 25};
    out o = constrained_greedy(t, closed, 5, g, START, END);
    if (o.finish != QS_FINISH_STOP || !matches_digits(&o, 0))
        fail_msg("a prompt ending the reasoning: the grammar applies from the first token");

    int32_t reopened[5] = {23, END, 24, START, 25}; /* a think block is open: still reasoning */
    out ref = free_greedy(t, reopened, 5);
    o = constrained_greedy(t, reopened, 5, g, START, END);
    int n = ref.n < o.n ? ref.n : o.n;
    int first_end = -1;
    for (int i = 0; i < n && first_end < 0; i++)
        if (ref.tokens[i] == END)
            first_end = i;
    int same = first_end >= 0 ? first_end + 1 : n;
    assert_true(same > 0);
    assert_memory_equal(o.tokens, ref.tokens, (size_t)same * sizeof(int32_t));
    assert_false(matches_digits(&o, 0));
    qs_grammar_release(g);
    qs_vocab_trie_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(constrained_and_free_in_one_batch),
        cmocka_unit_test(eos_only_when_complete),
        cmocka_unit_test(grammar_dormant_until_reasoning_ends),
        cmocka_unit_test(prompt_that_closed_reasoning_activates_grammar),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
