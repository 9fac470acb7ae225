/* server_proc.c — start, health-wait and stop of the server under test (see server_proc.h). */
#include "eval/server_proc.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "eval/interrupt.h"
#include "eval/shell_split.h"
#include "util/fileio.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

static bool is_executable_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

static bool search_path(const char *name, char *out, size_t cap)
{
    const char *path = getenv("PATH");
    if (!path)
        return false;
    while (*path) {
        size_t len = strcspn(path, ":");
        char cand[4096];
        snprintf(cand, sizeof cand, "%.*s/%s", (int)(len ? len : 1), len ? path : ".", name);
        if (is_executable_file(cand)) {
            snprintf(out, cap, "%s", cand);
            return true;
        }
        path += len + (path[len] == ':');
    }
    return false;
}

int qs_eval_find_server_binary(const char *given, char *out, size_t cap, qs_err *err)
{
    if (given) {
        if (strchr(given, '/')) {
            if (is_executable_file(given)) {
                snprintf(out, cap, "%s", given);
                return 0;
            }
            return qs_errf(err, "server binary '%s' (from --server) does not exist or is not executable", given);
        }
        if (search_path(given, out, cap))
            return 0;
        return qs_errf(err, "server binary '%s' (from --server) is not in PATH", given);
    }
    char self[4096], next_to_self[4200] = "(unknown)";
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = '\0';
        char *slash = strrchr(self, '/');
        if (slash) {
            *slash = '\0';
            snprintf(next_to_self, sizeof next_to_self, "%s/qserve", self);
            if (is_executable_file(next_to_self)) {
                snprintf(out, cap, "%s", next_to_self);
                return 0;
            }
        }
    }
    if (search_path("qserve", out, cap))
        return 0;
    return qs_errf(err, "no qserve binary: not given with --server, not at %s, not in PATH", next_to_self);
}

int qs_eval_free_port(int *port, qs_err *err)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return qs_errf(err, "socket: %s", strerror(errno));
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
        int e = errno;
        close(fd);
        return qs_errf(err, "finding a free port on 127.0.0.1: %s", strerror(e));
    }
    close(fd);
    *port = ntohs(a.sin_port);
    return 0;
}

void qs_eval_tail_file(const char *path, int max_lines, char *buf, size_t cap)
{
    buf[0] = '\0';
    char *text;
    size_t len;
    qs_err ignored;
    if (cap == 0 || qs_read_file(path, &text, &len, &ignored) != 0)
        return;
    while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == '\r'))
        text[--len] = '\0';
    /* Walk back max_lines newlines, but no further than what fits. */
    size_t start = len;
    int lines = 0;
    while (start > 0 && lines < max_lines) {
        size_t prev = start - 1;
        while (prev > 0 && text[prev - 1] != '\n')
            prev--;
        size_t need = (len - prev) + 3 * (size_t)(lines + 1);
        if (need + 1 > cap && lines > 0)
            break;
        start = prev;
        lines++;
    }
    size_t n = 0;
    for (size_t i = start; i < len && n + 4 < cap; i++) {
        if (i == start || text[i - 1] == '\n') {
            buf[n++] = ' ';
            buf[n++] = ' ';
        }
        buf[n++] = text[i];
    }
    buf[n] = '\0';
    free(text);
}

static size_t discard_body(char *ptr, size_t size, size_t nmemb, void *ctx)
{
    (void)ptr;
    (void)ctx;
    return size * nmemb;
}

/* GET /health once; true on 200. */
static bool health_ok(CURL *curl, const char *url)
{
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, discard_body);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, 2000L);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_NOPROXY, "*");
    long code = 0;
    if (curl_easy_perform(curl) != CURLE_OK)
        return false;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &code);
    return code == 200;
}

static void describe_status(int status, char *buf, size_t cap)
{
    if (WIFEXITED(status))
        snprintf(buf, cap, "exit status %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        snprintf(buf, cap, "killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
    else
        snprintf(buf, cap, "status %d", status);
}

int qs_eval_server_log_error(const qs_eval_server *s, qs_err *err, const char *what)
{
    char tail[640];
    qs_eval_tail_file(s->log_path, 12, tail, sizeof tail);
    return qs_errf(err, "%s; server log %s, last lines:\n%s", what, s->log_path, tail[0] ? tail : "  (empty)");
}

const char *qs_eval_flag_value(const qs_eval_strlist *args, const char *flag)
{
    const char *value = NULL;
    size_t n = strlen(flag);
    for (size_t i = 0; i < args->count; i++) {
        const char *a = args->items[i];
        if (!strcmp(a, flag) && i + 1 < args->count)
            value = args->items[++i];
        else if (!strncmp(a, flag, n) && a[n] == '=')
            value = a + n + 1;
    }
    return value;
}

bool qs_eval_server_exited(qs_eval_server *s, char *how, size_t cap)
{
    int status;
    if (s->pid <= 0 || waitpid(s->pid, &status, WNOHANG) != s->pid)
        return false;
    describe_status(status, how, cap);
    kill(-s->pid, SIGKILL); /* anything it left behind in its group */
    s->pid = 0;
    qs_eval_set_server_group(0);
    return true;
}

static void build_command(const qs_eval_server *s, const qs_eval_strlist *argv, char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < argv->count && n + 2 < cap; i++) {
        char q[1024];
        qs_shell_quote(argv->items[i], q, sizeof q);
        n += (size_t)snprintf(buf + n, cap - n, "%s%s", i ? " " : "", q);
    }
    (void)s;
}

