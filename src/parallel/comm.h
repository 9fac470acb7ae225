/* comm.h — the communicators tensor parallelism runs on, behind the interface of core/comm.h
 * (all-reduce sum, all-gather, broadcast, barrier), with two CPU implementations:
 * `single` (one rank, no MPI at all: every collective is the identity) and `mpi` (Open MPI, one
 * process per rank; comm_mpi.c). The GPU one (NCCL) lives under cuda/. Every collective of a step
 * has a deadline (timeout_s): a rank that died or hangs ends the job with a clear error instead of
 * a silent wait. */
#ifndef QS_PARALLEL_COMM_H
#define QS_PARALLEL_COMM_H

#include <stddef.h>

#include "core/comm.h"

/* The one-rank communicator (tp=1). */
qs_comm *qs_comm_single(void);
/* The MPI communicator over MPI_COMM_WORLD: initializes MPI (thread level MULTIPLE, since the
 * loader and the engine thread both call it) and checks the world has `size` ranks. NULL with err
 * when MPI is missing from this build, or the world's size differs. */
qs_comm *qs_comm_mpi(int size, qs_err *err);
/* Deadline of a step's collectives: QSERVE_TP_TIMEOUT (seconds), default 60. */
double qs_comm_timeout_from_env(void);
/* Bytes of one element of dt. */
size_t qs_comm_dtype_size(qs_comm_dtype dt);

#endif
