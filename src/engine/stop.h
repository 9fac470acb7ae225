/* stop.h — stop conditions of one generation: stop token ids and stop strings matched on the
 * detokenised text across token boundaries. The matcher holds back the tail of the text that could
 * still begin a stop string, so what it releases can be streamed at once and never needs taking
 * back; when a stop string completes, the text before it is released and the rest dropped
 * (OpenAI semantics: the stop string is not part of the output). Used by `qserve generate` and
 * the server alike. */
#ifndef QS_ENGINE_STOP_H
#define QS_ENGINE_STOP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct qs_stop_matcher qs_stop_matcher;

/* Copies the stop strings (empty ones are ignored) and stop ids. NULL when out of memory. */
qs_stop_matcher *qs_stop_new(const char *const *stop_strings, int n_strings, const int32_t *stop_ids, int n_ids);
/* The same with the strings' lengths (they may hold NUL bytes); lens NULL: strlen of each. */
qs_stop_matcher *qs_stop_new_n(const char *const *stop_strings, const size_t *lens, int n_strings,
                               const int32_t *stop_ids, int n_ids);
void qs_stop_free(qs_stop_matcher *m);

/* True if id is one of the stop token ids. */
bool qs_stop_is_stop_token(const qs_stop_matcher *m, int32_t id);

/* Feeds newly detokenised text. Returns true when a stop string completed: *out then holds the
 * remaining text before it and the generation should end (later feeds release nothing). Else
 * returns false and *out holds the text that can no longer be part of a stop string. *out stays
 * valid until the next call. When memory runs out the text is released unmatched, never lost. */
bool qs_stop_feed(qs_stop_matcher *m, const char *text, size_t len, const char **out, size_t *out_len);
/* At the end of generation: releases the held-back text (nothing after a stop string matched). */
void qs_stop_flush(qs_stop_matcher *m, const char **out, size_t *out_len);
/* True once a stop string has matched; which one (index into the strings given) or -1. */
bool qs_stop_matched(const qs_stop_matcher *m);
int qs_stop_matched_index(const qs_stop_matcher *m);

#endif
