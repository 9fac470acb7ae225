/* launch.h — how tensor-parallel ranks come to exist on one host: a qserve started with
 * --tensor-parallel-size N outside MPI re-executes itself under Open MPI's mpirun (found on PATH),
 * so the user never types mpirun; one started by mpirun (one or several hosts) is already a rank. */
#ifndef QS_PARALLEL_LAUNCH_H
#define QS_PARALLEL_LAUNCH_H

#include <stdbool.h>

#include "util/error.h"

/* Whether this process is a rank that mpirun started; *world the number of ranks then. */
bool qs_launch_is_mpi_rank(int *world);
/* Replaces this process with `mpirun -np np ... /proc/self/exe argv[1..]` (--oversubscribe and
 * --bind-to none: ranks share this host's cores; as root, Open MPI's run-as-root switches).
 * Returns -1 with err only when that cannot happen (no mpirun on PATH). */
int qs_launch_reexec_under_mpirun(int np, int argc, char **argv, qs_err *err);

#endif
