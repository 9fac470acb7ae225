/* test_prefix_cache.c — automatic prefix caching (src/engine/prefix_cache.c and the scheduler's
 * use of it). First the block pool alone: reference counts, LRU eviction order, hash chaining
 * and salts, the collision guard and the rollback of a failed step. Then the engine with the
 * fake model of fake_model.h, whose output is a hash of the whole context read back through the
 * block table and which wipes every block it hands out, so a hit on the wrong block, a block
 * reused before its KV was written or an evicted block read as cached changes the output or
 * trips its asserts: hits skip exactly the cached full blocks (never the last token), generated
 * tokens are cached too (multi-turn), salts isolate, n > 1 choices share their prompt's blocks,
 * a failed step forgets what it registered, and a randomized trace over a tiny pool (eviction
 * and preemption) gives every request the reference output with the cache on. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine/engine.h"
#include "model/kv_cache.h"
#include "engine/prefix_cache.h"

#include "fake_model.h"

/* ---------------- the block pool alone ---------------- */

typedef struct {
    int n;
    bool used[64];
    int n_used;
} pool_backend;

static int32_t pb_alloc(void *c)
{
    pool_backend *p = c;
    for (int b = 0; b < p->n; b++)
        if (!p->used[b]) {
            p->used[b] = true;
            p->n_used++;
            return b;
        }
    return -1;
}

static void pb_release(void *c, int32_t b)
{
    pool_backend *p = c;
    assert_true(p->used[b]);
    p->used[b] = false;
    p->n_used--;
}

static qs_prefix_cache *pool_new(pool_backend *p, int n, bool enabled)
{
    memset(p, 0, sizeof *p);
    p->n = n;
    qs_engine_backend be = {.ctx = p, .num_blocks = n, .alloc_block = pb_alloc, .release_block = pb_release};
    qs_prefix_cache *pc = qs_prefix_cache_new(&be, enabled, 42);
    assert_non_null(pc);
    return pc;
}

static void fill_tokens(int32_t *t, int n, int base)
{
    for (int i = 0; i < n; i++)
        t[i] = base + i;
}

/* Caches blocks b[0..n) as one chain of tokens (block i holds tokens[16i..]); returns hashes. */
static void cache_chain(qs_prefix_cache *pc, uint64_t root, const int32_t *b, const int32_t *tokens, int n,
                        uint64_t *hashes)
{
    uint64_t parent = root;
    for (int i = 0; i < n; i++) {
        hashes[i] = qs_prefix_cache_block_hash(parent, tokens + i * QS_KV_BLOCK_SIZE);
        qs_prefix_cache_insert(pc, b[i], hashes[i], parent, tokens + i * QS_KV_BLOCK_SIZE);
        parent = hashes[i];
    }
    qs_prefix_cache_commit(pc);
}

static void test_pool_refcount_lru_eviction(void **state)
{
    (void)state;
    pool_backend p;
    qs_prefix_cache *pc = pool_new(&p, 4, true);
    uint64_t root = qs_prefix_cache_root(pc, NULL);
    int32_t tokens[4 * QS_KV_BLOCK_SIZE], b[4], hit[4];
    uint64_t h[4];
    fill_tokens(tokens, 4 * QS_KV_BLOCK_SIZE, 7);
    for (int i = 0; i < 4; i++)
        b[i] = qs_prefix_cache_alloc(pc);
    assert_int_equal(qs_prefix_cache_alloc(pc), -1);
    cache_chain(pc, root, b, tokens, 4, h);
    assert_int_equal(qs_prefix_cache_num_cached(pc), 4);
    assert_int_equal(qs_prefix_cache_lookup(pc, root, h, tokens, 4, hit), 4);
    assert_memory_equal(hit, b, sizeof b);
    /* a second holder of block 0, then every holder lets go, tail blocks first */
    qs_prefix_cache_ref(pc, b[0]);
    for (int i = 3; i >= 0; i--)
        qs_prefix_cache_unref(pc, b[i]);
    assert_int_equal(qs_prefix_cache_num_free(pc), 3); /* block 0 is still held */
    assert_false(qs_prefix_cache_is_evictable(pc, b[0]));
    assert_true(qs_prefix_cache_is_evictable(pc, b[3]));
    assert_int_equal(p.n_used, 4); /* cached free blocks stay out of the backend */
    /* an allocation evicts the least recently released block: the tail, b[3] */
    int32_t fresh = qs_prefix_cache_alloc(pc);
    assert_int_equal(fresh, b[3]);
    assert_int_equal(qs_prefix_cache_lookup(pc, root, h, tokens, 4, hit), 3);
    /* a hit takes the block off the LRU list: it is not evicted next */
    qs_prefix_cache_ref(pc, b[2]);
    assert_int_equal(qs_prefix_cache_alloc(pc), b[1]);
    assert_int_equal(qs_prefix_cache_lookup(pc, root, h, tokens, 4, hit), 1); /* the chain breaks at block 1 */
    qs_prefix_cache_unref(pc, b[0]);
    assert_int_equal(qs_prefix_cache_alloc(pc), b[0]);
    assert_int_equal(qs_prefix_cache_alloc(pc), -1); /* b[2] is held */
    assert_int_equal(qs_prefix_cache_lookup(pc, root, h, tokens, 4, hit), 0);
    qs_prefix_cache_free(pc);
}

