/* backend.h — the forward pass and the KV block pool the engine drives, as a table of function
 * pointers: the engine, its scheduler and the prefix cache see a model only through it.
 * model_backend.c fills it from a loaded model and its KV cache; the engine's unit tests plug in
 * deterministic fake models. */
#ifndef QS_ENGINE_BACKEND_H
#define QS_ENGINE_BACKEND_H

#include <stdint.h>

#include "model/model.h"
#include "core/sample.h"
#include "util/error.h"

typedef struct qs_engine_backend {
    void *ctx;
    int vocab_size;
    int num_blocks;            /* KV blocks of QS_KV_BLOCK_SIZE positions */
    int (*forward)(void *ctx, const qs_seq_step *steps, int n_steps, float *logits, qs_err *err);
    /* Optional (NULL: every row is sampled on the host): forward, with the rows that want logits
     * (n_out of them, in step order) sampled on the device where rows[r].skip is 0 (ops/sample.h):
     * tokens[r] receives those rows' tokens (-1 for skipped rows), and only the skipped rows'
     * logits are written, at logits + r * vocab_size. */
    int (*forward_sample)(void *ctx, const qs_seq_step *steps, int n_steps, const qs_sample_row *rows,
                          int32_t *tokens, float *logits, qs_err *err);
    int32_t (*alloc_block)(void *ctx);          /* -1 when none is free */
    void (*release_block)(void *ctx, int32_t block);
    void (*destroy)(void *ctx);                 /* may be NULL */
} qs_engine_backend;

#endif
