/* fuzz_chat_template.c — libFuzzer target for the Jinja-subset chat-template interpreter:
 * arbitrary bytes are compiled as a template (a model directory's tokenizer_config.json is
 * untrusted input) and, when they compile, rendered over a fixed system/user/assistant
 * conversation with add_generation_prompt true, as the server does for every chat request.
 * Built only by `make fuzz` (clang -fsanitize=fuzzer -DQS_FUZZING). */
#ifdef QS_FUZZING
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "tokenizer/chat_template.h"

static cJSON *messages;

static void add_message(const char *role, const char *content)
{
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "role", role);
    cJSON_AddStringToObject(m, "content", content);
    cJSON_AddItemToArray(messages, m);
}

static void free_messages(void)
{
    cJSON_Delete(messages);
    messages = NULL;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    atexit(free_messages);
    messages = cJSON_CreateArray();
    add_message("system", "You are a helpful assistant.");
    add_message("user", "What is 2+2?");
    add_message("assistant", "2+2 is 4.");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *src = malloc(size + 1);
    if (!src)
        return 0;
    memcpy(src, data, size);
    src[size] = 0;
    qs_chat_template *t = NULL;
    qs_err err;
    err.msg[0] = 0;
    if (qs_chat_template_compile(src, "fuzz.jinja", &t, &err) == 0) {
        char *out = NULL;
        err.msg[0] = 0;
        if (qs_chat_template_render(t, messages, NULL, true, "<s>", "</s>", NULL, &out, &err) == 0) {
            if (!out)
                abort();
            volatile size_t n = strlen(out);
            (void)n;
            free(out);
        } else if (!err.msg[0]) {
            abort(); /* a failed render says why */
        }
        qs_chat_template_free(t);
    } else if (!err.msg[0]) {
        abort(); /* a refused template says why */
    }
    free(src);
    return 0;
}
#endif