static void test_pool_hash_chain_salt_and_collisions(void **state)
{
    (void)state;
    pool_backend p;
    qs_prefix_cache *pc = pool_new(&p, 8, true);
    uint64_t root = qs_prefix_cache_root(pc, NULL), salted = qs_prefix_cache_root(pc, "tenant-a");
    assert_true(root != salted);
    assert_true(salted != qs_prefix_cache_root(pc, "tenant-b"));
    assert_true(root == qs_prefix_cache_root(pc, "")); /* an empty salt is no salt */
    int32_t t[2 * QS_KV_BLOCK_SIZE], t2[2 * QS_KV_BLOCK_SIZE], b[2], hit[2];
    fill_tokens(t, 2 * QS_KV_BLOCK_SIZE, 3);
    memcpy(t2, t, sizeof t);
    t2[QS_KV_BLOCK_SIZE - 1] ^= 1; /* the first block differs in its last token */
    uint64_t h[2], h2[2];
    /* a block's hash depends on every earlier token through its parent */
    h2[0] = qs_prefix_cache_block_hash(root, t2);
    h2[1] = qs_prefix_cache_block_hash(h2[0], t2 + QS_KV_BLOCK_SIZE);
    b[0] = qs_prefix_cache_alloc(pc);
    b[1] = qs_prefix_cache_alloc(pc);
    cache_chain(pc, root, b, t, 2, h);
    assert_true(h[1] != h2[1]);
    assert_int_equal(qs_prefix_cache_lookup(pc, root, h, t, 2, hit), 2);
    assert_int_equal(qs_prefix_cache_lookup(pc, salted, h, t, 2, hit), 0); /* another salt: another chain */
    /* same hashes, other token ids (a forged or colliding hash): a miss, never foreign KV */
    assert_int_equal(qs_prefix_cache_lookup(pc, root, h, t2, 2, hit), 0);
    int32_t t3[2 * QS_KV_BLOCK_SIZE];
    memcpy(t3, t, sizeof t);
    t3[QS_KV_BLOCK_SIZE + 2] ^= 1;
    assert_int_equal(qs_prefix_cache_lookup(pc, root, h, t3, 2, hit), 1);
    /* a second block with an already cached hash stays uncached and goes back when released */
    int32_t dup = qs_prefix_cache_alloc(pc);
    qs_prefix_cache_insert(pc, dup, h[0], root, t);
    assert_int_equal(qs_prefix_cache_num_cached(pc), 2);
    qs_prefix_cache_unref(pc, dup);
    assert_false(p.used[dup]);
    qs_prefix_cache_free(pc);
    assert_int_equal(p.n_used, 2); /* still held blocks are the caller's */
}

