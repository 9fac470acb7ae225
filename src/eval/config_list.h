/* config_list.h — a config list file (vLLM's configs/NAME.txt): one YAML path per line, relative to
 * the list file's folder; blank lines and lines starting with '#' are skipped. */
#ifndef QS_EVAL_CONFIG_LIST_H
#define QS_EVAL_CONFIG_LIST_H

#include "eval/strlist.h"
#include "util/error.h"

/* Appends the resolved paths to out. Missing YAML files are kept (the caller reports them). */
int qs_eval_read_config_list(const char *list_path, qs_eval_strlist *out, qs_err *err);

#endif
