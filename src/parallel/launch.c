/* launch.c — starts the ranks of a one-host tensor-parallel run by running qserve again under
 * mpirun (see launch.h). mpirun owns the job: a rank that dies takes the others down with a
 * message naming it; this process only waits, and turns SIGINT/SIGTERM into the SIGUSR2 that
 * mpirun passes on to the ranks. */
#include "parallel/launch.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

bool qs_launch_is_mpi_rank(int *world)
{
    const char *v = getenv("OMPI_COMM_WORLD_SIZE");
    if (!v || !*v)
        v = getenv("PMIX_SIZE");
    if (!v || !*v)
        return false;
    *world = atoi(v);
    return true;
}

static bool on_path(const char *prog)
{
    const char *path = getenv("PATH");
    if (!path)
        return false;
    char buf[4096];
    for (const char *p = path; *p;) {
        const char *e = strchr(p, ':');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        snprintf(buf, sizeof buf, "%.*s/%s", (int)n, p, prog);
        if (access(buf, X_OK) == 0)
            return true;
        if (!e)
            break;
        p = e + 1;
    }
    return false;
}

static volatile sig_atomic_t g_child;

static void forward_stop(int sig)
{
    (void)sig;
    if (g_child > 0)
        kill(g_child, QS_LAUNCH_STOP_SIGNAL);
}

int qs_launch_run_under_mpirun(int np, int argc, char **argv, qs_err *err)
{
    if (!on_path("mpirun"))
        return qs_errf(err, "--tensor-parallel-size %d starts its ranks with Open MPI's mpirun, which is not on PATH "
                            "(apt-get install openmpi-bin)",
                       np);
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return qs_errf(err, "--tensor-parallel-size %d: cannot find this program (/proc/self/exe)", np);
    self[n] = 0;
    char nps[16];
    snprintf(nps, sizeof nps, "%d", np);
    char **av = calloc((size_t)argc + 16, sizeof *av);
    if (!av)
        return qs_errf(err, "out of memory");
    int k = 0;
    av[k++] = "mpirun";
    av[k++] = "-np";
    av[k++] = nps;
    av[k++] = "--oversubscribe";  /* ranks may outnumber cores: correctness before speed */
    av[k++] = "--bind-to";        /* each rank runs a thread pool; pinning it to one core starves it */
    av[k++] = "none";
    if (geteuid() == 0)
        av[k++] = "--allow-run-as-root"; /* containers run as root; mpirun refuses it otherwise */
    av[k++] = self;
    for (int i = 1; i < argc; i++)
        av[k++] = argv[i];
    av[k] = NULL;
    fflush(stdout);
    fflush(stderr);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        free(av);
        return qs_errf(err, "--tensor-parallel-size %d: cannot fork mpirun: %s", np, strerror(errno));
    }
    if (pid == 0) {
        setpgid(0, 0);                  /* a terminal's Ctrl-C reaches this process, not mpirun */
        prctl(PR_SET_PDEATHSIG, SIGTERM); /* this process gone: mpirun ends the job */
        if (getppid() != parent)
            _exit(1);
        execvp("mpirun", av);
        fprintf(stderr, "error: --tensor-parallel-size %d: cannot run mpirun: %s\n", np, strerror(errno));
        _exit(127);
    }
    free(av);
    g_child = pid;
    struct sigaction sa = {.sa_handler = forward_stop};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return qs_errf(err, "--tensor-parallel-size %d: waiting for mpirun: %s", np, strerror(errno));
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    if (code != 0)
        fprintf(stderr, "error: --tensor-parallel-size %d: the ranks ended with status %d (mpirun's message above "
                        "names the rank that failed)\n", np, code);
    return code;
}