static void test_pool_rollback_and_disabled(void **state)
{
    (void)state;
    pool_backend p;
    qs_prefix_cache *pc = pool_new(&p, 4, true);
    uint64_t root = qs_prefix_cache_root(pc, NULL);
    int32_t t[QS_KV_BLOCK_SIZE], hit[1];
    fill_tokens(t, QS_KV_BLOCK_SIZE, 1);
    uint64_t h = qs_prefix_cache_block_hash(root, t);
    int32_t b = qs_prefix_cache_alloc(pc);
    qs_prefix_cache_insert(pc, b, h, root, t);
    assert_int_equal(qs_prefix_cache_lookup(pc, root, &h, t, 1, hit), 1); /* pending blocks hit in their step */
    qs_prefix_cache_unref(pc, b);
    assert_int_equal(p.n_used, 1);
    qs_prefix_cache_rollback(pc); /* the step failed: its KV was never written */
    assert_int_equal(qs_prefix_cache_lookup(pc, root, &h, t, 1, hit), 0);
    assert_int_equal(qs_prefix_cache_num_cached(pc), 0);
    assert_int_equal(p.n_used, 0);
    assert_int_equal(qs_prefix_cache_num_free(pc), 4);
    qs_prefix_cache_free(pc);

    pc = pool_new(&p, 4, false);
    b = qs_prefix_cache_alloc(pc);
    qs_prefix_cache_insert(pc, b, h, root, t);
    qs_prefix_cache_commit(pc);
    assert_int_equal(qs_prefix_cache_lookup(pc, root, &h, t, 1, hit), 0);
    qs_prefix_cache_unref(pc, b);
    assert_int_equal(p.n_used, 0);
    qs_prefix_cache_free(pc);
}

/* ---------------- the engine with the fake model ---------------- */

static void run_one(qs_engine *e, const int32_t *prompt, int n_prompt, int max_tokens, const char *salt,
                    collected *out)
{
    qs_seq_request r = greedy_request(prompt, n_prompt, max_tokens, 0);
    r.ignore_eos = true;
    r.cache_salt = salt;
    qs_event_sink *sink = qs_event_sink_new();
    qs_err err;
    assert_int_equal(qs_engine_submit(e, &r, 1, sink, &err), QS_SUBMIT_OK);
    run_until_idle(e, 2000);
    memset(out, 0, sizeof *out);
    assert_int_equal(collect(sink, out), 1);
    int32_t want[512];
    int n = reference(prompt, n_prompt, max_tokens, true, want);
    assert_int_equal(out->n, n);
    assert_memory_equal(out->tokens, want, (size_t)n * sizeof *want);
    qs_event_sink_release(sink);
}

static void test_hits_skip_cached_full_blocks(void **state)
{
    (void)state;
    fake_model *fm;
    qs_engine *e = engine_new_pc(&fm, 64, 4, 256, 16, 512, true);
    int32_t prompt[160];
    make_prompt(prompt, 160, 9);
    collected c;
    run_one(e, prompt, 100, 5, NULL, &c);
    assert_int_equal(c.cached_tokens, 0);
    /* the same 100 tokens and 20 more: 6 full blocks (96 tokens) come from the cache */
    int steps = fm->n_steps;
    run_one(e, prompt, 120, 5, NULL, &c);
    assert_int_equal(c.cached_tokens, 96);
    assert_int_equal(fm->step_tokens[steps], 120 - 96);
    /* 32 tokens, both blocks cached: the last token must still run, so only one block hits */
    run_one(e, prompt, 32, 3, NULL, &c);
    assert_int_equal(c.cached_tokens, 16);
    /* multi-turn: the prompt + the generated tokens of turn one, resent with a new turn; blocks
     * filled by decoding were cached too */
    int32_t turn[200];
    memcpy(turn, prompt, 100 * sizeof *turn);
    int32_t out1[64];
    int n1 = reference(prompt, 100, 40, true, out1);
    run_one(e, prompt, 100, 40, NULL, &c);
    memcpy(turn + 100, out1, (size_t)n1 * sizeof *turn);
    make_prompt(turn + 100 + n1, 30, 77);
    run_one(e, turn, 100 + n1 + 30, 4, NULL, &c);
    assert_int_equal(c.cached_tokens, (100 + n1 - 1) / QS_KV_BLOCK_SIZE * QS_KV_BLOCK_SIZE);
    qs_engine_stats st;
    qs_engine_get_stats(e, &st);
    assert_int_equal(st.prefix_cache_queries_total, 100 + 120 + 32 + 100 + 100 + n1 + 30);
    assert_int_equal(st.prefix_cache_hits_total, 96 + 16 + 96 + c.cached_tokens);
    qs_engine_load load;
    qs_engine_get_load(e, &load);
    assert_true(load.prefix_caching);
    assert_int_equal(load.num_free_blocks, 64);     /* cached blocks nobody holds count as free */
    assert_int_equal(fm->n_used, load.num_cached_blocks); /* and stay out of the backend's free list */
    qs_engine_free(e);
    assert_int_equal(fm->n_used, 0); /* freeing the engine hands them back */
    fake_free(fm);
}

