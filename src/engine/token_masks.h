/* token_masks.h — vLLM's allowed_token_ids and bad_words on one row of logits: ids outside
 * allowed_token_ids get -inf; a bad word of one token is always banned, one of several tokens
 * bans its last token whenever the output so far ends with the others (vLLM's
 * NoBadWordsLogitsProcessor, over output tokens only). */
#ifndef QS_ENGINE_TOKEN_MASKS_H
#define QS_ENGINE_TOKEN_MASKS_H

#include <stdbool.h>

#include "engine/seq.h"

/* Whether s carries either mask (such rows are sampled on the host). */
bool qs_seq_has_token_masks(const qs_seq *s);
void qs_seq_apply_token_masks(const qs_seq *s, float *logits, int vocab);

#endif
