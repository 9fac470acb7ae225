/* gsm8k_data.c — reading GSM8K's test.jsonl / train.jsonl (one {"question","answer"} object per
 * line, cJSON) and finding the folder that holds them. */
#include "eval/gsm8k.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/fileio.h"

static char *dup_string_field(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsString(v) ? strdup(v->valuestring) : NULL;
}

int qs_gsm8k_load(const char *path, qs_gsm8k_set *out, qs_err *err)
{
    memset(out, 0, sizeof *out);
    char *text;
    size_t len;
    if (qs_read_file(path, &text, &len, err) != 0)
        return -1;
    size_t cap = 0, line_no = 0;
    int rc = 0;
    for (char *line = text; line && *line && rc == 0;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        line_no++;
        if (line[0] != '#' && line[strspn(line, " \t\r")] != '\0') {
            cJSON *obj = cJSON_Parse(line);
            char *q = obj ? dup_string_field(obj, "question") : NULL;
            char *a = obj ? dup_string_field(obj, "answer") : NULL;
            cJSON_Delete(obj);
            if (!q || !a) {
                free(q);
                free(a);
                rc = qs_errf(err, "%s:%zu: expected a JSON object with string fields \"question\" and \"answer\"",
                             path, line_no);
                break;
            }
            if (out->count == cap) {
                cap = cap ? cap * 2 : 1024;
                qs_gsm8k_row *rows = realloc(out->rows, cap * sizeof *rows);
                if (!rows) {
                    free(q);
                    free(a);
                    rc = qs_errf(err, "%s: out of memory", path);
                    break;
                }
                out->rows = rows;
            }
            out->rows[out->count++] = (qs_gsm8k_row){q, a};
        }
        line = nl ? nl + 1 : NULL;
    }
    free(text);
    if (rc != 0)
        qs_gsm8k_free(out);
    return rc;
}

void qs_gsm8k_free(qs_gsm8k_set *set)
{
    for (size_t i = 0; i < set->count; i++) {
        free(set->rows[i].question);
        free(set->rows[i].answer);
    }
    free(set->rows);
    set->rows = NULL;
    set->count = 0;
}

static bool has_both_files(const char *dir)
{
    char p[4096];
    return qs_file_exists(qs_path_join(p, sizeof p, dir, "test.jsonl")) &&
           qs_file_exists(qs_path_join(p, sizeof p, dir, "train.jsonl"));
}

int qs_gsm8k_find_data_dir(const char *given, char *out, size_t cap, qs_err *err)
{
    const char *env = getenv("QSERVE_GSM8K_DIR");
    const char *dir, *source;
    char fallback[4096];
    if (given) {
        dir = given;
        source = "--data-dir";
    } else if (env && *env) {
        dir = env;
        source = "$QSERVE_GSM8K_DIR";
    } else {
        qs_path_join(fallback, sizeof fallback, qs_shared_data_dir(), "gsm8k");
        dir = fallback;
        source = "the default (no --data-dir, $QSERVE_GSM8K_DIR unset; relative to the current directory)";
    }
    if (!has_both_files(dir))
        return qs_errf(err, "GSM8K data not found: '%s' from %s does not hold both test.jsonl and train.jsonl",
                       dir, source);
    if ((size_t)snprintf(out, cap, "%s", dir) >= cap)
        return qs_errf(err, "GSM8K data directory path too long: '%s'", dir);
    return 0;
}
