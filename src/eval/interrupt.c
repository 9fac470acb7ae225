/* interrupt.c — the signal flag of interrupt.h. Only async-signal-safe calls in the handler. */
#include "eval/interrupt.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t g_signals;
static volatile sig_atomic_t g_server_group;

static void on_signal(int sig)
{
    g_signals++;
    if (g_signals == 1) {
        static const char msg[] = "\nqserve-eval: interrupted; stopping (press Ctrl-C again to kill at once)\n";
        (void)!write(STDERR_FILENO, msg, sizeof msg - 1);
        return;
    }
    if (g_server_group > 0)
        kill(-(pid_t)g_server_group, SIGKILL);
    _exit(128 + sig);
}

void qs_eval_install_signal_handlers(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

bool qs_eval_interrupted(void)
{
    return g_signals > 0;
}

void qs_eval_set_server_group(pid_t pgid)
{
    g_server_group = (sig_atomic_t)pgid;
}
