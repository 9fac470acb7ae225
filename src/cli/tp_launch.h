/* tp_launch.h — what `serve` and `generate` do first under --tensor-parallel-size N > 1: outside
 * MPI, re-execute the whole command line under mpirun (src/parallel/launch.h); inside, join the
 * MPI job, give each rank its share of the host's cores, and say which rank this process is. */
#ifndef QS_CLI_TP_LAUNCH_H
#define QS_CLI_TP_LAUNCH_H

#include "config/config.h"

/* main() keeps the original command line here, for the re-execution. */
void qs_cli_save_argv(int argc, char **argv);
/* 0 with *rank set (0 without tensor parallelism); -1 with a message on stderr; 1 when this
 * process ran the ranks under mpirun, which have ended: then *exit_status is what to exit with. */
int qs_cli_tp_start(qs_config *cfg, int *rank, int *exit_status);
/* Ends the job with `msg` when this process is one of several ranks (a load failed); else nothing. */
void qs_cli_tp_fail(const qs_config *cfg, const char *msg);
/* The smallest *value over the ranks, in *value on every rank (nothing without tensor
 * parallelism): each rank's KV cache must have the same block count, and a GPU's free memory,
 * which sizes it, differs from rank to rank. Waits without a deadline (ranks load at their pace). */
int qs_cli_tp_agree_min(int *value, qs_err *err);
/* Finalizes MPI when it was used. */
void qs_cli_tp_finish(void);

#endif
