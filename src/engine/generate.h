/* generate.h — one request run to completion on a loaded model without the scheduler: prefill
 * (in chunks), then decode token by token with the sampler, stop ids / EOS and stop strings on the
 * streamed text. `qserve generate` and tests use it; the server's engine batches requests
 * itself. */
#ifndef QS_ENGINE_GENERATE_H
#define QS_ENGINE_GENERATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/sampler.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

typedef struct qs_generate_request {
    const int32_t *prompt;
    int n_prompt;
    int max_tokens;              /* cut to what max_position_embeddings leaves */
    qs_sampling_params params;
    bool ignore_eos;
    int eos_ids[QS_MAX_EOS];
    int n_eos;
    const int32_t *stop_ids;     /* extra stop token ids */
    int n_stop_ids;
    const char *const *stop_strings;
    int n_stop_strings;
    uint64_t engine_seed;
    /* KV cache element type (qs_kv_dtype, 0 = the activation type) and, for FP8, per-layer
     * scales ([num_layers] or NULL = 1.0) */
    int kv_dtype;
    const float *kv_k_scales, *kv_v_scales;
    /* called with each piece of text as soon as it is final (may be NULL) */
    void (*on_text)(void *ctx, const char *text, size_t len);
    void *on_text_ctx;
} qs_generate_request;

typedef struct qs_generation {
    int32_t *tokens;             /* generated ids (a final EOS / stop id included) */
    int n_tokens;
    char *text;                  /* detokenised output, special tokens skipped, cut before a stop string */
    qs_token_logprobs *logprobs; /* [n_tokens] when params.logprobs >= 0, else NULL */
    const char *finish_reason;   /* "stop" or "length" */
    double prefill_seconds, decode_seconds;
} qs_generation;

/* tok may be NULL (no text: stop strings are then not checked). */
int qs_generate(qs_model *m, const qs_tokenizer *tok, const qs_generate_request *req, qs_generation *out,
                qs_err *err);
void qs_generation_free(qs_generation *g);
/* A tensor-parallel rank other than 0 while rank 0 runs qs_generate(req): the same KV cache (its
 * own KV heads) and every step rank 0 sends, until rank 0 frees its model. */
int qs_generate_tp_worker(qs_model *m, const qs_generate_request *req, qs_err *err);

#endif
