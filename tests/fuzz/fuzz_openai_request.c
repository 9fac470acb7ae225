/* fuzz_openai_request.c — libFuzzer target for the OpenAI request parser/validator: arbitrary
 * bytes are parsed as the body of both POST /v1/completions and POST /v1/chat/completions, since
 * that body is the first thing an untrusted client controls. Whatever is accepted must be within
 * the limits the header promises, and must free cleanly; a refusal must be a 400 that says why.
 * Built only by `make fuzz` (clang -fsanitize=fuzzer -DQS_FUZZING). */
#ifdef QS_FUZZING
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/openai_request.h"

static void check_one(qs_api_kind kind, const char *body, size_t len)
{
    qs_openai_request r;
    qs_api_error e;
    memset(&r, 0, sizeof r);
    memset(&e, 0, sizeof e);
    if (qs_openai_request_parse(kind, body, len, &r, &e) == 0) {
        if (r.n < 1 || r.n > QS_MAX_N || r.n_stop < 0 || r.n_stop > QS_MAX_STOP)
            abort();
        if (r.n_stop_token_ids < 0 || r.n_stop_token_ids > QS_MAX_STOP_IDS)
            abort();
        volatile size_t sink = 0;
        for (int i = 0; i < r.n_stop; i++) {
            if (strlen(r.stop[i]) > QS_MAX_STOP_LEN)
                abort();
            sink += strlen(r.stop[i]);
        }
        for (int i = 0; i < r.n_stop_token_ids; i++)
            sink += (size_t)r.stop_token_ids[i];
        if (kind == QS_API_COMPLETIONS) {
            if (r.n_prompts < 1 || r.n_prompts > QS_MAX_PROMPTS || !r.prompts)
                abort();
            for (int i = 0; i < r.n_prompts; i++) {
                const qs_prompt_input *p = &r.prompts[i];
                if (p->text)
                    sink += strlen(p->text);
                for (int k = 0; k < p->n_ids; k++)
                    if (p->ids[k] < 0)
                        abort();
            }
        } else if (!cJSON_IsArray(r.messages)) {
            abort();
        }
        if (r.model)
            sink += strlen(r.model);
        (void)sink;
    } else if (e.status != 400 || !e.message[0]) {
        abort(); /* a refusal is a 400 that says why */
    }
    qs_openai_request_free(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* A private copy of exactly `size` bytes, not NUL-terminated, as the HTTP layer hands it. */
    char *body = malloc(size ? size : 1);
    if (!body)
        return 0;
    memcpy(body, data, size);
    check_one(QS_API_COMPLETIONS, body, size);
    check_one(QS_API_CHAT, body, size);
    free(body);
    return 0;
}
#endif
