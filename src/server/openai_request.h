/* openai_request.h — parses and validates the body of POST /v1/completions and
 * /v1/chat/completions into a plain struct, before any tokenizer or engine is involved. Every
 * wrong type or out-of-range value is a 400 whose `param` names the field, so clients learn
 * exactly what to fix; unknown fields are ignored as vLLM does. */
#ifndef QS_SERVER_OPENAI_REQUEST_H
#define QS_SERVER_OPENAI_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cJSON.h>

#include "engine/sampler.h"
#include "server/api_error.h"
#include "server/json_body.h"
#include "server/request_fields.h"
#include "server/tool_request.h"

#define QS_MAX_PROMPTS 256   /* prompts in one completions request */
#define QS_MAX_STOP 16       /* stop strings */
#define QS_MAX_STOP_LEN 256  /* bytes per stop string */
#define QS_MAX_STOP_IDS 64
#define QS_MAX_LOGIT_BIAS 1024
#define QS_MAX_CACHE_SALT 1024 /* bytes */

typedef enum { QS_API_COMPLETIONS, QS_API_CHAT } qs_api_kind;

/* One prompt: text, or token ids when the client sent ids. */
typedef struct qs_prompt_input {
    char *text;                  /* may hold NUL bytes: text_len is its length */
    size_t text_len;
    int32_t *ids;
    int n_ids;
} qs_prompt_input;

typedef struct qs_openai_request {
    qs_api_kind kind;
    cJSON *root;                 /* the parsed body; messages/tools point into it */
    char *model;                 /* NULL when absent (the served model is used) */
    qs_prompt_input *prompts;    /* completions */
    int n_prompts;
    const cJSON *messages;       /* chat: validated array */
    const cJSON *tools;          /* chat: array or NULL, passed to the template */
    qs_tool_request tool;        /* chat: tools, tool_choice, parallel_tool_calls (tool_request.h) */
    const cJSON *chat_template_kwargs; /* object or NULL */
    bool add_generation_prompt;  /* chat, default true */
    int max_tokens;              /* -1 = not given (chat: up to max_model_len); completions default 16; 0 only with echo */
    int min_tokens;
    int n;
    qs_sampling_params sampling; /* logprobs: -1 none, else top-N */
    qs_logit_bias *logit_bias;
    char **stop;
    size_t *stop_lens;           /* stop strings may hold NUL bytes */
    int n_stop;
    int32_t *stop_token_ids;
    int n_stop_token_ids;
    bool stream;
    bool include_usage;          /* stream_options.include_usage */
    bool echo;                   /* completions */
    bool ignore_eos;
    bool skip_special_tokens;    /* default true */
    bool include_stop_str_in_output;
    bool chat_logprobs;          /* chat: logprobs: true */
    const char *cache_salt;      /* vLLM's field: a non-empty string or NULL; points into root */
    qs_vllm_fields x;            /* vLLM's extra fields (request_fields.h) */
    struct qs_grammar *grammar;  /* structured output (structured_request.h); NULL = free text */
} qs_openai_request;

/* Parses body[0..len) (not necessarily NUL-terminated). On failure fills e (status 400) and
 * leaves *out empty (safe to free). */
int qs_openai_request_parse(qs_api_kind kind, const char *body, size_t len, qs_openai_request *out,
                            qs_api_error *e);
void qs_openai_request_free(qs_openai_request *r);

#endif
