/* init_model_shapes.c — the model shapes `qserve init-model` knows (real ones copied from the
 * published config.json files, checkpoint-formats.md §7, and tiny ones with hidden 64, 2 layers and
 * vocab 512 per architecture) and the config.json written for each, as transformers saves it. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/init_model.h"
#include "util/fileio.h"

static const qs_init_shape SHAPES[] = {
    /* name, arch, model_type, tokens, vocab, hidden, inter, layers, heads, kv, head_dim, max_pos, theta, eps,
       llama3_rope, tie, qkv_bias, qk_norm, experts, top_k, moe_inter */
    {"llama-3.1-8b", "LlamaForCausalLM", "llama", QS_TOKFAM_LLAMA3, 128256, 4096, 14336, 32, 32, 8, 128, 131072,
     500000.0, 1e-5, true, false, false, false, 0, 0, 0},
    {"qwen3-8b", "Qwen3ForCausalLM", "qwen3", QS_TOKFAM_QWEN, 151936, 4096, 12288, 36, 32, 8, 128, 40960, 1000000.0,
     1e-6, false, false, false, true, 0, 0, 0},
    {"qwen3-30b-a3b", "Qwen3MoeForCausalLM", "qwen3_moe", QS_TOKFAM_QWEN, 151936, 2048, 6144, 48, 32, 4, 128, 40960,
     1000000.0, 1e-6, false, false, false, true, 128, 8, 768},
    {"mixtral-8x7b", "MixtralForCausalLM", "mixtral", QS_TOKFAM_MISTRAL, 32000, 4096, 14336, 32, 32, 8, 128, 32768,
     1000000.0, 1e-5, false, false, false, false, 8, 2, 14336},
    /* big enough that a CPU prefill dominates a request, small enough to run one in seconds
     * (tools/bench_prefix.c) */
    {"small-llama", "LlamaForCausalLM", "llama", QS_TOKFAM_LLAMA3, 512, 256, 768, 4, 4, 2, 64, 4096, 500000.0, 1e-5,
     true, false, false, false, 0, 0, 0},
    /* Qwen3's full vocabulary on a small body: the vocabulary-sized work of a step (LM head,
     * sampling, structured-output masks) at CPU speed (tools/bench_structured.c) */
    {"small-qwen3", "Qwen3ForCausalLM", "qwen3", QS_TOKFAM_QWEN, 151936, 256, 768, 4, 4, 2, 64, 4096, 1000000.0,
     1e-6, false, true, false, true, 0, 0, 0},
    {"tiny-llama", "LlamaForCausalLM", "llama", QS_TOKFAM_LLAMA3, 512, 64, 128, 2, 4, 2, 16, 2048, 500000.0, 1e-5,
     true, false, false, false, 0, 0, 0},
    /* an odd vocabulary: the vocab-parallel embedding and lm_head pad it over tensor-parallel ranks (test_tp.sh) */
    {"tiny-llama-odd-vocab", "LlamaForCausalLM", "llama", QS_TOKFAM_LLAMA3, 501, 64, 128, 2, 4, 2, 16, 2048, 500000.0,
     1e-5, true, false, false, false, 0, 0, 0},
    /* every projection splits into whole 128x128 FP8 blocks over 2 tensor-parallel ranks (tests/cli/test_tp.sh) */
    {"tiny-llama-tp-blocks", "LlamaForCausalLM", "llama", QS_TOKFAM_LLAMA3, 512, 256, 512, 2, 4, 4, 64, 2048, 500000.0,
     1e-5, true, false, false, false, 0, 0, 0},
    {"tiny-mistral", "MistralForCausalLM", "mistral", QS_TOKFAM_MISTRAL, 512, 64, 128, 2, 4, 2, 16, 2048, 1000000.0,
     1e-5, false, false, false, false, 0, 0, 0},
    {"tiny-qwen2", "Qwen2ForCausalLM", "qwen2", QS_TOKFAM_QWEN, 512, 64, 128, 2, 4, 2, 16, 2048, 1000000.0, 1e-6,
     false, true, true, false, 0, 0, 0},
    {"tiny-qwen3", "Qwen3ForCausalLM", "qwen3", QS_TOKFAM_QWEN, 512, 64, 128, 2, 4, 2, 32, 2048, 1000000.0, 1e-6,
     false, true, false, true, 0, 0, 0},
    {"tiny-qwen3-moe", "Qwen3MoeForCausalLM", "qwen3_moe", QS_TOKFAM_QWEN, 512, 64, 128, 2, 4, 2, 16, 2048,
     1000000.0, 1e-6, false, false, false, true, 8, 2, 32},
    {"tiny-mixtral", "MixtralForCausalLM", "mixtral", QS_TOKFAM_MISTRAL, 512, 64, 128, 2, 4, 2, 16, 2048, 1000000.0,
     1e-5, false, false, false, false, 4, 2, 128},
    /* Llama 4: inter = intermediate_size (experts, shared expert), inter_mlp = dense layers' width */
    {"llama-4-scout", "Llama4ForConditionalGeneration", "llama4", QS_TOKFAM_LLAMA4, 202048, 5120, 8192, 48, 40, 8,
     128, 10485760, 500000.0, 1e-5, true, false, false, false, 16, 1, 8192},
    {"tiny-llama4-scout", "Llama4ForConditionalGeneration", "llama4", QS_TOKFAM_LLAMA4, 512, 64, 64, 4, 4, 2, 16, 2048,
     500000.0, 1e-5, true, false, false, false, 4, 1, 64},
    {"tiny-llama4-maverick", "Llama4ForConditionalGeneration", "llama4", QS_TOKFAM_LLAMA4, 512, 64, 64, 4, 4, 2, 16,
     2048, 500000.0, 1e-5, false, false, false, false, 8, 1, 64},
};
#define N_SHAPES (sizeof SHAPES / sizeof SHAPES[0])

