/* request_fields.h — vLLM's extra request fields of /v1/completions and /v1/chat/completions
 * (vllm/entrypoints/openai/protocol.py) beyond the OpenAI core that openai_request.c parses:
 * each one is either parsed here into qs_vllm_fields and honoured downstream, or refused with a
 * 400 naming it when the request gives it a value that would change the result (suffix,
 * use_beam_search, priority != 0, logits_processors, ...). docs/api.md keeps the full table. */
#ifndef QS_SERVER_REQUEST_FIELDS_H
#define QS_SERVER_REQUEST_FIELDS_H

#include <stdbool.h>
#include <stdint.h>

#include <cJSON.h>

#include "server/api_error.h"

#define QS_MAX_N 64 /* choices per prompt (n, and best_of here) */
#define QS_MAX_BAD_WORDS 64
#define QS_MAX_ALLOWED_TOKEN_IDS 65536
#define QS_MAX_REQUEST_ID 256

typedef struct qs_vllm_fields {
    int best_of;                  /* 0: not given (= n) */
    int truncate_prompt_tokens;   /* 0: off; else keep the last k prompt tokens */
    int prompt_logprobs;          /* -1: off; else top-N per prompt position */
    int32_t *allowed_token_ids;   /* malloc'd; NULL: every id allowed */
    int n_allowed_token_ids;
    char **bad_words;             /* malloc'd strings */
    int n_bad_words;
    bool return_tokens_as_token_ids;
    bool continuous_usage_stats;  /* stream_options.continuous_usage_stats */
    bool continue_final_message;  /* chat */
    bool chat_echo;               /* chat: echo */
    bool add_special_tokens;      /* completions default true, chat default false */
    const char *chat_template;    /* chat: request-level Jinja source (points into the body) */
    const char *request_id;       /* points into the body; NULL: a fresh id */
} qs_vllm_fields;

/* Parses the fields of root for an API kind (chat when `chat`); n is the request's n and
 * stream whether it streams (best_of checks). On failure fills e with a 400 naming the field. */
int qs_vllm_fields_parse(const cJSON *root, bool chat, int n, bool stream, qs_vllm_fields *out, qs_api_error *e);
void qs_vllm_fields_free(qs_vllm_fields *f);

#endif
