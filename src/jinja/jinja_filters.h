/* jinja_filters.h — applying a Jinja2 filter (`x | name(args)`) or test (`x is name(args)`). */
#ifndef QS_JINJA_FILTERS_H
#define QS_JINJA_FILTERS_H

#include "jinja/jinja_access.h"
#include "jinja/jinja_value.h"

qs_jv *qs_jj_apply_filter(qs_jj_ctx *ctx, int line, const char *name, qs_jv *input, const qs_jj_args *args);
/* Returns 1 / 0 for the test's result, -1 on error. */
int qs_jj_apply_test(qs_jj_ctx *ctx, int line, const char *name, const qs_jv *input, const qs_jj_args *args);

#endif
