/* handlers_misc.c — the small endpoints: GET /v1/models, /health, /metrics, /version and vLLM's
 * POST /tokenize and /detokenize. */
#include <stdlib.h>
#include <string.h>

#include "server/handlers.h"
#include "server/openai_request.h"
#include "server/prompt_build.h"
#include "server/respond.h"
#include "tokenizer/tokenizer.h"
#include "util/json_strings.h"

enum MHD_Result qs_handle_models(qs_server *s, struct MHD_Connection *c)
{
    qs_server_model m;
    if (!qs_server_get_model(s, c, &m))
        return MHD_YES;
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "object", "list");
    cJSON *data = cJSON_AddArrayToObject(root, "data");
    /* one card per served name, as vLLM lists every --served-model-name */
    for (int i = 0; i < s->n_model_names; i++) {
        cJSON *model = cJSON_CreateObject();
        cJSON_AddStringToObject(model, "id", s->model_names[i]);
        cJSON_AddStringToObject(model, "object", "model");
        cJSON_AddNumberToObject(model, "created", (double)m.created);
        cJSON_AddStringToObject(model, "owned_by", "qserve");
        cJSON_AddStringToObject(model, "root", s->model_name);
        cJSON_AddNullToObject(model, "parent");
        cJSON_AddNumberToObject(model, "max_model_len", m.max_model_len);
        cJSON_AddItemToArray(data, model);
    }
    return qs_send_json(s, c, 200, root);
}

enum MHD_Result qs_handle_health(qs_server *s, struct MHD_Connection *c)
{
    pthread_mutex_lock(&s->mu);
    qs_server_state st = s->state;
    char failure[512];
    memcpy(failure, s->failure, sizeof failure);
    pthread_mutex_unlock(&s->mu);
    if (st == QS_STATE_READY)
        return qs_send_text(s, c, 200, "text/plain", "");
    qs_api_error e;
    if (st == QS_STATE_FAILED)
        qs_api_errorf(&e, 500, NULL, "The model failed to load: %s", failure);
    else
        qs_api_errorf(&e, 503, NULL, "%s", st == QS_STATE_LOADING ? "loading" : "shutting down");
    return qs_send_error(s, c, &e);
}

enum MHD_Result qs_handle_metrics(qs_server *s, struct MHD_Connection *c)
{
    pthread_mutex_lock(&s->mu);
    qs_engine *engine = s->state == QS_STATE_READY ? s->model.engine : NULL;
    qs_http_counters counters = s->counters;
    pthread_mutex_unlock(&s->mu);
    char *text = qs_metrics_render(s->model_name, engine, &counters);
    if (!text)
        return MHD_NO;
    enum MHD_Result r = qs_send_text(s, c, 200, "text/plain; version=0.0.4", text);
    free(text);
    return r;
}

static bool check_model(qs_server *s, const cJSON *root, qs_api_error *e)
{
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    if (!model || cJSON_IsNull(model))
        return true;
    if (!cJSON_IsString(model)) {
        qs_api_errorf(e, 400, "model", "'model' must be a string.");
        return false;
    }
    if (qs_json_string_has_nul(model) || !qs_server_serves_name(s, model->valuestring)) {
        qs_api_errorf(e, 404, "model", "The model '%.200s' does not exist; this server serves '%s'.",
                      model->valuestring, s->model_name);
        qs_api_error_code(e, "model_not_found");
        return false;
    }
    return true;
}

/* The common start of POST /tokenize and /detokenize: takes the served model into *m and parses
 * the body, checking its "model". Returns the body, or NULL once the request has been answered
 * (the handler then returns *answered). */
static cJSON *open_model_request(qs_server *s, struct MHD_Connection *c, const char *body, size_t len,
                                 qs_server_model *m, enum MHD_Result *answered)
{
    if (!qs_server_get_model(s, c, m)) {
        *answered = MHD_YES;
        return NULL;
    }
    qs_api_error e;
    cJSON *root = qs_json_parse_body(body, len, &e);
    if (!root || !check_model(s, root, &e)) {
        cJSON_Delete(root);
        *answered = qs_send_error(s, c, &e);
        return NULL;
    }
    return root;
}

/* {"prompt": "text", "add_special_tokens": true} or {"messages": [...], "add_generation_prompt": true,
 * "tools": [...], "chat_template_kwargs": {...}}
 * -> {"count", "max_model_len", "tokens", "token_strs"} */