static int spawn(const qs_eval_server_opts *o, const qs_eval_strlist *argv, qs_eval_server *s, qs_err *err)
{
    int log_fd;
    if (o->log_path) {
        snprintf(s->log_path, sizeof s->log_path, "%s", o->log_path);
        log_fd = open(s->log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    } else {
        snprintf(s->log_path, sizeof s->log_path, "/tmp/qserve-eval-server-XXXXXX.log");
        log_fd = mkstemps(s->log_path, 4);
    }
    if (log_fd < 0)
        return qs_errf(err, "cannot create the server log '%s': %s", s->log_path, strerror(errno));
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(log_fd);
        return qs_errf(err, "fork: %s", strerror(errno));
    }
    if (pid == 0) {
        setpgid(0, 0);
        int null_fd = open("/dev/null", O_RDONLY);
        if (null_fd >= 0)
            dup2(null_fd, STDIN_FILENO);
        dup2(log_fd, STDOUT_FILENO);
        dup2(log_fd, STDERR_FILENO);
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        signal(SIGHUP, SIG_DFL);
        signal(SIGPIPE, SIG_DFL);
        for (size_t i = 0; i < o->env->count; i++)
            putenv(o->env->items[i]);
        if (o->cache_only)
            setenv("HF_HUB_OFFLINE", "1", 1);
        execv(o->binary, argv->items);
        dprintf(STDERR_FILENO, "qserve-eval: cannot run %s: %s\n", o->binary, strerror(errno));
        _exit(127);
    }
    setpgid(pid, pid); /* also here, so the group exists before we might signal it */
    close(log_fd);
    s->pid = pid;
    qs_eval_set_server_group(pid);
    return 0;
}

int qs_eval_server_start(const qs_eval_server_opts *o, qs_eval_server *s, qs_err *err)
{
    memset(s, 0, sizeof *s);
    s->stop_grace_s = o->stop_grace_s > 0 ? o->stop_grace_s : 8.0;
    if (qs_eval_free_port(&s->port, err) != 0)
        return -1;
    snprintf(s->base_url, sizeof s->base_url, "http://127.0.0.1:%d", s->port);
    qs_eval_strlist argv = {0};
    char port[16];
    snprintf(port, sizeof port, "%d", s->port);
    bool has_host = false;
    for (size_t i = 0; i < o->args->count; i++)
        has_host |= !strcmp(o->args->items[i], "--host") || !strncmp(o->args->items[i], "--host=", 7);
    int rc = qs_eval_strlist_push(&argv, o->binary) | qs_eval_strlist_push(&argv, o->model_dir) |
             qs_eval_strlist_extend(&argv, o->args);
    if (o->served_model_name)
        rc |= qs_eval_strlist_push(&argv, "--served-model-name") | qs_eval_strlist_push(&argv, o->served_model_name);
    if (!has_host)
        rc |= qs_eval_strlist_push(&argv, "--host") | qs_eval_strlist_push(&argv, "127.0.0.1");
    rc |= qs_eval_strlist_push(&argv, "--port") | qs_eval_strlist_push(&argv, port) |
          qs_eval_strlist_push(&argv, "--seed") | qs_eval_strlist_push(&argv, "0");
    if (rc != 0) {
        qs_eval_strlist_free(&argv);
        return qs_errf(err, "out of memory");
    }
    build_command(s, &argv, s->command, sizeof s->command);
    rc = spawn(o, &argv, s, err);
    qs_eval_strlist_free(&argv);
    if (rc != 0)
        return -1;

    CURL *curl = curl_easy_init();
    if (!curl) {
        qs_eval_server_stop(s);
        return qs_errf(err, "curl_easy_init failed");
    }
    char url[128];
    snprintf(url, sizeof url, "%s/health", s->base_url);
    double deadline = now_s() + o->startup_wait_s;
    rc = -1;
    for (;;) {
        int status;
        pid_t w = waitpid(s->pid, &status, WNOHANG);
        if (w == s->pid) {
            char how[128], what[256];
            describe_status(status, how, sizeof how);
            snprintf(what, sizeof what, "the server exited unexpectedly before it was ready (%s)", how);
            kill(-s->pid, SIGKILL); /* anything it left behind in its group */
            s->pid = 0;
            qs_eval_set_server_group(0);
            qs_eval_server_log_error(s, err, what);
            break;
        }
        if (health_ok(curl, url)) {
            rc = 0;
            break;
        }
        if (qs_eval_interrupted()) {
            qs_errf(err, "interrupted while waiting for the server to start");
            break;
        }
        if (now_s() >= deadline) {
            char what[256];
            snprintf(what, sizeof what,
                     "the server failed to start in time: GET %s did not return 200 within "
                     "startup_max_wait_seconds=%g",
                     url, o->startup_wait_s);
            qs_eval_server_log_error(s, err, what);
            break;
        }
        /* 0.5 s between polls, in short steps so an interrupt or an exit is seen quickly. */
        for (int i = 0; i < 10 && !qs_eval_interrupted() && now_s() < deadline; i++)
            sleep_s(0.05);
    }
    curl_easy_cleanup(curl);
    if (rc != 0)
        qs_eval_server_stop(s);
    return rc;
}

int qs_eval_server_stop(qs_eval_server *s)
{
    if (s->pid <= 0)
        return -1;
    int status = 0;
    kill(-s->pid, SIGTERM);
    double deadline = now_s() + s->stop_grace_s;
    pid_t w = 0;
    while ((w = waitpid(s->pid, &status, WNOHANG)) == 0 && now_s() < deadline)
        sleep_s(0.02);
    if (w == 0) {
        kill(-s->pid, SIGKILL);
        waitpid(s->pid, &status, 0);
    } else {
        kill(-s->pid, SIGKILL); /* children the server left behind in its group */
    }
    s->pid = 0;
    qs_eval_set_server_group(0);
    return status;
}
