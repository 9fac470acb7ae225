/* eval_list.h — `qserve-eval --config-list FILE`: runs every config of a list one after the other
 * (each with its own server) and prints a pass / FAIL / skipped / ERROR table. */
#ifndef QS_EVAL_EVAL_LIST_H
#define QS_EVAL_EVAL_LIST_H

#include <stdio.h>

#include "eval/eval_run.h"

/* Returns the process exit code: 0 when every config passed or was skipped, 1 when any failed,
 * else 2 when any could not run (error), 2 as well when the list itself is unreadable. With
 * o->save_results the table is also written there as JSON (one object per config). */
int qs_eval_run_list(const char *list_path, const qs_eval_options *o, FILE *table_out);

#endif
