/* quantize_formats.h — the quantization_config / hf_quant_config.json documents `qserve quantize`
 * writes, and the tensor names each format uses (internal to quantize/). */
#ifndef QS_QUANTIZE_QUANTIZE_FORMATS_H
#define QS_QUANTIZE_QUANTIZE_FORMATS_H

#include <cjson/cJSON.h>
#include <stdbool.h>

#include "quantize/quant_target.h"

/* Modules left unquantized, by kind, so each format can spell its ignore list its own way. */
typedef struct qs_quant_excludes {
    bool lm_head;
    bool qwen_router;        /* model.layers.N.mlp.gate */
    bool mixtral_router;     /* model.layers.N.block_sparse_moe.gate */
    bool shared_expert_gate; /* model.layers.N.mlp.shared_expert_gate */
    bool llama4_router;      /* [language_model.]model.layers.N.feed_forward.router */
    bool vision;             /* Llama 4's vision_model.* and multi_modal_projector.* */
    const char **skipped;    /* full module names kept unquantized for their shape */
    int n_skipped;
} qs_quant_excludes;

/* config.json "quantization_config" for the target in the format (caller frees). */
cJSON *qs_quant_format_config(qs_quant_target t, qs_quant_format f, const qs_quant_excludes *ex);
/* hf_quant_config.json (ModelOpt only; NULL otherwise). */
cJSON *qs_quant_format_hf_quant_config(qs_quant_target t, const qs_quant_excludes *ex);

#endif
