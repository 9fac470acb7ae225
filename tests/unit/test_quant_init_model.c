/* test_quant_init_model.c — `qserve init-model` checkpoints of every tiny shape load back: the
 * model config parses to the shape, every tensor has the expected name, dtype and shape, the
 * tokenizer loads with its special tokens, weights have the intended spread and the same seed
 * gives the same bytes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/init_model.h"
#include "io/safetensors.h"
#include "model/model_config.h"
#include "model/model_config_load.h"
#include "test_helpers.h"
#include "tokenizer/tokenizer.h"

static char dir[64];

static void clean_dir(void) { qs_test_remove_init_model(dir); }

static int setup(void **state)
{
    snprintf(dir, sizeof dir, "/tmp/qs_init_model_XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    clean_dir();
    rmdir(dir);
    return 0;
}

static void write_shape(const char *name, uint64_t seed)
{
    const qs_init_shape *s = qs_init_shape_find(name);
    assert_non_null(s);
    qs_err err;
    clean_dir();
    if (qs_init_write_config(dir, s, QS_DT_BF16, &err) || qs_init_write_tokenizer(dir, s, &err) ||
        qs_init_write_weights(dir, s, seed, QS_DT_BF16, 0, &err))
        fail_msg("%s: %s", name, err.msg);
}

static void tiny_shapes_load_back(void **state)
{
    const char *names[] = {"tiny-llama", "tiny-mistral", "tiny-qwen2", "tiny-qwen3", "tiny-qwen3-moe", "tiny-mixtral"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const qs_init_shape *s = qs_init_shape_find(names[i]);
        write_shape(names[i], 7);
        qs_err err;
        qs_model_config mc;
        if (qs_model_config_load(dir, &mc, &err))
            fail_msg("%s: config: %s", names[i], err.msg);
        assert_string_equal(mc.arch_name, s->arch);
        assert_int_equal(mc.vocab_size, 512);
        assert_int_equal(mc.hidden_size, 64);
        assert_int_equal(mc.num_layers, 2);
        assert_int_equal(mc.head_dim, s->head_dim);
        assert_int_equal(mc.num_experts, s->experts);
        assert_int_equal(mc.tie_word_embeddings, s->tie);
        assert_int_equal(mc.attention_bias, s->qkv_bias);
        assert_int_equal(mc.qk_norm, s->qk_norm);
        assert_null(mc.quantization_config_json);
        qs_model_config_free(&mc);

        qs_checkpoint *ck;
        if (qs_checkpoint_open(dir, false, &ck, &err))
            fail_msg("%s: checkpoint: %s", names[i], err.msg);
        qs_init_tensor *list;
        int n;
        assert_int_equal(qs_init_tensor_list(s, &list, &n, &err), 0);
        assert_int_equal((int)qs_checkpoint_count(ck), n);
        for (int t = 0; t < n; t++) {
            const qs_tensor *ten = qs_checkpoint_find(ck, list[t].name);
            if (!ten)
                fail_msg("%s: tensor %s missing", names[i], list[t].name);
            assert_int_equal(ten->dtype, QS_DT_BF16);
            assert_int_equal(ten->ndim, list[t].ndim);
            assert_int_equal(ten->shape[0], list[t].shape[0]);
        }
        /* spot checks of names the loaders look for */
        char name[128];
        snprintf(name, sizeof name, "%s", !strcmp(s->model_type, "mixtral")
                                             ? "model.layers.1.block_sparse_moe.experts.3.w2.weight"
                                         : s->experts ? "model.layers.1.mlp.experts.7.down_proj.weight"
                                                      : "model.layers.1.mlp.down_proj.weight");
        const qs_tensor *down = qs_checkpoint_find(ck, name);
        assert_non_null(down);
        assert_int_equal(down->shape[0], 64);
        assert_int_equal(down->shape[1], s->experts ? s->moe_inter : s->inter);
        assert_int_equal(qs_checkpoint_find(ck, "lm_head.weight") != NULL, !s->tie);
        /* weight spread: std 0.02, mean 0; norms are ones */
        const qs_tensor *emb = qs_checkpoint_find(ck, "model.embed_tokens.weight");
        double sum = 0, sq = 0;
        for (int64_t e = 0; e < emb->numel; e++) {
            double v = qs_tensor_get_f32(emb, e);
            sum += v;
            sq += v * v;
        }
        double mean = sum / emb->numel, sd = sqrt(sq / emb->numel - mean * mean);
        assert_true(fabs(mean) < 1e-3);
        assert_true(fabs(sd - 0.02) < 1e-3);
        assert_true(qs_tensor_get_f32(qs_checkpoint_find(ck, "model.norm.weight"), 5) == 1.0f);
        free(list);
        qs_checkpoint_close(ck);

        qs_tokenizer *tok;
        if (qs_tokenizer_load(dir, &tok, &err))
            fail_msg("%s: tokenizer: %s", names[i], err.msg);
        int bos, eos, eot;
        qs_init_special_ids(s, &bos, &eos, &eot);
        const char *eot_name = s->tokens == QS_TOKFAM_LLAMA3 ? "<|eot_id|>"
                               : s->tokens == QS_TOKFAM_QWEN ? "<|im_end|>" : "</s>";
        assert_int_equal(qs_tokenizer_token_to_id(tok, eot_name), eot);
        assert_true(eot < 512 && bos < 512);
        qs_tokenizer_free(tok);
    }
}

static void same_seed_same_weights(void **state)
{
    write_shape("tiny-qwen3", 42);
    qs_err err;
    qs_checkpoint *ck;
    assert_int_equal(qs_checkpoint_open(dir, false, &ck, &err), 0);
    const qs_tensor *t = qs_checkpoint_find(ck, "model.layers.0.self_attn.q_proj.weight");
    size_t nb = t->nbytes;
    void *a = malloc(nb);
    memcpy(a, t->data, nb);
    qs_checkpoint_close(ck);
    write_shape("tiny-qwen3", 42);
    assert_int_equal(qs_checkpoint_open(dir, false, &ck, &err), 0);
    t = qs_checkpoint_find(ck, "model.layers.0.self_attn.q_proj.weight");
    assert_memory_equal(a, t->data, nb);
    qs_checkpoint_close(ck);
    write_shape("tiny-qwen3", 43);
    assert_int_equal(qs_checkpoint_open(dir, false, &ck, &err), 0);
    t = qs_checkpoint_find(ck, "model.layers.0.self_attn.q_proj.weight");
    assert_true(memcmp(a, t->data, nb) != 0);
    qs_checkpoint_close(ck);
    free(a);
}

static void real_shapes_have_real_sizes(void **state)
{
    /* parameter counts of the published models (embeddings included) */
    struct { const char *name; double params_b; } want[] = {
        {"llama-3.1-8b", 8.03}, {"qwen3-8b", 8.19}, {"qwen3-30b-a3b", 30.53}, {"mixtral-8x7b", 46.70}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const qs_init_shape *s = qs_init_shape_find(want[i].name);
        assert_non_null(s);
        double params = (double)qs_init_weight_bytes(s, QS_DT_BF16) / 2 / 1e9;
        if (fabs(params - want[i].params_b) > 0.02 * want[i].params_b)
            fail_msg("%s: %.2fB parameters, expected about %.2fB", want[i].name, params, want[i].params_b);
    }
    assert_null(qs_init_shape_find("llama-9000"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(tiny_shapes_load_back),
        cmocka_unit_test(same_seed_same_weights),
        cmocka_unit_test(real_shapes_have_real_sizes),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
