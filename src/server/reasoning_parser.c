/* reasoning_parser.c — <think>...</think> splitting for qwen3 and deepseek_r1 (see
 * reasoning_parser.h for the rules and why they differ). */
#include "server/reasoning_parser.h"

#include <string.h>

#include "server/tool_parser.h"

#define THINK "<think>"
#define END_THINK "</think>"

bool qs_reasoning_parser_find(const char *name, qs_reasoning_kind *out)
{
    if (!name || !name[0])
        *out = QS_REASONING_NONE;
    else if (!strcmp(name, "qwen3"))
        *out = QS_REASONING_QWEN3;
    else if (!strcmp(name, "deepseek_r1"))
        *out = QS_REASONING_DEEPSEEK_R1;
    else
        return false;
    return true;
}

const char *qs_reasoning_parser_names(void) { return "qwen3, deepseek_r1"; }

/* Reasoning from text[from] up to </think> (held back while it may be completing), content after. */
static void split_at_end(const char *text, size_t len, size_t from, bool final, bool all_reasoning_if_open,
                         qs_reasoning_split *out)
{
    const char *end = qs_tp_find(text + from, len - from, END_THINK);
    if (end) {
        out->r_off = from;
        out->r_len = (size_t)(end - text) - from;
        out->c_off = (size_t)(end - text) + strlen(END_THINK);
        out->c_len = len - out->c_off;
        out->has_reasoning = true;
        return;
    }
    if (final && !all_reasoning_if_open) {
        out->c_off = from;
        out->c_len = len - from;
        return;
    }
    out->r_off = from;
    out->r_len = len - from - (final ? 0 : qs_tp_partial_marker(text + from, len - from, END_THINK));
    out->has_reasoning = true;
}

void qs_reasoning_split_text(qs_reasoning_kind kind, const char *text, size_t len, qs_split_mode mode,
                             qs_reasoning_split *out)
{
    bool final = mode != QS_SPLIT_PARTIAL;
    memset(out, 0, sizeof *out);
    if (kind == QS_REASONING_NONE) {
        out->c_len = len;
        return;
    }
    size_t tag = strlen(THINK);
    bool may_be_tag = len < tag && !memcmp(THINK, text, len);
    if (!final && may_be_tag)
        return; /* nothing certain yet */
    if (kind == QS_REASONING_DEEPSEEK_R1) {
        size_t from = len >= tag && !memcmp(text, THINK, tag) ? tag : 0;
        split_at_end(text, len, from, final, true, out);
        return;
    }
    /* qwen3 */
    if (mode == QS_SPLIT_ONE_SHOT) {
        const char *start = qs_tp_find(text, len, THINK);
        size_t from = start ? (size_t)(start - text) + tag : 0;
        split_at_end(text, len, from, true, false, out);
        return;
    }
    if (len >= tag && !memcmp(text, THINK, tag)) {
        split_at_end(text, len, tag, final, true, out);
        return;
    }
    out->c_len = len;
}
