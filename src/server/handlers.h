/* handlers.h — the endpoint handlers: generation (handlers_generate.c) and the small endpoints
 * (handlers_misc.c). The route table (routes.c) maps each method and path to one of them. */
#ifndef QS_SERVER_HANDLERS_H
#define QS_SERVER_HANDLERS_H

#include <stdbool.h>
#include <stddef.h>

#include <microhttpd.h>

#include "server/server_internal.h"

/* Endpoint handlers (body is the complete request body). A generation that must wait for the
 * engine suspends the connection and leaves itself in *pending; libmicrohttpd calls the access
 * handler again once it is resumed, which then calls qs_generate_resume. */
typedef struct qs_gen qs_gen;
enum MHD_Result qs_handle_generate(qs_server *s, struct MHD_Connection *c, bool chat, const char *body, size_t len,
                                   qs_gen **pending);
enum MHD_Result qs_generate_resume(qs_gen *g, struct MHD_Connection *c, qs_gen **pending);
/* The connection ended while a non-streaming generation was pending: abort and free it. */
void qs_generate_cancel(qs_gen *g);
enum MHD_Result qs_handle_models(qs_server *s, struct MHD_Connection *c);
enum MHD_Result qs_handle_health(qs_server *s, struct MHD_Connection *c);
enum MHD_Result qs_handle_metrics(qs_server *s, struct MHD_Connection *c);
enum MHD_Result qs_handle_tokenize(qs_server *s, struct MHD_Connection *c, const char *body, size_t len);
enum MHD_Result qs_handle_detokenize(qs_server *s, struct MHD_Connection *c, const char *body, size_t len);
/* {"version": ...} */
enum MHD_Result qs_handle_version(qs_server *s, struct MHD_Connection *c);

#endif
