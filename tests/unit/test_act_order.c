/* test_act_order.c — activation orders through the whole forward pass (model/forward.c,
 * core/act_order.h): a CPU linear kernel that asks for x in marlin's packed orders (FP8 order on
 * hidden-wide inputs, NVFP4 order on intermediate-wide ones) on steps of two or more tokens, and
 * puts x back in natural order before the reference kernel runs it. Where the forward pass hands it
 * ordered x, the RMSNorm, SwiGLU and attention ops wrote it so; any slip in which op writes which
 * order for which layer changes the logits. With the orders on, greedy logits must equal those with
 * QSERVE_ACT_ORDER=0 bit for bit, and the ordered entry must have run where expected. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/init_model.h"
#include "config/config.h"
#include "core/act_order.h"
#include "cpu/reference_kernels.h"
#include "model/kv_cache.h"
#include "model/model.h"
#include "registry/registry.h"
#include "test_helpers.h"

/* A Llama of hidden 128 and intermediate 256: whole 128-k stages, so both orders fit. */
static const qs_init_shape WIDE = {"test-llama-128", "LlamaForCausalLM", "llama", QS_TOKFAM_LLAMA3, 512, 128, 256, 2,
                                   4, 2, 32, 2048, 500000.0, 1e-5, true, false, false, false, 0, 0, 0};

static char dir[64];
static int g_ordered_calls;

typedef struct {
    void *ref;
    int64_t k;
} ordered_state;

static int ord_prepare(const qs_linear_desc *d, void **state, qs_err *err)
{
    ordered_state *s = calloc(1, sizeof *s);
    if (!s)
        return qs_errf(err, "out of memory");
    s->k = d->k;
    if (qs_kernel_reference_linear.prepare_linear(d, &s->ref, err)) {
        free(s);
        return -1;
    }
    *state = s;
    return 0;
}

static int ord_apply(const void *state, const void *x, void *y, int64_t m, void *stream, qs_err *err)
{
    const ordered_state *s = state;
    return qs_kernel_reference_linear.apply_linear(s->ref, x, y, m, stream, err);
}

static int ord_input_order(const void *state, int64_t m)
{
    const ordered_state *s = state;
    if (m < 2 || s->k % 128)
        return QS_ACT_NATURAL;
    return s->k == WIDE.hidden ? QS_ACT_MARLIN_FP8 : QS_ACT_MARLIN_FP4;
}

static int ord_apply_ordered(const void *state, const void *x, void *y, int64_t m, void *stream, qs_err *err)
{
    const ordered_state *s = state;
    qs_act_order order = (qs_act_order)ord_input_order(state, m);
    if (order == QS_ACT_NATURAL)
        return qs_errf(err, "ordered input at %lld rows, where the kernel asked for natural order", (long long)m);
    const float *xo = x;
    float *xn = malloc(sizeof(float) * (size_t)(m * s->k));
    for (int64_t r = 0; r < m; r++)
        for (int64_t i = 0; i < s->k; i++)
            xn[r * s->k + i] = xo[r * s->k + qs_act_position(order, i)];
    int rc = qs_kernel_reference_linear.apply_linear(s->ref, xn, y, m, stream, err);
    free(xn);
    g_ordered_calls++;
    return rc;
}

static void ord_release(void *state)
{
    ordered_state *s = state;
    qs_kernel_reference_linear.release(s->ref);
    free(s);
}

static int ord_can(const qs_linear_desc *d, char *why, size_t cap)
{
    return qs_kernel_reference_linear.can_implement_linear(d, why, cap);
}

static int ord_supported(const qs_device_caps *dev, char *why, size_t cap)
{
    return qs_kernel_reference_linear.is_supported(dev, why, cap);
}

static const qs_kernel ORDERED_REF = {
    .name = "reference", /* (the name the CPU priority list asks for) */
    .platform = QS_PLATFORM_CPU,
    .kind = QS_KIND_LINEAR,
    .schemes = 1u << QS_SCHEME_BF16,
    .is_supported = ord_supported,
    .can_implement_linear = ord_can,
    .prepare_linear = ord_prepare,
    .apply_linear = ord_apply,
    .release = ord_release,
    .input_order = ord_input_order,
    .apply_linear_ordered = ord_apply_ordered,
};

