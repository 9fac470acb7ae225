/* jinja_eval.h — rendering a template's statements and evaluating its expressions. No C library
 * renders Jinja2 with Python's semantics (jinja2 itself is Python, minja and Jinja2Cpp are C++),
 * and transformers' exact output — trim_blocks, lstrip_blocks, HF's tojson — is the contract, so
 * the engine is written here (docs/chat-templates.md: the supported subset and the goldens). */
#ifndef QS_JINJA_EVAL_H
#define QS_JINJA_EVAL_H

#include <stddef.h>

#include "jinja/jinja_access.h"
#include "jinja/jinja_parser.h"
#include "jinja/jinja_value.h"

int qs_jj_render_body(qs_jj_ctx *ctx, qs_jj_frame *frame, qs_jj_node **body, size_t n);
qs_jv *qs_jj_eval(qs_jj_ctx *ctx, qs_jj_frame *frame, const qs_jj_node *n);
/* Calls a macro or builtin value. */
qs_jv *qs_jj_call_value(qs_jj_ctx *ctx, int line, const qs_jv *callee, const qs_jj_args *args);

#endif