enum MHD_Result qs_handle_tokenize(qs_server *s, struct MHD_Connection *c, const char *body, size_t len)
{
    qs_server_model m;
    enum MHD_Result answered;
    cJSON *root = open_model_request(s, c, body, len, &m, &answered);
    if (!root)
        return answered;
    qs_api_error e;
    const cJSON *prompt = cJSON_GetObjectItemCaseSensitive(root, "prompt");
    const cJSON *messages = cJSON_GetObjectItemCaseSensitive(root, "messages");
    const cJSON *ast = cJSON_GetObjectItemCaseSensitive(root, "add_special_tokens");
    const cJSON *agp = cJSON_GetObjectItemCaseSensitive(root, "add_generation_prompt");
    const cJSON *strs = cJSON_GetObjectItemCaseSensitive(root, "return_token_strs");
    char *text = NULL;
    int32_t *ids = NULL;
    int n = 0;
    int rc = 0;
    if ((ast && !cJSON_IsBool(ast)) || (agp && !cJSON_IsBool(agp)) || (strs && !cJSON_IsBool(strs)))
        rc = qs_api_errorf(&e, 400, ast && !cJSON_IsBool(ast) ? "add_special_tokens" : "add_generation_prompt",
                           "flags must be booleans.");
    else if (cJSON_IsString(prompt))
        rc = qs_encode_text(&m, prompt->valuestring, qs_json_string_len(prompt), ast ? cJSON_IsTrue(ast) : true, &ids,
                            &n, &e);
    else if (cJSON_IsArray(messages) && cJSON_GetArraySize(messages) > 0) {
        size_t text_len = 0;
        /* the chat request's template inputs, so that counts match what generation renders */
        qs_tool_request tools;
        const cJSON *kwargs = cJSON_GetObjectItemCaseSensitive(root, "chat_template_kwargs");
        if (kwargs && !cJSON_IsNull(kwargs) && !cJSON_IsObject(kwargs))
            rc = qs_api_errorf(&e, 400, "chat_template_kwargs", "'chat_template_kwargs' must be an object.");
        else
            rc = qs_tool_request_parse(root, &tools, &e);
        if (!rc)
            rc = qs_render_chat(&m, messages, tools.tools, agp ? cJSON_IsTrue(agp) : true,
                                cJSON_IsObject(kwargs) ? kwargs : NULL, &text, &text_len, &e);
        if (!rc)
            rc = qs_encode_text(&m, text, text_len, ast ? cJSON_IsTrue(ast) : false, &ids, &n, &e);
    } else
        rc = qs_api_errorf(&e, 400, "prompt", "Send 'prompt' (a string) or 'messages' (a non-empty array).");
    free(text);
    if (rc) {
        cJSON_Delete(root);
        free(ids);
        return qs_send_error(s, c, &e);
    }
    cJSON *out = cJSON_CreateObject();
    cJSON_AddNumberToObject(out, "count", n);
    cJSON_AddNumberToObject(out, "max_model_len", m.max_model_len);
    cJSON *tokens = cJSON_AddArrayToObject(out, "tokens");
    for (int i = 0; i < n; i++)
        cJSON_AddItemToArray(tokens, cJSON_CreateNumber(ids[i]));
    if (cJSON_IsTrue(strs)) {
        cJSON *ts = cJSON_AddArrayToObject(out, "token_strs");
        for (int i = 0; i < n; i++) {
            const char *t = qs_tokenizer_id_to_token(m.tokenizer, ids[i]);
            cJSON_AddItemToArray(ts, cJSON_CreateString(t ? t : ""));
        }
    } else {
        cJSON_AddNullToObject(out, "token_strs");
    }
    free(ids);
    cJSON_Delete(root);
    return qs_send_json(s, c, 200, out);
}

/* {"tokens": [ids]} -> {"prompt": "text"} */
enum MHD_Result qs_handle_detokenize(qs_server *s, struct MHD_Connection *c, const char *body, size_t len)
{
    qs_server_model m;
    enum MHD_Result answered;
    cJSON *root = open_model_request(s, c, body, len, &m, &answered);
    if (!root)
        return answered;
    qs_api_error e;
    const cJSON *tokens = cJSON_GetObjectItemCaseSensitive(root, "tokens");
    int32_t *ids = NULL;
    int n = 0;
    char *text = NULL;
    size_t text_len = 0;
    int rc = 0;
    if (!cJSON_IsArray(tokens))
        rc = qs_api_errorf(&e, 400, "tokens", "'tokens' must be a list of token ids.");
    else if (!(rc = qs_json_token_ids(tokens, "tokens", &ids, &n, &e)) &&
             !(rc = qs_check_token_ids(&m, ids, n, "tokens", &e))) {
        qs_err err = {{0}};
        if (qs_tokenizer_decode_n(m.tokenizer, ids, (size_t)n, false, &text, &text_len, &err))
            rc = qs_api_errorf(&e, 400, "tokens", "%s", err.msg);
    }
    free(ids);
    cJSON_Delete(root);
    if (rc)
        return qs_send_error(s, c, &e);
    cJSON *out = cJSON_CreateObject();
    qs_json_add_text(out, "prompt", text, text_len);
    free(text);
    return qs_send_json(s, c, 200, out);
}

enum MHD_Result qs_handle_version(qs_server *s, struct MHD_Connection *c)
{
    cJSON *v = cJSON_CreateObject();
    cJSON_AddStringToObject(v, "version", "0.1.0");
    return qs_send_json(s, c, 200, v);
}
