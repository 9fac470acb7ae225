/* fuzz_quant_config.c — libFuzzer target for the quantization config parser: arbitrary bytes are
 * parsed as config.json's quantization_config; whatever is accepted is then asked about a few
 * module names (ignore lists, regex targets, ModelOpt layer maps) and freed. Built only by
 * `make fuzz` (clang -fsanitize=fuzzer -DQS_FUZZING). */
#ifdef QS_FUZZING
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "quant/quant_config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *json = malloc(size + 1);
    if (!json)
        return 0;
    memcpy(json, data, size);
    json[size] = 0;
    qs_quant_config qc;
    qs_err err;
    if (qs_quant_config_parse(json, NULL, &qc, &err) == 0) {
        static const char *const names[] = {"lm_head", "model.layers.0.self_attn.q_proj", "model.layers.3.mlp.gate",
                                            "model.layers.1.block_sparse_moe.experts.7.w2", ""};
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
            qs_layer_quant lq;
            qs_quant_config_layer(&qc, names[i], &lq);
            if (lq.format != QS_LQ_NONE && !lq.weights.present)
                abort();
            (void)qs_quant_config_is_ignored(&qc, names[i]);
        }
        qs_quant_config_free(&qc);
    } else if (!err.msg[0]) {
        abort(); /* a refusal always says why */
    }
    free(json);
    return 0;
}
#endif
