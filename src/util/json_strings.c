/* json_strings.c — see json_strings.h. The raw text is scanned for its string tokens in document
 * order, which is the order of cJSON's tree walked depth first with each member's key before its
 * value; cJSON offers no positions or lengths to do it otherwise. A string node's length is kept in
 * its valuedouble field, which cJSON leaves unused (0) for strings: length + 1 when recorded. */
#include "util/json_strings.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *p, *end;
} scan;

static unsigned hex4(const char *s)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = s[i];
        v = v * 16 + (unsigned)(c >= '0' && c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
    }
    return v;
}

/* The next string token: its decoded byte length and whether it holds a NUL. False at the end. */
static bool next_string(scan *sc, size_t *len, bool *has_nul)
{
    while (sc->p < sc->end && *sc->p != '"')
        sc->p++;
    if (sc->p >= sc->end)
        return false;
    const char *p = sc->p + 1;
    size_t n = 0;
    *has_nul = false;
    while (p < sc->end && *p != '"') {
        if (*p != '\\') {
            n++;
            p++;
            continue;
        }
        if (p + 1 >= sc->end)
            return false;
        if (p[1] != 'u') {
            n++;
            p += 2;
            continue;
        }
        if (p + 6 > sc->end)
            return false;
        unsigned cp = hex4(p + 2);
        p += 6;
        if (cp >= 0xD800 && cp <= 0xDBFF && p + 6 <= sc->end && p[0] == '\\' && p[1] == 'u') {
            n += 4; /* a surrogate pair: one 4-byte character */
            p += 6;
            continue;
        }
        *has_nul = *has_nul || cp == 0;
        n += cp < 0x80 ? 1 : cp < 0x800 ? 2 : 3;
    }
    if (p >= sc->end)
        return false;
    sc->p = p + 1;
    *len = n;
    return true;
}

static void set_len(cJSON *node, size_t len) { node->valuedouble = (double)len + 1; }

static int walk(cJSON *node, scan *sc, const cJSON **key_with_nul)
{
    int found = 0;
    size_t len;
    bool nul;
    if (cJSON_IsString(node)) {
        if (!next_string(sc, &len, &nul))
            return -1;
        if (nul) {
            set_len(node, len);
            found++;
        }
        return found;
    }
    if (!cJSON_IsArray(node) && !cJSON_IsObject(node))
        return 0;
    for (cJSON *c = node->child; c; c = c->next) {
        if (cJSON_IsObject(node)) {
            if (!next_string(sc, &len, &nul))
                return -1;
            if (nul) {
                found++;
                if (key_with_nul && !*key_with_nul)
                    *key_with_nul = c;
            }
        }
        int r = walk(c, sc, key_with_nul);
        if (r < 0)
            return -1;
        found += r;
    }
    return found;
}

int qs_json_record_string_lengths(cJSON *root, const char *raw, size_t len, const cJSON **key_with_nul)
{
    if (key_with_nul)
        *key_with_nul = NULL;
    if (!memmem(raw, len, "\\u0000", 6))
        return 0; /* no NUL anywhere: every length is strlen */
    scan sc = {raw, raw + len};
    return walk(root, &sc, key_with_nul);
}

size_t qs_json_string_len(const cJSON *s)
{
    if (!cJSON_IsString(s) || !s->valuestring)
        return 0;
    if (s->valuedouble >= 1)
        return (size_t)s->valuedouble - 1;
    return strlen(s->valuestring);
}

bool qs_json_string_has_nul(const cJSON *s) { return cJSON_IsString(s) && s->valuestring && s->valuedouble >= 1; }

cJSON *qs_json_string_n(const char *bytes, size_t len)
{
    cJSON *s = cJSON_CreateString("");
    char *copy = cJSON_malloc(len + 1);
    if (!s || !copy) {
        cJSON_Delete(s);
        cJSON_free(copy);
        return NULL;
    }
    memcpy(copy, bytes, len);
    copy[len] = '\0';
    cJSON_free(s->valuestring);
    s->valuestring = copy;
    if (memchr(bytes, '\0', len))
        s->valuedouble = (double)len + 1; /* the recorded length, as qs_json_record_string_lengths keeps it */
    return s;
}

enum { NUL_MARK = 0xFF }; /* never a byte of UTF-8 */

char *qs_json_marked_copy(const char *text, size_t len)
{
    char *copy = malloc(len + 1);
    if (!copy)
        return NULL;
    for (size_t i = 0; i < len; i++)
        copy[i] = text[i] ? text[i] : (char)NUL_MARK;
    copy[len] = '\0';
    return copy;
}

unsigned char qs_json_marked_byte(const char *p) { return (unsigned char)*p == NUL_MARK ? 0 : (unsigned char)*p; }

cJSON *qs_json_text(const char *text, size_t len)
{
    char *copy = qs_json_marked_copy(text, len);
    if (!copy)
        return NULL;
    cJSON *node = cJSON_CreateString(copy);
    free(copy);
    return node;
}

bool qs_json_add_text(cJSON *obj, const char *name, const char *text, size_t len)
{
    cJSON *node = qs_json_text(text, len);
    if (!node)
        return false;
    if (!cJSON_AddItemToObject(obj, name, node)) {
        cJSON_Delete(node);
        return false;
    }
    return true;
}

char *qs_json_print(const cJSON *item)
{
    char *text = cJSON_PrintUnformatted(item);
    if (!text || !strchr(text, (char)NUL_MARK))
        return text;
    size_t n = strlen(text), marks = 0;
    for (size_t i = 0; i < n; i++)
        marks += (unsigned char)text[i] == NUL_MARK;
    char *out = malloc(n + 5 * marks + 1), *w = out;
    if (out) {
        for (size_t i = 0; i < n; i++) {
            if ((unsigned char)text[i] == NUL_MARK) {
                memcpy(w, "\\u0000", 6);
                w += 6;
            } else {
                *w++ = text[i];
            }
        }
        *w = '\0';
    }
    free(text);
    return out;
}
