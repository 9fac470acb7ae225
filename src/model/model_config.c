/* model_config.c — the names of the supported architectures and the questions asked of a read
 * config (model_config.h); model_config_load.c reads config.json and generation_config.json. */
#include "model/model_config.h"

#include <stdlib.h>

static const char *ARCH_NAMES[QS_ARCH_COUNT] = {
    [QS_ARCH_LLAMA] = "LlamaForCausalLM",       [QS_ARCH_MISTRAL] = "MistralForCausalLM",
    [QS_ARCH_QWEN2] = "Qwen2ForCausalLM",       [QS_ARCH_QWEN3] = "Qwen3ForCausalLM",
    [QS_ARCH_QWEN3_MOE] = "Qwen3MoeForCausalLM", [QS_ARCH_MIXTRAL] = "MixtralForCausalLM",
    [QS_ARCH_LLAMA4] = "Llama4ForConditionalGeneration", [QS_ARCH_LLAMA4_TEXT] = "Llama4ForCausalLM",
};

const char *qs_arch_name(qs_arch a) { return (unsigned)a < QS_ARCH_COUNT ? ARCH_NAMES[a] : "?"; }

const char *qs_supported_architectures(void)
{
    return "LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, Qwen3MoeForCausalLM, "
           "MixtralForCausalLM, Llama4ForConditionalGeneration (text), Llama4ForCausalLM";
}

void qs_model_config_free(qs_model_config *cfg)
{
    if (!cfg)
        return;
    free(cfg->quantization_config_json);
    cfg->quantization_config_json = NULL;
}

bool qs_model_layer_is_moe(const qs_model_config *cfg, int layer)
{
    if (cfg->num_experts <= 0 || layer < 0 || layer >= cfg->num_layers)
        return false;
    if (cfg->llama4)
        return cfg->layer_moe[layer];
    for (int i = 0; i < cfg->n_mlp_only_layers; i++)
        if (cfg->mlp_only_layers[i] == layer)
            return false;
    int step = cfg->decoder_sparse_step > 0 ? cfg->decoder_sparse_step : 1;
    return (layer + 1) % step == 0;
}
