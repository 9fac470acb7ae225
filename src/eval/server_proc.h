/* server_proc.h — running the qserve server for one eval, as vLLM's RemoteOpenAIServer does:
 * `BIN MODEL_DIR SERVER_ARGS --host 127.0.0.1 --port FREE_PORT --seed 0` in its own process
 * group, with the config's env added and stdout/stderr going to a log file; GET /health every
 * 0.5 s until 200; an early exit or a timeout is an error quoting the log's last lines. Stopping
 * sends SIGTERM to the group, then SIGKILL after a grace period. */
#ifndef QS_EVAL_SERVER_PROC_H
#define QS_EVAL_SERVER_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "eval/strlist.h"
#include "util/error.h"

typedef struct qs_eval_server_opts {
    const char *binary;            /* path of the server binary */
    const char *model_dir;
    const qs_eval_strlist *args;   /* split server_args */
    const qs_eval_strlist *env;    /* "KEY=VALUE" added to the environment */
    double startup_wait_s;
    const char *log_path;          /* NULL: a fresh /tmp/qserve-eval-server-XXXXXX.log */
    double stop_grace_s;           /* SIGTERM -> SIGKILL delay; 0 = 8 s */
    const char *served_model_name; /* not NULL: `--served-model-name NAME` is added */
    bool cache_only;               /* HF_HUB_OFFLINE=1 in the server's environment (after env) */
} qs_eval_server_opts;

typedef struct qs_eval_server {
    pid_t pid;                     /* 0 = not running */
    int port;
    double stop_grace_s;
    char log_path[1024];
    char base_url[64];             /* "http://127.0.0.1:PORT" */
    char command[4096];            /* the command line, shell-quoted, for logs */
} qs_eval_server;

/* The server binary: `given` (--server; a bare name is searched in PATH), else `qserve` next to
 * the running executable, else `qserve` in PATH. The error names every candidate. */
int qs_eval_find_server_binary(const char *given, char *out, size_t cap, qs_err *err);
/* A TCP port on 127.0.0.1 that is free right now. */
int qs_eval_free_port(int *port, qs_err *err);
/* Starts the server and waits until /health answers 200. On failure nothing is left running. */
int qs_eval_server_start(const qs_eval_server_opts *o, qs_eval_server *s, qs_err *err);
/* True (with "exit status N" / "killed by signal N" in how) when the server has exited by itself;
 * then the error of a run should quote its log (qs_eval_server_log_error). */
bool qs_eval_server_exited(qs_eval_server *s, char *how, size_t cap);
/* Fills err with `what` and the last lines of the server log; returns -1. */
int qs_eval_server_log_error(const qs_eval_server *s, qs_err *err, const char *what);
/* The value of `--flag VALUE` or `--flag=VALUE` in args (the last one), or NULL. */
const char *qs_eval_flag_value(const qs_eval_strlist *args, const char *flag);
/* Stops it (idempotent). Returns the exit status as waitpid reports it, or -1 if none ran. */
int qs_eval_server_stop(qs_eval_server *s);
/* The last `max_lines` lines of a file, each indented by two spaces, into buf ("" if unreadable). */
void qs_eval_tail_file(const char *path, int max_lines, char *buf, size_t cap);

#endif
