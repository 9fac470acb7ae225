/* routes.c — the route table (routes.h). Handlers keep the arguments they use; the adapters here
 * give them the table's one signature. /ping answers as /health, as vLLM's does. */
#include "server/routes.h"

#include <string.h>

static enum MHD_Result completions(qs_server *s, struct MHD_Connection *c, const char *body, size_t len,
                                   qs_gen **pending)
{
    return qs_handle_generate(s, c, false, body, len, pending);
}

static enum MHD_Result chat(qs_server *s, struct MHD_Connection *c, const char *body, size_t len, qs_gen **pending)
{
    return qs_handle_generate(s, c, true, body, len, pending);
}

static enum MHD_Result models(qs_server *s, struct MHD_Connection *c, const char *body, size_t len, qs_gen **pending)
{
    return qs_handle_models(s, c);
}

static enum MHD_Result health(qs_server *s, struct MHD_Connection *c, const char *body, size_t len, qs_gen **pending)
{
    return qs_handle_health(s, c);
}

static enum MHD_Result metrics(qs_server *s, struct MHD_Connection *c, const char *body, size_t len, qs_gen **pending)
{
    return qs_handle_metrics(s, c);
}

static enum MHD_Result tokenize(qs_server *s, struct MHD_Connection *c, const char *body, size_t len, qs_gen **pending)
{
    return qs_handle_tokenize(s, c, body, len);
}

static enum MHD_Result detokenize(qs_server *s, struct MHD_Connection *c, const char *body, size_t len,
                                  qs_gen **pending)
{
    return qs_handle_detokenize(s, c, body, len);
}

static enum MHD_Result version(qs_server *s, struct MHD_Connection *c, const char *body, size_t len, qs_gen **pending)
{
    return qs_handle_version(s, c);
}

static const qs_route ROUTES[] = {
    {"POST", "/v1/completions", QS_KEY_REQUIRED, completions},
    {"POST", "/v1/chat/completions", QS_KEY_REQUIRED, chat},
    {"GET", "/v1/models", QS_KEY_REQUIRED, models},
    {"GET", "/health", QS_KEY_NONE, health},
    {"GET", "/ping", QS_KEY_NONE, health},
    {"GET", "/metrics", QS_KEY_WITH_METRICS_FLAG, metrics},
    {"POST", "/tokenize", QS_KEY_REQUIRED, tokenize},
    {"POST", "/detokenize", QS_KEY_REQUIRED, detokenize},
    {"GET", "/version", QS_KEY_NONE, version},
};

const qs_route *qs_route_find(const char *url)
{
    for (size_t i = 0; i < sizeof ROUTES / sizeof ROUTES[0]; i++)
        if (!strcmp(url, ROUTES[i].path))
            return &ROUTES[i];
    return NULL;
}
