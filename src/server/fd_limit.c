/* fd_limit.c — the open-file limit at start-up. Every connection is a descriptor, and a soft
 * limit left at the usual 1,024 would cap the server far below --max-connections; the soft limit
 * is raised to the hard one (the most an unprivileged process may ask for) and the connection
 * cap is then fitted under it, leaving room for model files, logs and the engine. */
#include "server/fd_limit.h"

#include <sys/resource.h>

#include "util/log.h"

#define FD_RESERVE 128 /* descriptors kept for everything that is not a client connection */

int qs_fit_connections_to_fd_limit(int wanted)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return wanted;
    rlim_t before = rl.rlim_cur;
    if (rl.rlim_cur != rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
            rl.rlim_cur = before;
    }
    long long soft = rl.rlim_cur == RLIM_INFINITY ? 1LL << 20 : (long long)rl.rlim_cur;
    long long fit = soft - FD_RESERVE;
    if (fit < 16)
        fit = 16;
    int cap = wanted < fit ? wanted : (int)fit;
    if (rl.rlim_cur != before)
        qs_info("open files: soft limit raised from %llu to %lld (the hard limit); at most %d connections",
                (unsigned long long)before, soft, cap);
    else
        qs_info("open files: limit %lld; at most %d connections", soft, cap);
    if (cap < wanted)
        qs_warn("--max-connections %d lowered to %d to fit the open-file limit %lld (raise it with ulimit -Hn)",
                wanted, cap, soft);
    return cap;
}
