/* tp_launch.c — the start of a tensor-parallel `serve` or `generate` (see tp_launch.h). */
#include "cli/tp_launch.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "model/model_config.h"
#include "model/model_config_load.h"
#include "model/model_tp.h"
#include "parallel/launch.h"
#include "parallel/rank_gpu.h"
#include "util/log.h"
#include "util/parallel.h"

static int g_argc;
static char **g_argv;

void qs_cli_save_argv(int argc, char **argv)
{
    g_argc = argc;
    g_argv = argv;
}

/* A local model folder that cannot split over n ranks fails here, in one line, before any rank
 * starts (a hub name is resolved by the ranks, which then fail the same way, just later). */
static int check_split(const qs_config *cfg, int n, qs_err *err)
{
    char path[sizeof cfg->model_dir + 16];
    snprintf(path, sizeof path, "%s/config.json", cfg->model_dir);
    if (access(path, R_OK) != 0)
        return 0;
    qs_model_config mc;
    if (qs_model_config_load(cfg->model_dir, &mc, err))
        return -1;
    qs_tp_layout t;
    int rc = qs_tp_layout_plan(&mc, 0, n, cfg->enable_expert_parallel, &t, err);
    qs_model_config_free(&mc);
    return rc;
}

int qs_cli_tp_start(qs_config *cfg, int *rank, int *exit_status)
{
    *rank = 0;
    *exit_status = 0;
    int n = cfg->tensor_parallel_size, world = 0;
    if (n <= 1)
        return 0;
    qs_err err;
    if (!qs_launch_is_mpi_rank(&world)) {
        if (!g_argv) {
            fprintf(stderr, "error: --tensor-parallel-size %d: the command line was not saved\n", n);
            return -1;
        }
        if (check_split(cfg, n, &err)) {
            fprintf(stderr, "error: %s\n", err.msg);
            return -1;
        }
        int st = qs_launch_run_under_mpirun(n, g_argc, g_argv, &err);
        if (st < 0) {
            fprintf(stderr, "error: %s\n", err.msg);
            return -1;
        }
        *exit_status = st;
        return 1;
    }
    if (world != n) {
        fprintf(stderr, "error: --tensor-parallel-size %d, but mpirun started %d ranks (mpirun -np %d)\n", n, world, n);
        return -1;
    }
    /* ranks on one host share its cores: each gets its part unless --threads says otherwise */
    const char *local = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    int on_host = local && atoi(local) > 0 ? atoi(local) : 1;
    if (cfg->threads == 0) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        cfg->threads = cores / on_host > 1 ? (int)(cores / on_host) : 1;
    }
    qs_parallel_set_threads(cfg->threads);
    /* one GPU a rank, chosen before anything starts CUDA in this process (or MPI, which may) */
    const char *local_rank = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    int gpu = -1;
    if (cfg->device != QS_DEVICE_CPU &&
        qs_rank_gpu_select(local_rank ? atoi(local_rank) : 0, on_host, &gpu, &err) < 0) {
        fprintf(stderr, "error: %s\n", err.msg);
        return -1;
    }
    qs_comm *c = qs_tp_comm(n, &err);
    if (!c) {
        fprintf(stderr, "error: %s\n", err.msg);
        return -1;
    }
    *rank = c->rank;
    qs_info("tensor parallel: rank %d of %d (MPI, %d on this host, %d CPU threads; step deadline %.0f s)%s%s", c->rank,
            c->size, on_host, cfg->threads, c->timeout_s, gpu >= 0 ? "; GPU: CUDA_VISIBLE_DEVICES=" : "",
            gpu >= 0 ? getenv("CUDA_VISIBLE_DEVICES") : "");
    return 0;
}

void qs_cli_tp_fail(const qs_config *cfg, const char *msg)
{
    qs_comm *c = qs_tp_comm_current();
    if (cfg->tensor_parallel_size > 1 && c && c->size > 1)
        c->abort(c, msg); /* the other ranks would wait for this one forever */
}

int qs_cli_tp_agree_min(int *value, qs_err *err)
{
    qs_comm *c = qs_tp_comm_current();
    if (!c || c->size <= 1)
        return 0;
    int32_t least = *value;
    for (int r = 0; r < c->size; r++) { /* every rank's value in turn: the interface has no min */
        int32_t v = *value;
        if (c->broadcast(c, &v, 1, QS_COMM_I32, r, QS_COMM_WAIT_IDLE, err))
            return -1;
        if (v < least)
            least = v;
    }
    if (least != *value)
        qs_info("tensor parallel: %d KV blocks, the fewest any rank has room for (this one: %d)", least, *value);
    *value = least;
    return 0;
}

void qs_cli_tp_finish(void) { qs_tp_comm_shutdown(); }
