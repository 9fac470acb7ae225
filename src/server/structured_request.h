/* structured_request.h — the structured-output fields of /v1/completions and
 * /v1/chat/completions (OpenAI's response_format, vLLM's structured_outputs and the older
 * guided_* fields), checked and compiled into one grammar (src/structured). */
#ifndef QS_SERVER_STRUCTURED_REQUEST_H
#define QS_SERVER_STRUCTURED_REQUEST_H

#include <cJSON.h>

#include "server/api_error.h"

struct qs_grammar;

/* Reads the fields from a request body. *out is NULL when the request asks for free text, else a
 * compiled grammar the caller releases. A malformed field, two ways of asking at once, or a
 * schema keyword / regex / grammar construct the engine does not support is a 400 naming it. */
int qs_structured_request_parse(const cJSON *root, struct qs_grammar **out, qs_api_error *e);

#endif
