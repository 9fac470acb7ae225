/* json_body.h — a request's JSON body as every endpoint reads it (json_body.c): the parse with its
 * 400s, and readers of integer fields and token-id arrays that name the field they refuse. */
#ifndef QS_SERVER_JSON_BODY_H
#define QS_SERVER_JSON_BODY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cJSON.h>

#include "server/api_error.h"

/* The parsed body's strings may hold NUL bytes (\u0000): read their lengths with qs_json_string_len
 * (util/json_strings.h); an object key holding one is a 400. */
cJSON *qs_json_parse_body(const char *body, size_t len, qs_api_error *e);
/* Reads an integer field: absent or null -> *out untouched, returns 0; not an integer in
 * [min, max] -> 400 naming it. */
int qs_json_get_int(const cJSON *obj, const char *name, long long min, long long max, long long *out,
                    qs_api_error *e);
/* Parses a JSON array of token ids (each in [0, 2^31)); *ids malloc'd. */
int qs_json_token_ids(const cJSON *arr, const char *param, int32_t **ids, int *n, qs_api_error *e);
/* A member of obj by exact name; NULL when absent or null (a null field is an omitted one). */
const cJSON *qs_json_field(const cJSON *obj, const char *name);
/* A number that is an exact integer (finite, whole, within 2^53). */
bool qs_json_is_integer(const cJSON *v);
/* Duplicate object keys anywhere in the tree: keeps the last of each name, as Python's json
 * (and so vLLM) does; cJSON's lookups would otherwise find the first. */
void qs_json_dedupe_keys(cJSON *node);

#endif
