/* comm_mpi.c — the MPI communicator (Open MPI from Debian): one process per tensor-parallel rank,
 * collectives over MPI_COMM_WORLD on host buffers (the CPU ops' activations). Every collective is
 * non-blocking and polled against a deadline, so a rank that died or hangs ends the job with a
 * clear error (MPI_Abort) rather than a silent hang; polling yields the core, since ranks often
 * share cores with each other (mpirun --oversubscribe). BF16 sums use a user-defined op, which MPI
 * lacks. Built only where the MPI headers exist (QS_HAVE_MPI); elsewhere qs_comm_mpi says so. */
#include "parallel/comm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef QS_HAVE_MPI
#include <mpi.h>
#include <sched.h>
#include <time.h>

#include "util/log.h"

typedef struct {
    MPI_Datatype bf16;
    MPI_Op bf16_sum;
} mpi_impl;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static float bf16_to_f32(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint16_t f32_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest even */
    return (uint16_t)(u >> 16);
}

static void bf16_sum_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    const uint16_t *a = in;
    uint16_t *b = inout;
    for (int i = 0; i < *len; i++)
        b[i] = f32_to_bf16(bf16_to_f32(a[i]) + bf16_to_f32(b[i]));
}

static void mpi_abort(qs_comm *c, const char *why)
{
    qs_error("tensor parallel rank %d of %d: %s", c->rank, c->size, why);
    fflush(stdout);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 3);
    exit(3);
}

