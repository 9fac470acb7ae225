/* cors.c — CORS headers and preflight answers with Starlette's CORSMiddleware semantics, which
 * is what vLLM's server runs (cors.h). */
#include "server/cors.h"

#include <cJSON.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const ALL_METHODS[] = {"DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT"};
/* Headers a browser may always send; Starlette allows them whatever the list says. */
static const char *const SAFELISTED_HEADERS[] = {"accept", "accept-language", "content-language", "content-type"};

static void lower(char *s)
{
    for (; *s; s++)
        *s = (char)tolower((unsigned char)*s);
}

static int add_unique(char ***list, int *n, const char *v)
{
    for (int i = 0; i < *n; i++)
        if (!strcmp((*list)[i], v))
            return 0;
    char **p = realloc(*list, (size_t)(*n + 1) * sizeof *p);
    if (!p)
        return -1;
    *list = p;
    if (!(p[*n] = strdup(v)))
        return -1;
    (*n)++;
    return 0;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Joins a list with ", " (malloc'd). */
static char *join(char *const *items, int n)
{
    size_t len = 1;
    for (int i = 0; i < n; i++)
        len += strlen(items[i]) + 2;
    char *out = malloc(len);
    if (!out)
        return NULL;
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        if (i)
            strcat(out, ", ");
        strcat(out, items[i]);
    }
    return out;
}

/* Parses a JSON list of strings into *list (each lowercased when fold); *star when "*" is in it. */
static int parse_list(const char *json, const char *flag, bool fold, char ***list, int *n, bool *star, qs_err *err)
{
    cJSON *arr = cJSON_Parse(json && *json ? json : "[\"*\"]");
    if (!cJSON_IsArray(arr)) {
        cJSON_Delete(arr);
        return qs_errf(err, "%s: expected a JSON list of strings, got '%.200s'", flag, json);
    }
    const cJSON *it;
    cJSON_ArrayForEach(it, arr)
    {
        if (!cJSON_IsString(it)) {
            cJSON_Delete(arr);
            return qs_errf(err, "%s: expected a JSON list of strings, got '%.200s'", flag, json);
        }
        char *v = strdup(it->valuestring);
        if (!v || (fold && (lower(v), 0)) || add_unique(list, n, v)) {
            free(v);
            cJSON_Delete(arr);
            return qs_errf(err, "out of memory");
        }
        *star |= !strcmp(v, "*");
        free(v);
    }
    cJSON_Delete(arr);
    return 0;
}

int qs_cors_init(qs_cors *c, const char *origins, const char *methods, const char *headers, bool credentials,
                 qs_err *err)
{
    memset(c, 0, sizeof *c);
    c->credentials = credentials;
    char **m = NULL;
    int n_m = 0;
    bool all_methods = false;
    if (parse_list(origins, "--allowed-origins", false, &c->origins, &c->n_origins, &c->all_origins, err) ||
        parse_list(methods, "--allowed-methods", false, &m, &n_m, &all_methods, err) ||
        parse_list(headers, "--allowed-headers", true, &c->headers, &c->n_headers, &c->all_headers, err)) {
        for (int i = 0; i < n_m; i++)
            free(m[i]);
        free(m);
        qs_cors_free(c);
        return -1;
    }
    for (size_t i = 0; i < sizeof SAFELISTED_HEADERS / sizeof SAFELISTED_HEADERS[0]; i++)
        add_unique(&c->headers, &c->n_headers, SAFELISTED_HEADERS[i]);
    qsort(c->headers, (size_t)c->n_headers, sizeof *c->headers, cmp_str);
    c->headers_joined = join(c->headers, c->n_headers);
    c->methods = all_methods ? join((char *const *)ALL_METHODS, (int)(sizeof ALL_METHODS / sizeof ALL_METHODS[0]))
                             : join(m, n_m);
    for (int i = 0; i < n_m; i++)
        free(m[i]);
    free(m);
    if (!c->methods || !c->headers_joined) {
        qs_cors_free(c);
        return qs_errf(err, "out of memory");
    }
    return 0;
}

void qs_cors_free(qs_cors *c)
{
    for (int i = 0; i < c->n_origins; i++)
        free(c->origins[i]);
    for (int i = 0; i < c->n_headers; i++)
        free(c->headers[i]);
    free(c->origins);
    free(c->headers);
    free(c->methods);
    free(c->headers_joined);
    memset(c, 0, sizeof *c);
}

static bool origin_allowed(const qs_cors *c, const char *origin)
{
    if (c->all_origins)
        return true;
    for (int i = 0; i < c->n_origins; i++)
        if (!strcmp(c->origins[i], origin))
            return true;
    return false;
}

static bool method_allowed(const qs_cors *c, const char *method)
{
    size_t n = strlen(method);
    for (const char *p = c->methods; *p;) {
        size_t len = strcspn(p, ",");
        if (len == n && !strncmp(p, method, n))
            return true;
        p += len;
        while (*p == ',' || *p == ' ')
            p++;
    }
    return false;
}

static bool header_allowed(const qs_cors *c, const char *name, size_t len)
{
    for (int i = 0; i < c->n_headers; i++)
        if (strlen(c->headers[i]) == len && !strncasecmp(c->headers[i], name, len))
            return true;
    return false;
}

/* Every name of "X-A, Content-Type" in the allowed list. */
static bool headers_allowed(const qs_cors *c, const char *requested)
{
    for (const char *p = requested; *p;) {
        while (*p == ' ' || *p == '\t')
            p++;
        size_t len = strcspn(p, ",");
        size_t trimmed = len;
        while (trimmed && (p[trimmed - 1] == ' ' || p[trimmed - 1] == '\t'))
            trimmed--;
        if (!header_allowed(c, p, trimmed))
            return false;
        p += len;
        if (*p)
            p++;
    }
    return true;
}

bool qs_cors_is_preflight(struct MHD_Connection *conn, const char *method)
{
    return !strcmp(method, "OPTIONS") && MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Origin") &&
           MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Access-Control-Request-Method");
}

int qs_cors_preflight(const qs_cors *c, struct MHD_Connection *conn, struct MHD_Response **out)
{
    const char *origin = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Origin");
    const char *method = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Access-Control-Request-Method");
    const char *req_headers = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Access-Control-Request-Headers");
    bool explicit_origin = !c->all_origins || c->credentials;
    char failures[64] = "";
    bool origin_ok = origin_allowed(c, origin);
    if (!origin_ok)
        strcat(failures, "origin");
    if (!method_allowed(c, method))
        strcat(failures, failures[0] ? ", method" : "method");
    if (req_headers && !c->all_headers && !headers_allowed(c, req_headers))
        strcat(failures, failures[0] ? ", headers" : "headers");
    char body[96];
    snprintf(body, sizeof body, "%s%s", failures[0] ? "Disallowed CORS " : "OK", failures);
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_COPY);
    if (!r)
        return -1;
    MHD_add_response_header(r, "Content-Type", "text/plain; charset=utf-8");
    if (explicit_origin) {
        MHD_add_response_header(r, "Vary", "Origin");
        if (origin_ok)
            MHD_add_response_header(r, "Access-Control-Allow-Origin", origin);
    } else {
        MHD_add_response_header(r, "Access-Control-Allow-Origin", "*");
    }
    MHD_add_response_header(r, "Access-Control-Allow-Methods", c->methods);
    MHD_add_response_header(r, "Access-Control-Max-Age", "600");
    if (c->all_headers && req_headers)
        MHD_add_response_header(r, "Access-Control-Allow-Headers", req_headers);
    else if (!c->all_headers)
        MHD_add_response_header(r, "Access-Control-Allow-Headers", c->headers_joined);
    if (c->credentials)
        MHD_add_response_header(r, "Access-Control-Allow-Credentials", "true");
    *out = r;
    return failures[0] ? 400 : 200;
}

void qs_cors_add_headers(const qs_cors *c, struct MHD_Connection *conn, struct MHD_Response *r)
{
    const char *origin = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Origin");
    if (!origin)
        return;
    bool cookie = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Cookie") != NULL;
    if (c->credentials)
        MHD_add_response_header(r, "Access-Control-Allow-Credentials", "true");
    if (c->all_origins && !cookie) {
        MHD_add_response_header(r, "Access-Control-Allow-Origin", "*");
    } else if (origin_allowed(c, origin)) {
        /* a request with cookies cannot be answered "*": the origin itself, and caches told so */
        MHD_add_response_header(r, "Access-Control-Allow-Origin", origin);
        MHD_add_response_header(r, "Vary", "Origin");
    }
}
