/* jinja_methods.h — what templates may call: str and dict methods, and the globals HF provides. */
#ifndef QS_JINJA_METHODS_H
#define QS_JINJA_METHODS_H

#include <stdbool.h>

#include "jinja/jinja_access.h"
#include "jinja/jinja_arena.h"
#include "jinja/jinja_value.h"

/* The builtin a QS_JV_BUILTIN value stands for. */
enum { QS_JJ_BUILTIN_RANGE, QS_JJ_BUILTIN_NAMESPACE, QS_JJ_BUILTIN_RAISE, QS_JJ_BUILTIN_STRFTIME,
       QS_JJ_BUILTIN_DICT };

/* obj.name(args) for str and dict methods, and a builtin called as a function (obj is the
 * QS_JV_BUILTIN value); *handled is false when obj has no such method. */
qs_jv *qs_jj_call_method(qs_jj_ctx *ctx, int line, const qs_jv *obj, const char *name, const qs_jj_args *args,
                         bool *handled);
/* The globals every render sees (range, namespace, raise_exception, strftime_now, dict). */
void qs_jj_define_globals(qs_jj_arena *a, qs_jv *vars);

#endif
