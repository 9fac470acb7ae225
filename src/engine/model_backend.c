/* model_backend.c — the engine backend over a loaded model and its KV cache (model_backend.h):
 * each entry of the table forwards to qs_model_* or qs_kv_cache_*, and destroy frees both. */
#include "engine/model_backend.h"

#include <stdlib.h>

#include "model/kv_cache.h"

typedef struct {
    qs_model *model;
    qs_kv_cache *kv;
} model_backend;

static int mb_forward(void *ctx, const qs_seq_step *steps, int n, float *logits, qs_err *err)
{
    model_backend *b = ctx;
    return qs_model_forward(b->model, b->kv, steps, n, logits, err);
}
static int mb_forward_sample(void *ctx, const qs_seq_step *steps, int n, const qs_sample_row *rows, int32_t *tokens,
                             float *logits, qs_err *err)
{
    model_backend *b = ctx;
    return qs_model_forward_sample(b->model, b->kv, steps, n, rows, tokens, logits, err);
}
static int32_t mb_alloc(void *ctx) { return qs_kv_cache_alloc(((model_backend *)ctx)->kv); }
static void mb_release(void *ctx, int32_t block) { qs_kv_cache_release(((model_backend *)ctx)->kv, block); }
static void mb_destroy(void *ctx)
{
    model_backend *b = ctx;
    qs_kv_cache_free(b->kv);
    qs_model_free(b->model);
    free(b);
}

int qs_engine_backend_model(qs_model *model, qs_kv_cache *kv, qs_engine_backend *out, qs_err *err)
{
    model_backend *b = calloc(1, sizeof *b);
    if (!b)
        return qs_errf(err, "out of memory");
    b->model = model;
    b->kv = kv;
    *out = (qs_engine_backend){
        .ctx = b,
        .vocab_size = qs_model_get_config(model)->vocab_size,
        .num_blocks = qs_kv_cache_num_blocks(kv),
        .forward = mb_forward,
        .forward_sample = qs_model_samples_on_device(model) ? mb_forward_sample : NULL,
        .alloc_block = mb_alloc,
        .release_block = mb_release,
        .destroy = mb_destroy,
    };
    return 0;
}