static int setup(void **state)
{
    snprintf(dir, sizeof dir, "/tmp/qs_act_order_XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    qs_err err;
    if (qs_init_write_config(dir, &WIDE, QS_DT_BF16, &err) || qs_init_write_tokenizer(dir, &WIDE, &err) ||
        qs_init_write_weights(dir, &WIDE, 11, QS_DT_BF16, 0, &err)) {
        printf("init-model: %s\n", err.msg);
        return -1;
    }
    static const qs_kernel *const table[] = {&ORDERED_REF};
    qs_registry_set_test_kernels(table, 1);
    return 0;
}

static int teardown(void **state)
{
    qs_registry_set_test_kernels(NULL, 0);
    qs_test_remove_init_model(dir);
    rmdir(dir);
    return 0;
}

#define PROMPT 6
#define DECODE 4

/* A prefill of PROMPT tokens, then DECODE greedy steps: logits [(1 + DECODE) * vocab]. */
static void run(bool orders, float *logits, int vocab)
{
    if (orders)
        unsetenv("QSERVE_ACT_ORDER");
    else
        setenv("QSERVE_ACT_ORDER", "0", 1);
    qs_config cfg;
    qs_config_defaults(&cfg);
    snprintf(cfg.model_dir, sizeof cfg.model_dir, "%s", dir);
    cfg.device = QS_DEVICE_CPU;
    qs_model *m;
    qs_err err;
    if (qs_model_load(&cfg, &m, &err))
        fail_msg("load: %s", err.msg);
    unsetenv("QSERVE_ACT_ORDER");
    const qs_model_config *mc = qs_model_get_config(m);
    assert_int_equal(mc->vocab_size, vocab);
    qs_kv_cache *kv;
    assert_int_equal(qs_kv_cache_create(mc, QS_PLATFORM_CPU, 1, &kv, &err), 0);
    int32_t table[1] = {qs_kv_cache_alloc(kv)};
    int32_t toks[PROMPT + DECODE] = {1, 17, 5, 300, 42, 7};
    qs_seq_step s = {.tokens = toks, .n_tokens = PROMPT, .block_table = table, .n_blocks = 1, .want_logits = true};
    if (qs_model_forward(m, kv, &s, 1, logits, &err))
        fail_msg("prefill: %s", err.msg);
    for (int step = 0; step < DECODE; step++) {
        toks[PROMPT + step] = qs_test_argmax(logits + (int64_t)step * vocab, vocab);
        qs_seq_step d = {.tokens = &toks[PROMPT + step], .n_tokens = 1, .start_pos = PROMPT + step,
                         .block_table = table, .n_blocks = 1, .want_logits = true};
        if (qs_model_forward(m, kv, &d, 1, logits + (int64_t)(step + 1) * vocab, &err))
            fail_msg("decode step %d: %s", step, err.msg);
    }
    qs_kv_cache_free(kv);
    qs_model_free(m);
}

static void ordered_forward_equals_natural(void **state)
{
    const int vocab = WIDE.vocab;
    size_t n = (size_t)(1 + DECODE) * (size_t)vocab;
    float *with = malloc(sizeof(float) * n), *without = malloc(sizeof(float) * n);
    g_ordered_calls = 0;
    run(true, with, vocab);
    /* the prefill step only (decode steps are one token: natural): layer 0's o_proj, gate_up and
     * down (its q/k/v input comes from a plain norm, natural) and layer 1's qkv, o_proj, gate_up and
     * down */
    assert_int_equal(g_ordered_calls, 7);
    g_ordered_calls = 0;
    run(false, without, vocab);
    assert_int_equal(g_ordered_calls, 0);
    for (int step = 0; step <= DECODE; step++)
        if (memcmp(with + (size_t)step * vocab, without + (size_t)step * vocab, sizeof(float) * (size_t)vocab))
            fail_msg("step %d: logits with activation orders differ from natural order (bitwise)", step);
    free(with);
    free(without);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ordered_forward_equals_natural),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