static const qs_init_llama4 LLAMA4[] = {
    /* name, intermediate_size_mlp, interleave_moe_layer_step, attention_chunk_size, floor_scale, use_qk_norm */
    {"llama-4-scout", 16384, 1, 8192, 8192.0, true},
    {"tiny-llama4-scout", 128, 1, 16, 4.0, true},
    {"tiny-llama4-maverick", 128, 2, 16, 4.0, false},
};

const qs_init_llama4 *qs_init_shape_llama4(const qs_init_shape *s)
{
    for (size_t i = 0; s && i < sizeof LLAMA4 / sizeof LLAMA4[0]; i++)
        if (!strcmp(LLAMA4[i].name, s->name))
            return &LLAMA4[i];
    return NULL;
}

const qs_init_shape *qs_init_shape_find(const char *name)
{
    for (size_t i = 0; i < N_SHAPES; i++)
        if (!strcmp(SHAPES[i].name, name))
            return &SHAPES[i];
    return NULL;
}

const char *qs_init_shape_names(void)
{
    static char buf[512];
    if (!buf[0])
        for (size_t i = 0; i < N_SHAPES; i++) {
            if (i)
                strcat(buf, ", ");
            strcat(buf, SHAPES[i].name);
        }
    return buf;
}

/* Llama 4: the top level of Llama4ForConditionalGeneration with the text model in text_config
 * (vision_config is left out: qserve serves the text model and reads none of it). */
