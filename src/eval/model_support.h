/* model_support.h — whether qserve can run a config's model at all, so a config list reports
 * "skipped: why" instead of a failure for an architecture qserve lacks: a present model is judged
 * by config.json "architectures". */
#ifndef QS_EVAL_MODEL_SUPPORT_H
#define QS_EVAL_MODEL_SUPPORT_H

#include <stdbool.h>
#include <stddef.h>

/* True (with the reason) when model_dir/config.json names an architecture qserve lacks. A
 * missing or unreadable config.json is not judged here (the server reports it). */
bool qs_eval_model_dir_unsupported(const char *model_dir, char *reason, size_t cap);

#endif