static void test_cache_salt_isolates(void **state)
{
    (void)state;
    fake_model *fm;
    qs_engine *e = engine_new_pc(&fm, 64, 4, 256, 16, 512, true);
    int32_t prompt[80];
    make_prompt(prompt, 80, 4);
    collected c;
    run_one(e, prompt, 80, 3, "tenant-a", &c);
    assert_int_equal(c.cached_tokens, 0);
    run_one(e, prompt, 80, 3, "tenant-b", &c);
    assert_int_equal(c.cached_tokens, 0);
    run_one(e, prompt, 80, 3, NULL, &c);
    assert_int_equal(c.cached_tokens, 0);
    run_one(e, prompt, 80, 3, "tenant-a", &c);
    assert_int_equal(c.cached_tokens, 64);
    run_one(e, prompt, 80, 3, NULL, &c);
    assert_int_equal(c.cached_tokens, 64);
    qs_engine_free(e);
    fake_free(fm);
}

static void test_n_choices_share_prompt_blocks(void **state)
{
    (void)state;
    fake_model *fm;
    qs_engine *e = engine_new_pc(&fm, 64, 8, 512, 16, 512, true);
    int32_t prompt[70];
    make_prompt(prompt, 70, 12);
    enum { N = 4 };
    qs_seq_request r[N];
    for (int i = 0; i < N; i++) {
        r[i] = greedy_request(prompt, 70, 6, i);
        r[i].ignore_eos = true;
    }
    qs_event_sink *sink = qs_event_sink_new();
    qs_err err;
    assert_int_equal(qs_engine_submit(e, r, N, sink, &err), QS_SUBMIT_OK);
    assert_int_equal(qs_engine_step(e), 1);
    /* one prefill of 70 tokens; the other three compute only the 6 tokens after 4 shared blocks */
    assert_int_equal(fm->step_tokens[0], 70 + 3 * 6);
    run_until_idle(e, 200);
    collected c[N];
    memset(c, 0, sizeof c);
    assert_int_equal(collect(sink, c), N);
    int32_t want[16];
    int n = reference(prompt, 70, 6, true, want);
    for (int i = 0; i < N; i++) {
        assert_int_equal(c[i].n, n);
        assert_memory_equal(c[i].tokens, want, (size_t)n * sizeof *want);
        assert_int_equal(c[i].cached_tokens, i ? 64 : 0);
    }
    qs_event_sink_release(sink);
    qs_engine_free(e);
    fake_free(fm);
}

static void test_failed_step_forgets_its_blocks(void **state)
{
    (void)state;
    fake_model *fm;
    qs_engine *e = engine_new_pc(&fm, 64, 4, 256, 16, 512, true);
    int32_t prompt[64];
    make_prompt(prompt, 64, 21);
    qs_seq_request r = greedy_request(prompt, 64, 4, 0);
    qs_event_sink *sink = qs_event_sink_new();
    qs_err err;
    assert_int_equal(qs_engine_submit(e, &r, 1, sink, &err), QS_SUBMIT_OK);
    fm->fail_next = true;
    assert_int_equal(qs_engine_step(e), -1);
    collected c[1];
    memset(c, 0, sizeof c);
    assert_int_equal(collect(sink, c), 1);
    assert_int_equal(c[0].finish, QS_FINISH_ERROR);
    qs_event_sink_release(sink);
    qs_engine_load load;
    qs_engine_get_load(e, &load);
    assert_int_equal(load.num_cached_blocks, 0);
    assert_int_equal(fm->n_used, 0);
    /* the same prompt again: nothing cached, computed from scratch (a hit would read wiped slots) */
    collected c2;
    run_one(e, prompt, 64, 4, NULL, &c2);
    assert_int_equal(c2.cached_tokens, 0);
    qs_engine_free(e);
    fake_free(fm);
}