static cJSON *llama4_config(const qs_init_shape *s, const qs_init_llama4 *l4, qs_dtype dtype)
{
    cJSON *c = cJSON_CreateObject();
    cJSON_AddItemToArray(cJSON_AddArrayToObject(c, "architectures"), cJSON_CreateString(s->arch));
    cJSON_AddStringToObject(c, "model_type", "llama4");
    cJSON_AddNumberToObject(c, "image_token_index", 200092);
    cJSON_AddBoolToObject(c, "tie_word_embeddings", false);
    cJSON_AddStringToObject(c, "torch_dtype", dtype == QS_DT_F32 ? "float32" : "bfloat16");
    cJSON_AddStringToObject(c, "transformers_version", "4.51.0");
    cJSON *t = cJSON_AddObjectToObject(c, "text_config");
    int bos, eos, eot;
    qs_init_special_ids(s, &bos, &eos, &eot);
    cJSON_AddStringToObject(t, "model_type", "llama4_text");
    cJSON_AddNumberToObject(t, "bos_token_id", bos);
    cJSON *e = cJSON_AddArrayToObject(t, "eos_token_id");
    cJSON_AddItemToArray(e, cJSON_CreateNumber(eos));
    cJSON_AddItemToArray(e, cJSON_CreateNumber(eot));
    cJSON_AddStringToObject(t, "hidden_act", "silu");
    cJSON_AddNumberToObject(t, "vocab_size", s->vocab);
    cJSON_AddNumberToObject(t, "hidden_size", s->hidden);
    cJSON_AddNumberToObject(t, "intermediate_size", s->inter);
    cJSON_AddNumberToObject(t, "intermediate_size_mlp", l4->inter_mlp);
    cJSON_AddNumberToObject(t, "num_hidden_layers", s->layers);
    cJSON_AddNumberToObject(t, "num_attention_heads", s->heads);
    cJSON_AddNumberToObject(t, "num_key_value_heads", s->kv_heads);
    cJSON_AddNumberToObject(t, "head_dim", s->head_dim);
    cJSON_AddNumberToObject(t, "max_position_embeddings", s->max_pos);
    cJSON_AddNumberToObject(t, "rms_norm_eps", s->rms_eps);
    cJSON_AddNumberToObject(t, "rope_theta", s->rope_theta);
    if (s->llama3_rope) { /* Scout's Llama-4 scaling: llama3 type, low = high = 1 */
        cJSON *rs = cJSON_AddObjectToObject(t, "rope_scaling");
        cJSON_AddNumberToObject(rs, "factor", 16.0);
        cJSON_AddNumberToObject(rs, "high_freq_factor", 1.0);
        cJSON_AddNumberToObject(rs, "low_freq_factor", 1.0);
        cJSON_AddNumberToObject(rs, "original_max_position_embeddings", 8192);
        cJSON_AddStringToObject(rs, "rope_type", "llama3");
    } else {
        cJSON_AddNullToObject(t, "rope_scaling");
    }
    cJSON_AddNumberToObject(t, "attention_chunk_size", l4->chunk);
    cJSON *nr = cJSON_AddArrayToObject(t, "no_rope_layers");
    for (int i = 0; i < s->layers; i++)
        cJSON_AddItemToArray(nr, cJSON_CreateNumber((i + 1) % 4 != 0));
    cJSON_AddBoolToObject(t, "use_qk_norm", l4->l2_qk_norm);
    cJSON_AddBoolToObject(t, "attn_temperature_tuning", true);
    cJSON_AddNumberToObject(t, "floor_scale", l4->floor_scale);
    cJSON_AddNumberToObject(t, "attn_scale", 0.1);
    cJSON_AddNumberToObject(t, "num_local_experts", s->experts);
    cJSON_AddNumberToObject(t, "num_experts_per_tok", s->top_k);
    cJSON_AddNumberToObject(t, "interleave_moe_layer_step", l4->moe_step);
    cJSON_AddBoolToObject(t, "attention_bias", false);
    cJSON_AddBoolToObject(t, "tie_word_embeddings", false);
    cJSON_AddNumberToObject(t, "router_aux_loss_coef", 0.001);
    cJSON_AddNumberToObject(t, "router_jitter_noise", 0.0);
    cJSON_AddBoolToObject(t, "output_router_logits", false);
    return c;
}

