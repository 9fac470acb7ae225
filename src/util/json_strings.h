/* json_strings.h — byte lengths of JSON strings that hold a NUL character (\u0000). cJSON keeps a
 * string's decoded bytes whole but tells its length only through the terminating NUL, so such a
 * string would silently end at its first NUL. qs_json_record_string_lengths reads the lengths from
 * the raw JSON text once after parsing; qs_json_string_len then gives every string's true length. */
#ifndef QS_UTIL_JSON_STRINGS_H
#define QS_UTIL_JSON_STRINGS_H

#include <stdbool.h>
#include <stddef.h>

#include <cJSON.h>

/* root must be what cJSON parsed from raw[0..len) (len may extend past the value). Records the
 * decoded length of every string value and object key that holds a NUL; returns how many hold one
 * (values and keys), -1 when raw does not match root. *key_with_nul (may be NULL) receives the
 * first object member whose key holds a NUL, or NULL. */
int qs_json_record_string_lengths(cJSON *root, const char *raw, size_t len, const cJSON **key_with_nul);
/* The byte length of a string node's value (its recorded length, else strlen); 0 for non-strings. */
size_t qs_json_string_len(const cJSON *s);
/* True when a string node's value holds a NUL byte. */
bool qs_json_string_has_nul(const cJSON *s);
/* A new string node holding bytes[0..len), NULs included, its length recorded as the parser's
 * are (for copies of input strings into trees the chat template reads). NULL when out of memory. */
cJSON *qs_json_string_n(const char *bytes, size_t len);

/* Output: a string node for text[0..len) that may hold NUL bytes. cJSON cannot store them, so
 * each is kept as the byte 0xFF, which UTF-8 text never holds, and qs_json_print writes it back
 * as \u0000. NULL when out of memory. */
cJSON *qs_json_text(const char *text, size_t len);
/* text[0..len) as a C string with each NUL replaced by the mark qs_json_print writes back as
 * \u0000 (malloc'd; for strings used as cJSON values or keys). NULL when out of memory. */
char *qs_json_marked_copy(const char *text, size_t len);
/* The byte a marked string stands for at p (the mark reads as 0). */
unsigned char qs_json_marked_byte(const char *p);
/* Adds qs_json_text(text, len) to obj under name; false when out of memory. */
bool qs_json_add_text(cJSON *obj, const char *name, const char *text, size_t len);
/* cJSON_PrintUnformatted, with the NULs of qs_json_text nodes written as \u0000. */
char *qs_json_print(const cJSON *item);

#endif
