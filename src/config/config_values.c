/* config_values.c — the small value parsers every config source shares (sizes like "4GiB",
 * booleans, device names) plus name normalisation, so CLI, YAML and JSON agree on spelling, and
 * the interned strings that string options of any length point at. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cJSON.h>

#include "config/config.h"

int qs_parse_bytes(const char *s, size_t *out)
{
    if (!s || !*s)
        return -1;
    while (isspace((unsigned char)*s))
        s++;
    if (*s == '-' || *s == '+')
        return -1;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || !isfinite(v) || v < 0)
        return -1;
    while (isspace((unsigned char)*end))
        end++;
    double mult = 1;
    switch (tolower((unsigned char)*end)) {
    case 'k': mult = 1024.0; end++; break;
    case 'm': mult = 1024.0 * 1024; end++; break;
    case 'g': mult = 1024.0 * 1024 * 1024; end++; break;
    case 't': mult = 1024.0 * 1024 * 1024 * 1024; end++; break;
    default: break;
    }
    if (mult > 1 && tolower((unsigned char)*end) == 'i')
        end++;
    if (tolower((unsigned char)*end) == 'b')
        end++;
    if (*end)
        return -1;
    double bytes = v * mult;
    if (bytes >= 18446744073709551615.0 || bytes != floor(bytes))
        return -1;
    *out = (size_t)bytes;
    return 0;
}

int qs_parse_bool(const char *s, bool *out)
{
    static const char *yes[] = {"true", "1", "yes", "on"}, *no[] = {"false", "0", "no", "off"};
    if (!s)
        return -1;
    for (size_t i = 0; i < 4; i++) {
        if (!strcasecmp(s, yes[i])) {
            *out = true;
            return 0;
        }
        if (!strcasecmp(s, no[i])) {
            *out = false;
            return 0;
        }
    }
    return -1;
}

const char *qs_device_choice_name(qs_device_choice d)
{
    switch (d) {
    case QS_DEVICE_CPU: return "cpu";
    case QS_DEVICE_CUDA: return "cuda";
    default: return "auto";
    }
}

int qs_device_choice_from_name(const char *s, qs_device_choice *out)
{
    if (!s)
        return -1;
    if (!strcasecmp(s, "auto"))
        *out = QS_DEVICE_AUTO;
    else if (!strcasecmp(s, "cpu"))
        *out = QS_DEVICE_CPU;
    else if (!strcasecmp(s, "cuda") || !strcasecmp(s, "gpu"))
        *out = QS_DEVICE_CUDA;
    else
        return -1;
    return 0;
}

int qs_config_check_string_list(const char *flag, const char *json, qs_err *err)
{
    cJSON *v = cJSON_Parse(json);
    bool ok = cJSON_IsArray(v);
    const cJSON *it;
    cJSON_ArrayForEach(it, v) ok = ok && cJSON_IsString(it);
    cJSON_Delete(v);
    if (!ok)
        return qs_errf(err, "%s: expected a JSON list of strings such as [\"*\"] or [\"https://a.example\"], got '%.200s'",
                       flag, json);
    return 0;
}

int qs_config_check_json_object(const char *flag, const char *json, qs_err *err)
{
    cJSON *v = cJSON_Parse(json);
    bool ok = cJSON_IsObject(v);
    cJSON_Delete(v);
    if (!ok)
        return qs_errf(err, "%s: expected a JSON object, got '%.200s'", flag, json);
    return 0;
}

/* Interned strings: a list reachable from this static head, so they are never leaks. */
typedef struct interned {
    struct interned *next;
    char text[];
} interned;
static interned *interned_head;
static pthread_mutex_t interned_mu = PTHREAD_MUTEX_INITIALIZER;

const char *qs_config_intern(const char *s)
{
    size_t n = strlen(s);
    interned *e = malloc(sizeof *e + n + 1);
    if (!e)
        return NULL;
    memcpy(e->text, s, n + 1);
    pthread_mutex_lock(&interned_mu);
    e->next = interned_head;
    interned_head = e;
    pthread_mutex_unlock(&interned_mu);
    return e->text;
}
