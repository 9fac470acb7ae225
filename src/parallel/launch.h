/* launch.h — how tensor-parallel ranks come to exist on one host: a qserve started with
 * --tensor-parallel-size N outside MPI re-executes itself under Open MPI's mpirun (found on PATH),
 * so the user never types mpirun; one started by mpirun (one or several hosts) is already a rank. */
#ifndef QS_PARALLEL_LAUNCH_H
#define QS_PARALLEL_LAUNCH_H

#include <signal.h>
#include <stdbool.h>

#include "util/error.h"

/* Whether this process is a rank that mpirun started; *world the number of ranks then. */
bool qs_launch_is_mpi_rank(int *world);
/* Runs `mpirun -np np ... /proc/self/exe argv[1..]` (--oversubscribe and --bind-to none: ranks
 * share this host's cores; as root, Open MPI's run-as-root switches) as a child in its own process
 * group and waits for it: SIGINT and SIGTERM to this process reach the ranks as SIGUSR2 (which
 * mpirun forwards, where it would kill the job on SIGTERM), so rank 0 drains as a one-process
 * server does; mpirun gets SIGTERM if this process dies. Returns the exit status to exit with, or
 * -1 with err when mpirun cannot be started (not on PATH). */
int qs_launch_run_under_mpirun(int np, int argc, char **argv, qs_err *err);
/* The signal a rank receives for "drain and stop": SIGUSR2. */
#define QS_LAUNCH_STOP_SIGNAL SIGUSR2

#endif
