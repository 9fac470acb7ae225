/* model_backend.h — the real engine backend (backend.h): qs_model_forward, and the device's
 * sampling where the model has it, over a qs_kv_cache's blocks. */
#ifndef QS_ENGINE_MODEL_BACKEND_H
#define QS_ENGINE_MODEL_BACKEND_H

#include "engine/backend.h"
#include "model/model.h"
#include "util/error.h"

/* The real backend: qs_model_forward over a KV cache of num_blocks blocks. The engine takes
 * ownership of model and kv (freed by destroy). */
int qs_engine_backend_model(qs_model *model, qs_kv_cache *kv, qs_engine_backend *out, qs_err *err);

#endif