/* Polls req until it completes; past the step deadline the job ends (a peer died or hangs). */
static int wait_req(qs_comm *c, MPI_Request *req, qs_comm_wait wait, const char *what, qs_err *err)
{
    double start = now_s();
    for (long spins = 0;; spins++) {
        int done = 0;
        if (MPI_Test(req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
            return qs_errf(err, "tensor parallel: MPI %s failed", what);
        if (done)
            return 0;
        if (wait == QS_COMM_WAIT_STEP && now_s() - start > c->timeout_s) {
            char why[256];
            snprintf(why, sizeof why,
                     "%s waited %.0f s for the other ranks: a rank died or hangs (deadline QSERVE_TP_TIMEOUT=%.0f s); "
                     "ending the job",
                     what, now_s() - start, c->timeout_s);
            c->abort(c, why);
        }
        if (spins < 4096) {
            sched_yield();
        } else { /* idle: sleep, so an idle worker costs nothing */
            struct timespec ts = {0, wait == QS_COMM_WAIT_IDLE ? 200000 : 20000};
            nanosleep(&ts, NULL);
        }
    }
}

static int dtype_op(qs_comm *c, qs_comm_dtype dt, MPI_Datatype *mt, MPI_Op *op)
{
    mpi_impl *im = c->impl;
    *mt = dt == QS_COMM_F32 ? MPI_FLOAT : dt == QS_COMM_I32 ? MPI_INT32_T : im->bf16;
    *op = dt == QS_COMM_BF16 ? im->bf16_sum : MPI_SUM;
    return 0;
}

static int check_count(int64_t count, const char *what, qs_err *err)
{
    return count < 0 || count > 0x7fffffff ? qs_errf(err, "tensor parallel %s of %lld elements", what, (long long)count)
                                           : 0;
}

static int mpi_all_reduce(qs_comm *c, void *buf, int64_t count, qs_comm_dtype dt, qs_err *err)
{
    MPI_Datatype mt;
    MPI_Op op;
    MPI_Request req;
    dtype_op(c, dt, &mt, &op);
    if (check_count(count, "all-reduce", err) ||
        MPI_Iallreduce(MPI_IN_PLACE, buf, (int)count, mt, op, MPI_COMM_WORLD, &req) != MPI_SUCCESS)
        return qs_errf(err, "tensor parallel: MPI all-reduce of %lld elements failed", (long long)count);
    return wait_req(c, &req, QS_COMM_WAIT_STEP, "all-reduce", err);
}

static int mpi_all_gather(qs_comm *c, const void *send, void *recv, int64_t count, qs_comm_dtype dt, qs_err *err)
{
    MPI_Datatype mt;
    MPI_Op op;
    MPI_Request req;
    dtype_op(c, dt, &mt, &op);
    if (check_count(count * c->size, "all-gather", err) ||
        MPI_Iallgather(send, (int)count, mt, recv, (int)count, mt, MPI_COMM_WORLD, &req) != MPI_SUCCESS)
        return qs_errf(err, "tensor parallel: MPI all-gather of %lld elements failed", (long long)count);
    return wait_req(c, &req, QS_COMM_WAIT_STEP, "all-gather", err);
}

static int mpi_broadcast(qs_comm *c, void *buf, int64_t count, qs_comm_dtype dt, int root, qs_comm_wait wait,
                         qs_err *err)
{
    MPI_Datatype mt;
    MPI_Op op;
    MPI_Request req;
    dtype_op(c, dt, &mt, &op);
    if (check_count(count, "broadcast", err) ||
        MPI_Ibcast(buf, (int)count, mt, root, MPI_COMM_WORLD, &req) != MPI_SUCCESS)
        return qs_errf(err, "tensor parallel: MPI broadcast of %lld elements failed", (long long)count);
    return wait_req(c, &req, wait, "broadcast", err);
}

static int mpi_barrier(qs_comm *c, qs_err *err)
{
    MPI_Request req;
    if (MPI_Ibarrier(MPI_COMM_WORLD, &req) != MPI_SUCCESS)
        return qs_errf(err, "tensor parallel: MPI barrier failed");
    return wait_req(c, &req, QS_COMM_WAIT_IDLE, "barrier", err);
}

static void mpi_destroy(qs_comm *c)
{
    mpi_impl *im = c->impl;
    MPI_Op_free(&im->bf16_sum);
    MPI_Type_free(&im->bf16);
    free(im);
    free(c);
    int fin = 0;
    MPI_Finalized(&fin);
    if (!fin)
        MPI_Finalize();
}

qs_comm *qs_comm_mpi(int size, qs_err *err)
{
    int inited = 0, provided = 0;
    MPI_Initialized(&inited);
    if (!inited && MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) {
        qs_errf(err, "tensor parallel: MPI_Init_thread failed");
        return NULL;
    }
    if (inited)
        MPI_Query_thread(&provided);
    if (provided < MPI_THREAD_SERIALIZED) {
        qs_errf(err, "tensor parallel: this MPI gives thread level %d; qserve needs MPI_THREAD_SERIALIZED or more",
                provided);
        return NULL;
    }
    int rank = 0, world = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    if (world != size) {
        qs_errf(err, "--tensor-parallel-size %d, but MPI started %d ranks (mpirun -np %d)", size, world, world);
        return NULL;
    }
    qs_comm *c = calloc(1, sizeof *c);
    mpi_impl *im = calloc(1, sizeof *im);
    if (!c || !im) {
        free(c);
        free(im);
        qs_errf(err, "out of memory");
        return NULL;
    }
    MPI_Type_contiguous(2, MPI_BYTE, &im->bf16);
    MPI_Type_commit(&im->bf16);
    MPI_Op_create(bf16_sum_fn, 1, &im->bf16_sum);
    *c = (qs_comm){.name = "mpi",
                   .rank = rank,
                   .size = world,
                   .timeout_s = qs_comm_timeout_from_env(),
                   .all_reduce_sum = mpi_all_reduce,
                   .all_gather = mpi_all_gather,
                   .broadcast = mpi_broadcast,
                   .barrier = mpi_barrier,
                   .abort = mpi_abort,
                   .destroy = mpi_destroy,
                   .impl = im};
    return c;
}

#else /* built without MPI headers */

qs_comm *qs_comm_mpi(int size, qs_err *err)
{
    qs_errf(err, "--tensor-parallel-size %d needs MPI, and this qserve was built without it "
                 "(install libopenmpi-dev: scripts/install-deps.sh, then rebuild)",
            size);
    return NULL;
}

#endif
