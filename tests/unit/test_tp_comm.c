/* test_tp_comm.c — the communicators of src/parallel: the one-rank one is the identity, and the
 * MPI one sums, gathers and broadcasts across two real ranks. Run directly, the binary runs itself
 * again under `mpirun -np 2` (as qserve -tp 2 does); rank 1's output is silenced so the cmocka
 * summary is counted once, and any rank's failure fails mpirun's exit status. Under ASan the
 * ranks get tests/lsan-openmpi.supp (Open MPI's own allocations held until exit). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parallel/comm.h"
#include "parallel/launch.h"

static qs_comm *g_mpi;

static void single_is_identity(void **state)
{
    qs_comm *c = qs_comm_single();
    qs_err e;
    float x[3] = {1, 2, 3}, g[3];
    assert_int_equal(c->size, 1);
    assert_int_equal(c->all_reduce_sum(c, x, 3, QS_COMM_F32, &e), 0);
    assert_true(x[0] == 1 && x[1] == 2 && x[2] == 3);
    assert_int_equal(c->all_gather(c, x, g, 3, QS_COMM_F32, &e), 0);
    assert_memory_equal(x, g, sizeof x);
    assert_int_equal(c->broadcast(c, x, 3, QS_COMM_F32, 0, QS_COMM_WAIT_STEP, &e), 0);
    assert_int_equal(c->barrier(c, &e), 0);
}

static void mpi_all_reduce_f32_and_bf16(void **state)
{
    if (!g_mpi)
        skip();
    qs_comm *c = g_mpi;
    qs_err e;
    float x[1000];
    for (int i = 0; i < 1000; i++)
        x[i] = (float)(i * (c->rank + 1)) * 0.5f;
    assert_int_equal(c->all_reduce_sum(c, x, 1000, QS_COMM_F32, &e), 0);
    for (int i = 0; i < 1000; i++) /* rank 0 gives i/2, rank 1 gives i */
        assert_true(fabsf(x[i] - 1.5f * (float)i) < 1e-3f);
    uint16_t b[4] = {0x3f80, 0x4000, 0xbf80, 0x0000}; /* 1, 2, -1, 0 on every rank */
    assert_int_equal(c->all_reduce_sum(c, b, 4, QS_COMM_BF16, &e), 0);
    assert_int_equal(b[0], 0x4000); /* 2 */
    assert_int_equal(b[1], 0x4080); /* 4 */
    assert_int_equal(b[2], 0xc000); /* -2 */
    assert_int_equal(b[3], 0x0000);
}

static void mpi_all_gather_in_rank_order(void **state)
{
    if (!g_mpi)
        skip();
    qs_comm *c = g_mpi;
    qs_err e;
    int32_t mine[3] = {10 * c->rank, 10 * c->rank + 1, 10 * c->rank + 2}, all[6];
    assert_int_equal(c->all_gather(c, mine, all, 3, QS_COMM_I32, &e), 0);
    int32_t want[6] = {0, 1, 2, 10, 11, 12};
    assert_memory_equal(all, want, sizeof want);
}

static void mpi_broadcast_from_root(void **state)
{
    if (!g_mpi)
        skip();
    qs_comm *c = g_mpi;
    qs_err e;
    int32_t v[5];
    for (int i = 0; i < 5; i++)
        v[i] = c->rank == 0 ? 7 * i : -1;
    assert_int_equal(c->broadcast(c, v, 5, QS_COMM_I32, 0, QS_COMM_WAIT_IDLE, &e), 0);
    for (int i = 0; i < 5; i++)
        assert_int_equal(v[i], 7 * i);
    float f = c->rank == 1 ? 2.5f : 0.0f;
    assert_int_equal(c->broadcast(c, &f, 1, QS_COMM_F32, 1, QS_COMM_WAIT_STEP, &e), 0);
    assert_true(f == 2.5f);
    assert_int_equal(c->barrier(c, &e), 0);
}

int main(int argc, char **argv)
{
    int world = 0;
    qs_err e;
    if (!qs_launch_is_mpi_rank(&world)) {
        setenv("QSERVE_TP_TIMEOUT", "30", 0);
        /* sanitized builds: what Open MPI keeps until exit is not ours (full stacks to match it) */
        char supp[4096 + 64], *abs = realpath("tests/lsan-openmpi.supp", NULL);
        if (abs) {
            snprintf(supp, sizeof supp, "suppressions=%s:fast_unwind_on_malloc=0", abs);
            setenv("LSAN_OPTIONS", supp, 0);
            free(abs);
        }
        int st = qs_launch_run_under_mpirun(2, argc, argv, &e);
        if (st >= 0) /* the two ranks ran the tests */
            return st;
        fprintf(stderr, "test_tp_comm: %s; only the one-rank tests run\n", e.msg);
    } else {
        g_mpi = qs_comm_mpi(2, &e);
        if (!g_mpi) {
            fprintf(stderr, "test_tp_comm: %s\n", e.msg);
            return 1;
        }
        if (g_mpi->rank != 0 && (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr)))
            return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(single_is_identity),
        cmocka_unit_test(mpi_all_reduce_f32_and_bf16),
        cmocka_unit_test(mpi_all_gather_in_rank_order),
        cmocka_unit_test(mpi_broadcast_from_root),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    if (g_mpi)
        g_mpi->destroy(g_mpi);
    return rc;
}
