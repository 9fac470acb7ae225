/* interrupt.h — Ctrl-C / SIGTERM handling for qserve-eval. The first signal only sets a flag that
 * every wait loop of the harness polls (health wait, request loop), so the normal error path
 * stops the server; a second signal kills the server's process group at once and exits 130. */
#ifndef QS_EVAL_INTERRUPT_H
#define QS_EVAL_INTERRUPT_H

#include <stdbool.h>
#include <sys/types.h>

void qs_eval_install_signal_handlers(void);
bool qs_eval_interrupted(void);
/* The process group to kill on a second signal (0 = none). */
void qs_eval_set_server_group(pid_t pgid);

#endif
