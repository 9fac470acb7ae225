/* hf_cache.h — turning a config's model_name into a local model folder without downloading:
 * an existing directory is used as is; otherwise a Hugging Face id ORG/NAME is looked up in the
 * local hub caches, in huggingface_hub's order: $HF_HUB_CACHE, $HUGGINGFACE_HUB_CACHE,
 * $HF_HOME/hub, $XDG_CACHE_HOME/huggingface/hub, ~/.cache/huggingface/hub. Inside a cache the
 * folder is models--ORG--NAME/snapshots/REV with REV read from refs/main when that snapshot
 * exists, else the only snapshot, else the newest one (by modification time). */
#ifndef QS_EVAL_HF_CACHE_H
#define QS_EVAL_HF_CACHE_H

#include <stddef.h>

#include "util/error.h"

/* Fills out with the model folder. When nothing is found the error lists every place looked. */
int qs_hf_resolve_model(const char *model_name, char *out, size_t cap, qs_err *err);

#endif
