/* reasoning_parser.h — --reasoning-parser qwen3|deepseek_r1: splits the <think>...</think> part
 * a reasoning model writes from its answer, into message.reasoning_content and content. Like a
 * tool parser it reads a whole output (final) or a prefix of one (streaming), and for a prefix
 * reports only text that can no longer change, so streamed deltas add up to the one-shot split.
 *
 * vLLM's rules (its qwen3 and deepseek_r1 reasoning parsers), on the whole output:
 *   - a <think> start tag is dropped if present;
 *   - text before </think> is reasoning, text after it content (empty parts are null);
 *   - without </think>: qwen3 -> all content (chat_template_kwargs.enable_thinking=false makes the
 *     template close the think block itself, so the model writes only the answer);
 *     deepseek_r1 -> all reasoning (R1's template opens <think> in the prompt, so the output is
 *     reasoning until the model closes it).
 * While streaming, qwen3 decides from the start of the output: one that begins with <think> is
 * reasoning until </think>; one that does not is content (vLLM's own stream and one-shot answers
 * differ for an output with </think> but no <think>; here such an output streams as content, and
 * one cut off inside <think> streams as reasoning but is content one-shot, as in vLLM). */
#ifndef QS_SERVER_REASONING_PARSER_H
#define QS_SERVER_REASONING_PARSER_H

#include <stdbool.h>
#include <stddef.h>

typedef enum { QS_REASONING_NONE, QS_REASONING_QWEN3, QS_REASONING_DEEPSEEK_R1 } qs_reasoning_kind;

/* Returns false for an unknown name; "" and NULL are NONE. */
bool qs_reasoning_parser_find(const char *name, qs_reasoning_kind *out);
const char *qs_reasoning_parser_names(void); /* "qwen3, deepseek_r1" */

/* Spans into text: reasoning = text[r_off, r_off + r_len), content likewise. */
typedef struct qs_reasoning_split {
    size_t r_off, r_len;
    size_t c_off, c_len;
    bool has_reasoning; /* final: reasoning_content is a string (else null) */
} qs_reasoning_split;

typedef enum {
    QS_SPLIT_PARTIAL,    /* a prefix of the output: only what can no longer change */
    QS_SPLIT_STREAM_END, /* the whole output of a stream: the streaming rules, nothing held back */
    QS_SPLIT_ONE_SHOT,   /* the whole output of a non-streaming request: vLLM's one-shot rules */
} qs_split_mode;

void qs_reasoning_split_text(qs_reasoning_kind kind, const char *text, size_t len, qs_split_mode mode,
                             qs_reasoning_split *out);

#endif
