/* comm_single.c — the one-rank communicator used without tensor parallelism: every collective is
 * the identity (all-gather a copy), so the forward pass calls it unconditionally at no cost and
 * qserve never touches MPI. */
#include <stdlib.h>
#include <string.h>

#include "parallel/comm.h"
#include "util/log.h"

size_t qs_comm_dtype_size(qs_comm_dtype dt) { return dt == QS_COMM_BF16 ? 2 : 4; }

double qs_comm_timeout_from_env(void)
{
    const char *v = getenv("QSERVE_TP_TIMEOUT");
    double t = v && *v ? atof(v) : 0;
    return t > 0 ? t : 60.0;
}

static int single_all_reduce(qs_comm *c, void *buf, int64_t count, qs_comm_dtype dt, qs_err *err) { return 0; }

static int single_all_gather(qs_comm *c, const void *send, void *recv, int64_t count, qs_comm_dtype dt, qs_err *err)
{
    if (recv != send)
        memmove(recv, send, (size_t)count * qs_comm_dtype_size(dt));
    return 0;
}

static int single_broadcast(qs_comm *c, void *buf, int64_t count, qs_comm_dtype dt, int root, qs_comm_wait wait,
                            qs_err *err)
{
    return root == 0 ? 0 : qs_errf(err, "broadcast from rank %d in a one-rank group", root);
}

static int single_barrier(qs_comm *c, qs_err *err) { return 0; }

static void single_abort(qs_comm *c, const char *why)
{
    qs_error("%s", why);
    exit(1);
}

static void single_destroy(qs_comm *c) {}

qs_comm *qs_comm_single(void)
{
    static qs_comm one = {.name = "single",
                          .rank = 0,
                          .size = 1,
                          .timeout_s = 0,
                          .all_reduce_sum = single_all_reduce,
                          .all_gather = single_all_gather,
                          .broadcast = single_broadcast,
                          .barrier = single_barrier,
                          .abort = single_abort,
                          .destroy = single_destroy};
    one.timeout_s = qs_comm_timeout_from_env(); /* (what a device communicator over it inherits) */
    return &one;
}