/* A randomized trace: prompts made of one of a few shared prefixes of random lengths (some
 * salted) plus a random tail, arriving in waves over a pool too small for everything at once,
 * so cached blocks are evicted and running sequences preempted. Every output must equal the
 * reference chain (and so the output without the cache). */
static void test_randomized_trace_under_pressure(void **state)
{
    (void)state;
    enum { N = 48, PREFIXES = 4 };
    uint32_t rng = 12345;
#define RAND() (rng = rng * 1664525u + 1013904223u, (int)(rng >> 8))
    static int32_t prefixes[PREFIXES][200];
    for (int p = 0; p < PREFIXES; p++)
        make_prompt(prefixes[p], 200, 100 + p);
    static int32_t prompts[N][300];
    int lens[N], max_tokens[N];
    const char *salts[N];
    for (int i = 0; i < N; i++) {
        int p = RAND() % PREFIXES;
        int shared = RAND() % 200, tail = 1 + RAND() % 60;
        memcpy(prompts[i], prefixes[p], (size_t)shared * sizeof(int32_t));
        for (int k = 0; k < tail; k++)
            prompts[i][shared + k] = 1 + RAND() % (VOCAB - 1);
        lens[i] = shared + tail;
        max_tokens[i] = 1 + RAND() % 40;
        salts[i] = RAND() % 5 == 0 ? "salted" : NULL;
    }
    for (int pass = 0; pass < 2; pass++) {
        bool caching = pass == 1;
        fake_model *fm;
        qs_engine *e = engine_new_pc(&fm, 40, 4, 48, 64, 320, caching);
        qs_event_sink *sinks[N];
        qs_err err;
        for (int i = 0; i < N; i++) {
            sinks[i] = qs_event_sink_new();
            qs_seq_request r = greedy_request(prompts[i], lens[i], max_tokens[i], 0);
            r.cache_salt = salts[i];
            assert_int_equal(qs_engine_submit(e, &r, 1, sinks[i], &err), QS_SUBMIT_OK);
            if (RAND() % 3 == 0)
                for (int k = RAND() % 6; k >= 0; k--)
                    qs_engine_step(e);
        }
        run_until_idle(e, 20000);
        int cached_total = 0;
        for (int i = 0; i < N; i++) {
            collected c[1];
            memset(c, 0, sizeof c);
            assert_int_equal(collect(sinks[i], c), 1);
            int32_t want[64];
            int n = reference(prompts[i], lens[i], max_tokens[i], false, want);
            assert_int_equal(c[0].n, n);
            assert_memory_equal(c[0].tokens, want, (size_t)n * sizeof *want);
            assert_true(c[0].cached_tokens % QS_KV_BLOCK_SIZE == 0 && c[0].cached_tokens < lens[i]);
            cached_total += c[0].cached_tokens;
            qs_event_sink_release(sinks[i]);
        }
        qs_engine_load load;
        qs_engine_get_load(e, &load);
        assert_true(load.num_preemptions > 0);
        assert_int_equal(load.num_free_blocks, 40);
        assert_true(fm->max_used <= 40);
        if (caching)
            assert_true(cached_total > 0);
        else
            assert_int_equal(cached_total, 0);
        qs_engine_free(e);
        assert_int_equal(fm->n_used, 0);
        fake_free(fm);
    }
#undef RAND
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pool_refcount_lru_eviction),
        cmocka_unit_test(test_pool_hash_chain_salt_and_collisions),
        cmocka_unit_test(test_pool_rollback_and_disabled),
        cmocka_unit_test(test_hits_skip_cached_full_blocks),
        cmocka_unit_test(test_cache_salt_isolates),
        cmocka_unit_test(test_n_choices_share_prompt_blocks),
        cmocka_unit_test(test_failed_step_forgets_its_blocks),
        cmocka_unit_test(test_randomized_trace_under_pressure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
