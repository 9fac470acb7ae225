/* comm.h — what a communicator is: the collectives tensor parallelism needs (all-reduce sum,
 * all-gather, broadcast, barrier) over buffers the ranks' ops own, as one table of function
 * pointers. The CPU implementations (single, MPI) live in src/parallel/, the GPU one (NCCL) in
 * cuda/comm_nccl.cu; each collective of a step has a deadline (timeout_s). */
#ifndef QS_CORE_COMM_H
#define QS_CORE_COMM_H

#include <stdbool.h>
#include <stdint.h>

#include "util/error.h"

typedef enum { QS_COMM_F32, QS_COMM_BF16, QS_COMM_I32 } qs_comm_dtype;

/* Waits: the comm's step deadline, or forever (a worker rank idling until the next step). */
typedef enum { QS_COMM_WAIT_STEP, QS_COMM_WAIT_IDLE } qs_comm_wait;

typedef struct qs_comm qs_comm;
struct qs_comm {
    const char *name;       /* "single", "mpi", "nccl" */
    int rank, size;
    double timeout_s;       /* deadline of one collective inside a step */
    /* buf[count] summed over the ranks, on every rank */
    int (*all_reduce_sum)(qs_comm *c, void *buf, int64_t count, qs_comm_dtype dt, qs_err *err);
    /* recv[size * count] = every rank's send[count], in rank order, on every rank */
    int (*all_gather)(qs_comm *c, const void *send, void *recv, int64_t count, qs_comm_dtype dt, qs_err *err);
    /* buf[count] of rank `root` on every rank */
    int (*broadcast)(qs_comm *c, void *buf, int64_t count, qs_comm_dtype dt, int root, qs_comm_wait wait,
                     qs_err *err);
    int (*barrier)(qs_comm *c, qs_err *err);
    /* Waits, against the deadline, for the collectives still queued on a device stream; NULL for
     * the CPU communicators, whose collectives are done when they return. */
    int (*sync)(qs_comm *c, qs_err *err);
    /* Ends every rank of the job with `why` (does not return for mpi). */
    void (*abort)(qs_comm *c, const char *why);
    void (*destroy)(qs_comm *c);
    void *impl;
};

#endif
