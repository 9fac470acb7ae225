/* cmd_chat_template.c — `qserve chat-template MODEL --messages FILE.json ...`: renders a
 * checkpoint's chat template (tokenizer_config.json) for a conversation and prints the prompt
 * exactly, with no added newline, so it can be diffed against transformers' apply_chat_template. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/model_source.h"
#include "cli/commands.h"
#include "tokenizer/chat_template.h"
#include "util/fileio.h"

static void usage(FILE *out)
{
    fprintf(out,
            "usage: qserve chat-template MODEL --messages FILE.json [--add-generation-prompt]\n"
            "                            [--tools FILE.json] [--kwargs JSON] [--template FILE.jinja]\n\n"
            "Prints the prompt MODEL's chat template makes of a conversation, byte for byte.\n"
            "MODEL/tokenizer_config.json gives the template and bos_token/eos_token.\n\n"
            "  --messages FILE         a JSON array of messages, or {\"messages\": [...], \"tools\": [...]};\n"
            "                          '-' reads it from stdin\n"
            "  --add-generation-prompt end with the assistant header (add_generation_prompt=true)\n"
            "  --tools FILE            a JSON array of tool (function) schemas\n"
            "  --kwargs JSON           extra template variables, e.g. '{\"enable_thinking\": false}'\n"
            "  --template FILE         use this Jinja file instead of the checkpoint's template\n"
            "                          (MODEL is then optional and only gives the special tokens)\n"
            "  --bos-token S, --eos-token S   override the special tokens\n");
    qs_cli_hub_usage(out);
}

static cJSON *read_json(const char *path, const char *what, qs_err *err)
{
    char *text;
    int rc = !strcmp(path, "-") ? qs_read_stdin(&text, NULL, err) : qs_read_file(path, &text, NULL, err);
    if (rc) {
        qs_err_prefix(err, "%s: ", what);
        return NULL;
    }
    const char *end = NULL;
    cJSON *j = cJSON_ParseWithOpts(text, &end, 1);
    if (!j) {
        size_t at = end ? (size_t)(end - text) : 0;
        qs_errf(err, "%s: %s is not valid JSON (error near byte %zu)", what, !strcmp(path, "-") ? "stdin" : path, at);
    }
    free(text);
    return j;
}

int qs_cmd_chat_template(int argc, char **argv)
{
    const char *model_dir = NULL, *messages_path = NULL, *tools_path = NULL, *kwargs_text = NULL;
    const char *template_path = NULL, *bos_flag = NULL, *eos_flag = NULL;
    bool add_generation_prompt = false;
    qs_cli_hub_flags hub = {0};
    qs_cli_opt opts[7 + QS_CLI_HUB_N_OPTS] = {{"--messages", &messages_path, NULL},  {"--tools", &tools_path, NULL},
                                              {"--kwargs", &kwargs_text, NULL},     {"--template", &template_path, NULL},
                                              {"--bos-token", &bos_flag, NULL},     {"--eos-token", &eos_flag, NULL},
                                              {"--add-generation-prompt", NULL, &add_generation_prompt}};
    qs_cli_hub_opts(&hub, opts + 7);
    bool done;
    int parse_status = qs_cli_parse("chat-template", argc, argv, opts, (int)(sizeof opts / sizeof opts[0]),
                                    &model_dir, usage, &done);
    if (done)
        return parse_status;
    if (!model_dir && !template_path) {
        fprintf(stderr, "error: chat-template: MODEL is required\n");
        usage(stderr);
        return 2;
    }
    if (!messages_path) {
        fprintf(stderr, "error: chat-template: --messages FILE.json is required\n");
        usage(stderr);
        return 2;
    }

    qs_err err;
    int status = 1;
    qs_chat_template *tmpl = NULL, *from_dir = NULL;
    cJSON *doc = NULL, *tools_doc = NULL, *kwargs = NULL;
    char *prompt = NULL, *template_src = NULL;

    char dir[4096];
    if (model_dir && qs_cli_model_dir(model_dir, &hub, QS_HUB_FILES_TOKENIZER, dir, sizeof dir))
        goto done;
    if (model_dir && qs_chat_template_load_from_dir(dir, &from_dir, &err)) {
        /* With --template the directory only supplies special tokens: a config without a chat
         * template is fine, a missing or broken one is not. */
        if (!template_path || !strstr(err.msg, "no chat template"))
            goto fail;
    }
    if (template_path) {
        if (qs_read_file(template_path, &template_src, NULL, &err) ||
            qs_chat_template_compile(template_src, template_path, &tmpl, &err))
            goto fail;
    } else {
        tmpl = from_dir;
        from_dir = NULL;
    }
    const char *bos = bos_flag ? bos_flag : qs_chat_template_bos_token(from_dir ? from_dir : tmpl);
    const char *eos = eos_flag ? eos_flag : qs_chat_template_eos_token(from_dir ? from_dir : tmpl);

    if (!(doc = read_json(messages_path, "--messages", &err)))
        goto fail;
    const cJSON *messages = doc, *tools = NULL;
    if (cJSON_IsObject(doc)) {
        messages = cJSON_GetObjectItemCaseSensitive(doc, "messages");
        tools = cJSON_GetObjectItemCaseSensitive(doc, "tools");
        if (!messages) {
            qs_errf(&err, "--messages: %s: an object needs a \"messages\" array", messages_path);
            goto fail;
        }
    }
    if (!cJSON_IsArray(messages)) {
        qs_errf(&err, "--messages: %s: expected a JSON array of messages or {\"messages\": [...]}", messages_path);
        goto fail;
    }
    if (tools_path) {
        if (!(tools_doc = read_json(tools_path, "--tools", &err)))
            goto fail;
        if (!cJSON_IsArray(tools_doc)) {
            qs_errf(&err, "--tools: %s: expected a JSON array of tools", tools_path);
            goto fail;
        }
        tools = tools_doc;
    }
    if (kwargs_text) {
        kwargs = cJSON_Parse(kwargs_text);
        if (!kwargs || !cJSON_IsObject(kwargs)) {
            qs_errf(&err, "--kwargs: expected a JSON object, got '%s'", kwargs_text);
            goto fail;
        }
    }
    if (qs_chat_template_render(tmpl, messages, tools, add_generation_prompt, bos, eos, kwargs, &prompt, &err))
        goto fail;
    fwrite(prompt, 1, strlen(prompt), stdout);
    fflush(stdout);
    status = 0;
    goto done;
fail:
    fprintf(stderr, "error: %s\n", err.msg);
done:
    free(prompt);
    free(template_src);
    cJSON_Delete(doc);
    cJSON_Delete(tools_doc);
    cJSON_Delete(kwargs);
    qs_chat_template_free(tmpl);
    qs_chat_template_free(from_dir);
    return status;
}