int qs_init_write_config(const char *dir, const qs_init_shape *s, qs_dtype dtype, qs_err *err)
{
    const qs_init_llama4 *l4 = qs_init_shape_llama4(s);
    if (l4) {
        cJSON *lc = llama4_config(s, l4, dtype);
        char *text = cJSON_Print(lc);
        cJSON_Delete(lc);
        if (!text)
            return qs_errf(err, "config.json: out of memory");
        char path[2048];
        int rc = qs_write_file(qs_path_join(path, sizeof path, dir, "config.json"), text, strlen(text), err);
        free(text);
        return rc;
    }
    cJSON *c = cJSON_CreateObject();
    cJSON *archs = cJSON_AddArrayToObject(c, "architectures");
    cJSON_AddItemToArray(archs, cJSON_CreateString(s->arch));
    cJSON_AddStringToObject(c, "model_type", s->model_type);
    int bos, eos, eot;
    qs_init_special_ids(s, &bos, &eos, &eot);
    cJSON_AddNumberToObject(c, "bos_token_id", bos);
    cJSON_AddNumberToObject(c, "eos_token_id", eos);
    cJSON_AddStringToObject(c, "hidden_act", "silu");
    cJSON_AddNumberToObject(c, "hidden_size", s->hidden);
    cJSON_AddNumberToObject(c, "intermediate_size", s->inter);
    cJSON_AddNumberToObject(c, "initializer_range", 0.02);
    cJSON_AddNumberToObject(c, "max_position_embeddings", s->max_pos);
    cJSON_AddNumberToObject(c, "num_attention_heads", s->heads);
    cJSON_AddNumberToObject(c, "num_hidden_layers", s->layers);
    cJSON_AddNumberToObject(c, "num_key_value_heads", s->kv_heads);
    cJSON_AddNumberToObject(c, "head_dim", s->head_dim);
    cJSON_AddNumberToObject(c, "rms_norm_eps", s->rms_eps);
    cJSON_AddNumberToObject(c, "rope_theta", s->rope_theta);
    if (s->llama3_rope) {
        cJSON *rs = cJSON_AddObjectToObject(c, "rope_scaling");
        cJSON_AddStringToObject(rs, "rope_type", "llama3");
        cJSON_AddNumberToObject(rs, "factor", 8.0);
        cJSON_AddNumberToObject(rs, "low_freq_factor", 1.0);
        cJSON_AddNumberToObject(rs, "high_freq_factor", 4.0);
        cJSON_AddNumberToObject(rs, "original_max_position_embeddings", 8192);
    } else {
        cJSON_AddNullToObject(c, "rope_scaling");
    }
    cJSON_AddBoolToObject(c, "tie_word_embeddings", s->tie);
    cJSON_AddStringToObject(c, "torch_dtype", dtype == QS_DT_F32 ? "float32" : "bfloat16");
    cJSON_AddStringToObject(c, "transformers_version", "4.51.0");
    cJSON_AddBoolToObject(c, "use_cache", true);
    cJSON_AddNumberToObject(c, "vocab_size", s->vocab);
    if (!strcmp(s->model_type, "llama")) {
        cJSON_AddBoolToObject(c, "attention_bias", false);
        cJSON_AddBoolToObject(c, "mlp_bias", false);
    } else if (!strcmp(s->model_type, "mistral") || !strcmp(s->model_type, "mixtral")) {
        cJSON_AddNullToObject(c, "sliding_window");
    } else if (!strcmp(s->model_type, "qwen2")) {
        cJSON_AddBoolToObject(c, "use_sliding_window", false);
        cJSON_AddNullToObject(c, "sliding_window");
        cJSON_AddNumberToObject(c, "max_window_layers", s->layers);
    } else {
        cJSON_AddBoolToObject(c, "attention_bias", false);
        cJSON_AddBoolToObject(c, "use_sliding_window", false);
        cJSON_AddNullToObject(c, "sliding_window");
    }
    if (!strcmp(s->model_type, "qwen3_moe")) {
        cJSON_AddNumberToObject(c, "num_experts", s->experts);
        cJSON_AddNumberToObject(c, "num_experts_per_tok", s->top_k);
        cJSON_AddNumberToObject(c, "moe_intermediate_size", s->moe_inter);
        cJSON_AddBoolToObject(c, "norm_topk_prob", true);
        cJSON_AddNumberToObject(c, "decoder_sparse_step", 1);
        cJSON_AddItemToObject(c, "mlp_only_layers", cJSON_CreateArray());
        cJSON_AddBoolToObject(c, "output_router_logits", false);
        cJSON_AddNumberToObject(c, "router_aux_loss_coef", 0.001);
    } else if (!strcmp(s->model_type, "mixtral")) {
        cJSON_AddNumberToObject(c, "num_local_experts", s->experts);
        cJSON_AddNumberToObject(c, "num_experts_per_tok", s->top_k);
        cJSON_AddNumberToObject(c, "router_jitter_noise", 0.0);
        cJSON_AddBoolToObject(c, "output_router_logits", false);
        cJSON_AddNumberToObject(c, "router_aux_loss_coef", 0.02);
    }
    char *text = cJSON_Print(c);
    cJSON_Delete(c);
    if (!text)
        return qs_errf(err, "config.json: out of memory");
    char path[2048];
    int rc = qs_write_file(qs_path_join(path, sizeof path, dir, "config.json"), text, strlen(text), err);
    free(text);
    return rc;
}
