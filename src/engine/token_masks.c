/* token_masks.c — allowed_token_ids and bad_words masks (see token_masks.h). */
#include "engine/token_masks.h"

#include <math.h>

bool qs_seq_has_token_masks(const qs_seq *s) { return s->n_allowed_token_ids > 0 || s->n_bad_words > 0; }

/* allowed_token_ids is sorted ascending by qs_seq_new, so one walk over the vocabulary does it. */
static void keep_only_allowed(const qs_seq *s, float *logits, int vocab)
{
    int j = 0;
    for (int i = 0; i < vocab; i++) {
        while (j < s->n_allowed_token_ids && s->allowed_token_ids[j] < i)
            j++;
        if (j == s->n_allowed_token_ids || s->allowed_token_ids[j] != i)
            logits[i] = -INFINITY;
    }
}

static void ban_bad_words(const qs_seq *s, float *logits, int vocab)
{
    const int32_t *out = s->tokens + s->n_prompt;
    const int32_t *word = s->bad_word_ids;
    for (int w = 0; w < s->n_bad_words; word += s->bad_word_lens[w], w++) {
        int len = s->bad_word_lens[w];
        int prefix = len - 1;
        if (len <= 0 || prefix > s->n_output)
            continue;
        bool match = true;
        for (int k = 0; k < prefix && match; k++)
            match = out[s->n_output - prefix + k] == word[k];
        int32_t last = word[len - 1];
        if (match && last >= 0 && last < vocab)
            logits[last] = -INFINITY;
    }
}

void qs_seq_apply_token_masks(const qs_seq *s, float *logits, int vocab)
{
    if (s->n_allowed_token_ids > 0)
        keep_only_allowed(s, logits, vocab);
    if (s->n_bad_words > 0)
        ban_bad_words(s, logits, vocab);
}
