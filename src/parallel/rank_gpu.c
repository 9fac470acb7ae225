/* rank_gpu.c — a tensor-parallel rank's GPU (see rank_gpu.h). */
#include "parallel/rank_gpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "device/backends.h"

/* The CUDA device count, asked in a child process: CUDA reads CUDA_VISIBLE_DEVICES once, when it
 * starts, so this process must not start it before narrowing the variable. -1 when the child fails. */
static int count_gpus_in_child(const qs_backend *cuda)
{
    int fd[2];
    if (pipe(fd))
        return -1;
    pid_t pid = fork();
    if (pid < 0) {
        close(fd[0]);
        close(fd[1]);
        return -1;
    }
    if (pid == 0) {
        close(fd[0]);
        int n = cuda->device_count();
        ssize_t w = write(fd[1], &n, sizeof n);
        _exit(w == (ssize_t)sizeof n ? 0 : 1);
    }
    close(fd[1]);
    int n = -1;
    if (read(fd[0], &n, sizeof n) != (ssize_t)sizeof n)
        n = -1;
    close(fd[0]);
    int st;
    waitpid(pid, &st, 0);
    return n;
}

int qs_rank_gpu_select(int local_rank, int local_size, int *gpu, qs_err *err)
{
    *gpu = -1;
    const qs_backend *cuda = qs_backend_for_platform(QS_PLATFORM_CUDA);
    if (!cuda || !cuda->device_count) /* a build without CUDA */
        return 0;
    const char *visible = getenv("CUDA_VISIBLE_DEVICES");
    char list[1024] = "";
    int n = 0;
    if (visible) { /* the user's own choice of GPUs: this rank takes one of them */
        snprintf(list, sizeof list, "%s", visible);
        for (char *p = list; *p; p++)
            n += (p == list || p[-1] == ',') && *p != ',';
    } else {
        n = count_gpus_in_child(cuda);
    }
    if (n <= 0)
        return 0;
    if (n < local_size)
        return qs_errf(err,
                       "--tensor-parallel-size: %d ranks on this host but %d GPU%s (NCCL runs one rank per GPU); "
                       "run the ranks on CPU with --device cpu, or on a host with a GPU per rank",
                       local_size, n, n == 1 ? "" : "s");
    *gpu = local_rank % n;
    char one[256];
    if (visible) {
        int i = 0;
        for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ","), i++)
            if (i == *gpu)
                snprintf(one, sizeof one, "%s", tok);
    } else {
        snprintf(one, sizeof one, "%d", *gpu);
    }
    if (setenv("CUDA_VISIBLE_DEVICES", one, 1))
        return qs_errf(err, "cannot set CUDA_VISIBLE_DEVICES");
    return 1;
}
