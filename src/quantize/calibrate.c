/* calibrate.c — see calibrate.h. Prompts are tokenized with the checkpoint's own tokenizer; a
 * checkpoint without one gets a fixed spread of token ids instead. Each prompt is one prefill
 * through qs_model_forward on a KV cache just large enough for it. */
#include "quantize/calibrate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "cpu/reference_kernels.h"
#include "model/kv_cache.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"
#include "util/log.h"

static const char *const PROMPTS[] = {
    "The quick brown fox jumps over the lazy dog. Natalia sold clips to 48 of her friends in April, and then she "
    "sold half as many clips in May. How many clips did Natalia sell altogether in April and May?",
    "In 1969, Apollo 11 landed on the Moon. Neil Armstrong and Buzz Aldrin spent about two and a quarter hours "
    "outside the lunar module, collecting samples and setting up experiments.",
    "def fibonacci(n):\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n    return a\n\n"
    "print([fibonacci(i) for i in range(10)])",
    "Photosynthesis converts light energy into chemical energy: plants take in carbon dioxide and water and, using "
    "sunlight, produce glucose and oxygen. 光合作用 — la photosynthèse — Photosynthese.",
};
#define N_PROMPTS (sizeof PROMPTS / sizeof PROMPTS[0])

static int run_prompt(qs_model *m, const int32_t *ids, int n, qs_err *err)
{
    const qs_model_config *mc = qs_model_get_config(m);
    int n_blocks = (n + QS_KV_BLOCK_SIZE - 1) / QS_KV_BLOCK_SIZE;
    qs_kv_cache *kv;
    if (qs_kv_cache_create(mc, QS_PLATFORM_CPU, n_blocks, &kv, err))
        return -1;
    int32_t *table = malloc(sizeof *table * (size_t)n_blocks);
    float *logits = malloc(sizeof *logits * (size_t)mc->vocab_size);
    int rc = -1;
    if (!table || !logits) {
        qs_errf(err, "calibration: out of memory");
        goto out;
    }
    for (int i = 0; i < n_blocks; i++)
        table[i] = qs_kv_cache_alloc(kv);
    qs_seq_step s = {.tokens = ids, .n_tokens = n, .start_pos = 0, .block_table = table, .n_blocks = n_blocks,
                     .want_logits = true};
    rc = qs_model_forward(m, kv, &s, 1, logits, err);
out:
    free(table);
    free(logits);
    qs_kv_cache_free(kv);
    return rc;
}

int qs_calibrate_activations(const char *model_dir, int max_tokens, qs_err *err)
{
    if (max_tokens <= 0)
        max_tokens = 128;
    qs_config cfg;
    qs_config_defaults(&cfg);
    snprintf(cfg.model_dir, sizeof cfg.model_dir, "%s", model_dir);
    cfg.device = QS_DEVICE_CPU;
    snprintf(cfg.kernels.linear_backend, sizeof cfg.kernels.linear_backend, "reference");
    snprintf(cfg.kernels.moe_backend, sizeof cfg.kernels.moe_backend, "reference");
    /* Ranges are recorded per checkpoint module (q_proj, k_proj, ...), so no fused qkv_proj. */
    cfg.no_fuse_projections = true;
    qs_model *m;
    if (qs_model_load(&cfg, &m, err))
        return qs_err_prefix(err, "calibration: loading %s with the reference kernels: ", model_dir);
    const qs_model_config *mc = qs_model_get_config(m);
    qs_tokenizer *tok = NULL;
    qs_err terr;
    if (qs_tokenizer_load(model_dir, &tok, &terr)) {
        qs_warn("calibration: no usable tokenizer in %s (%s); using a fixed spread of token ids", model_dir, terr.msg);
        tok = NULL;
    }
    int rc = 0;
    qs_reference_calibration_begin();
    for (size_t p = 0; p < N_PROMPTS && rc == 0; p++) {
        int32_t *ids = NULL;
        size_t n = 0;
        if (tok) {
            rc = qs_tokenizer_encode(tok, PROMPTS[p], strlen(PROMPTS[p]), true, &ids, &n, err);
        } else {
            n = (size_t)max_tokens;
            ids = malloc(sizeof *ids * n);
            if (!ids)
                rc = qs_errf(err, "calibration: out of memory");
            for (size_t i = 0; ids && i < n; i++)
                ids[i] = (int32_t)((p * 7919 + i * 104729) % (size_t)mc->vocab_size);
        }
        if (rc == 0 && n > 0) {
            int len = n > (size_t)max_tokens ? max_tokens : (int)n;
            rc = run_prompt(m, ids, len, err);
            if (rc)
                qs_err_prefix(err, "calibration prompt %zu: ", p + 1);
        }
        free(ids);
    }
    qs_reference_calibration_end();
    if (tok)
        qs_tokenizer_free(tok);
    qs_model_free(m);
    return rc;
}
