/* eval_list.c — the config-list driver of eval_list.h. Missing YAML files are reported as
 * errors in the table (vLLM's conftest prints "Missing" and drops them; a table entry is harder
 * to overlook). */
#include "eval/eval_list.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "eval/config_list.h"
#include "eval/interrupt.h"
#include "util/fileio.h"

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

int qs_eval_run_list(const char *list_path, const qs_eval_options *o, FILE *table_out)
{
    qs_err err;
    qs_eval_strlist paths = {0};
    if (qs_eval_read_config_list(list_path, &paths, &err) != 0) {
        fprintf(stderr, "qserve-eval: error: %s\n", err.msg);
        return 2;
    }
    qs_eval_outcome *outs = calloc(paths.count ? paths.count : 1, sizeof *outs);
    if (!outs) {
        qs_eval_strlist_free(&paths);
        fprintf(stderr, "qserve-eval: error: out of memory\n");
        return 2;
    }
    qs_eval_options each = *o;
    each.save_results = NULL;
    size_t ran = 0;
    for (; ran < paths.count && !qs_eval_interrupted(); ran++) {
        fprintf(stderr, "\n=== [%zu/%zu] %s ===\n", ran + 1, paths.count, paths.items[ran]);
        if (!qs_file_exists(paths.items[ran])) {
            outs[ran].status = QS_EVAL_ERROR;
            snprintf(outs[ran].reason, sizeof outs[ran].reason, "missing config file %s", paths.items[ran]);
            fprintf(stderr, "qserve-eval: error: %s\n", outs[ran].reason);
            continue;
        }
        qs_eval_run(paths.items[ran], &each, &outs[ran]);
    }
    int n_pass = 0, n_fail = 0, n_skip = 0, n_err = 0;
    fprintf(table_out, "\n%-48s %-8s %-9s %-8s %s\n", "config", "status", "accuracy", "needed", "note");
    cJSON *json = cJSON_CreateArray();
    for (size_t i = 0; i < paths.count; i++) {
        qs_eval_outcome *r = &outs[i];
        bool not_run = i >= ran;
        if (not_run) {
            r->status = QS_EVAL_ERROR;
            snprintf(r->reason, sizeof r->reason, "not run (interrupted)");
        }
        bool measured = r->status == QS_EVAL_PASSED || r->status == QS_EVAL_FAILED;
        n_pass += r->status == QS_EVAL_PASSED;
        n_fail += r->status == QS_EVAL_FAILED;
        n_skip += r->status == QS_EVAL_SKIPPED;
        n_err += r->status == QS_EVAL_ERROR;
        char acc[16] = "-", need[16] = "-", note[320];
        if (measured) {
            snprintf(acc, sizeof acc, "%.3f", r->accuracy);
            snprintf(need, sizeof need, "%.3f", r->needed);
        }
        /* The note is the first line of the reason without the config path the row already names. */
        const char *reason = r->reason;
        size_t plen = strlen(paths.items[i]);
        if (!strncmp(reason, paths.items[i], plen) && !strncmp(reason + plen, ": ", 2))
            reason += plen + 2;
        int len = (int)strcspn(reason, "\n");
        if (len > 190)
            snprintf(note, sizeof note, "%.187s...", reason);
        else
            snprintf(note, sizeof note, "%.*s", len, reason);
        fprintf(table_out, "%-48s %-8s %-9s %-8s %s\n", base_name(paths.items[i]), qs_eval_status_name(r->status),
                acc, need, note);
        cJSON *row = cJSON_CreateObject();
        cJSON_AddStringToObject(row, "config", paths.items[i]);
        cJSON_AddStringToObject(row, "status", qs_eval_status_name(r->status));
        if (measured) {
            cJSON_AddNumberToObject(row, "accuracy", r->accuracy);
            cJSON_AddNumberToObject(row, "required_accuracy", r->needed);
        }
        cJSON_AddStringToObject(row, "reason", r->reason);
        cJSON_AddItemToArray(json, row);
    }
    fprintf(table_out, "%d passed, %d failed, %d skipped, %d errors\n", n_pass, n_fail, n_skip, n_err);
    int code = n_fail ? 1 : n_err ? 2 : 0;
    if (o->save_results) {
        char *text = cJSON_Print(json);
        if (!text || qs_write_file(o->save_results, text, strlen(text), &err) != 0) {
            fprintf(stderr, "qserve-eval: error: --save-results: %s\n", text ? err.msg : "out of memory");
            code = code ? code : 2;
        }
        free(text);
    }
    cJSON_Delete(json);
    free(outs);
    qs_eval_strlist_free(&paths);
    return code;
}
