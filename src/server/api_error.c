/* api_error.c — OpenAI error bodies (see api_error.h). */
#include "server/api_error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <cJSON.h>

const char *qs_api_error_type_for(int status)
{
    switch (status) {
    case 401: return "authentication_error";
    case 404: return "not_found_error";
    case 413: return "request_too_large";
    case 431: return "request_too_large";
    case 429: return "rate_limit_error";
    case 503: return "service_unavailable";
    default: return status >= 500 ? "server_error" : "invalid_request_error";
    }
}

int qs_api_errorf(qs_api_error *e, int status, const char *param, const char *fmt, ...)
{
    if (!e)
        return -1;
    memset(e, 0, sizeof *e);
    e->status = status;
    snprintf(e->type, sizeof e->type, "%s", qs_api_error_type_for(status));
    if (param)
        snprintf(e->param, sizeof e->param, "%s", param);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
    return -1;
}

int qs_api_error_code(qs_api_error *e, const char *code)
{
    snprintf(e->code, sizeof e->code, "%s", code);
    return -1;
}

char *qs_api_error_json(const qs_api_error *e)
{
    cJSON *root = cJSON_CreateObject();
    cJSON *err = cJSON_AddObjectToObject(root, "error");
    cJSON_AddStringToObject(err, "message", e->message);
    cJSON_AddStringToObject(err, "type", e->type);
    if (e->param[0])
        cJSON_AddStringToObject(err, "param", e->param);
    else
        cJSON_AddNullToObject(err, "param");
    if (e->code[0])
        cJSON_AddStringToObject(err, "code", e->code);
    else
        cJSON_AddNullToObject(err, "code");
    char *s = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    return s;
}
