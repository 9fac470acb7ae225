/* test_kv_cache.c — the paged KV cache pool: sizes, block allocation until exhaustion, release
 * (double and foreign releases ignored), per-layer buffers of the documented layout size, bad
 * arguments refused with a message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "model/kv_cache.h"

static qs_model_config small_config(void)
{
    qs_model_config mc;
    memset(&mc, 0, sizeof(mc));
    mc.num_layers = 3;
    mc.num_kv_heads = 2;
    mc.head_dim = 8;
    return mc;
}

static void alloc_release_cycle(void **state)
{
    qs_model_config mc = small_config();
    qs_kv_cache *kv;
    qs_err err;
    assert_int_equal(qs_kv_cache_create(&mc, QS_PLATFORM_CPU, 4, &kv, &err), 0);
    assert_int_equal(qs_kv_cache_num_blocks(kv), 4);
    int32_t b[4];
    for (int i = 0; i < 4; i++) {
        b[i] = qs_kv_cache_alloc(kv);
        assert_true(b[i] >= 0 && b[i] < 4);
        for (int j = 0; j < i; j++)
            assert_int_not_equal(b[i], b[j]);
    }
    assert_int_equal(qs_kv_cache_num_free(kv), 0);
    assert_int_equal(qs_kv_cache_alloc(kv), -1);
    qs_kv_cache_release(kv, b[2]);
    qs_kv_cache_release(kv, b[2]); /* double release: ignored */
    qs_kv_cache_release(kv, 99);   /* not a block: ignored */
    qs_kv_cache_release(kv, -1);
    assert_int_equal(qs_kv_cache_num_free(kv), 1);
    assert_int_equal(qs_kv_cache_alloc(kv), b[2]);
    qs_kv_cache_free(kv);
}

static void layer_buffers_hold_the_layout(void **state)
{
    qs_model_config mc = small_config();
    qs_kv_cache *kv;
    qs_err err;
    assert_int_equal(qs_kv_cache_create(&mc, QS_PLATFORM_CPU, 5, &kv, &err), 0);
    for (int l = 0; l < 3; l++) {
        float *k = qs_kv_cache_k(kv, l), *v = qs_kv_cache_v(kv, l);
        assert_non_null(k);
        assert_non_null(v);
        assert_ptr_not_equal(k, v);
        /* [block][kv_head][slot][head_dim]: the last element is writable (ASan checks the size) */
        size_t n = (size_t)5 * 2 * QS_KV_BLOCK_SIZE * 8;
        k[n - 1] = 1.0f;
        v[n - 1] = 2.0f;
        assert_float_equal(k[0], 0.0f, 0); /* zeroed */
    }
    assert_null(qs_kv_cache_k(kv, 3));
    assert_null(qs_kv_cache_v(kv, -1));
    qs_kv_cache_free(kv);
}

static void sizing_and_bad_arguments(void **state)
{
    qs_model_config mc = small_config();
    /* one block: 2 (K and V) * 3 layers * 2 heads * 16 slots * 8 dims * 4 bytes = 6144 bytes */
    assert_int_equal(qs_kv_cache_blocks_for_bytes(&mc, QS_PLATFORM_CPU, 6144 * 10 + 100), 10);
    qs_kv_cache *kv;
    qs_err err;
    assert_int_equal(qs_kv_cache_create(&mc, QS_PLATFORM_CPU, 0, &kv, &err), -1);
    assert_non_null(strstr(err.msg, "num_blocks"));
    mc.num_kv_heads = 0;
    assert_int_equal(qs_kv_cache_create(&mc, QS_PLATFORM_CPU, 4, &kv, &err), -1);
    assert_non_null(strstr(err.msg, "kv heads"));
    assert_int_equal(qs_kv_cache_blocks_for_bytes(&mc, QS_PLATFORM_CPU, 1 << 20), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(alloc_release_cycle),
        cmocka_unit_test(layer_buffers_hold_the_layout),
        cmocka_unit_test(sizing_and_bad_arguments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
