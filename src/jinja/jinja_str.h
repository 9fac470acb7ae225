/* jinja_str.h — string transforms shared by filters and methods (Python semantics). */
#ifndef QS_JINJA_STR_H
#define QS_JINJA_STR_H

#include <stdbool.h>

#include "jinja/jinja_access.h"
#include "jinja/jinja_arena.h"
#include "jinja/jinja_value.h"

qs_jv *qs_jj_str_strip(qs_jj_arena *a, const qs_jv *s, const qs_jv *chars, bool left, bool right);
qs_jv *qs_jj_str_case(qs_jj_arena *a, const qs_jv *s, char mode); /* 'u'pper 'l'ower 'c'apitalize 't'itle */
qs_jv *qs_jj_str_replace(qs_jj_ctx *ctx, int line, const qs_jv *s, const qs_jv *old, const qs_jv *new_,
                         long long count);
/* A string value holding b's bytes; frees b. */
qs_jv *qs_jj_str_from_buf(qs_jj_arena *a, qs_jj_buf *b);

#endif
