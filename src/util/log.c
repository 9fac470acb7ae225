/* log.c — leveled logging (see log.h). One fprintf per line so lines from threads never interleave. */
#include "util/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int g_level = -1;
static char g_tag[32];

void qs_log_set_tag(const char *tag) { snprintf(g_tag, sizeof g_tag, "%s", tag ? tag : ""); }

static int level_from_env(void)
{
    const char *s = getenv("QSERVE_LOG_LEVEL");
    if (!s)
        return QS_LOG_INFO;
    if (!strcmp(s, "debug"))
        return QS_LOG_DEBUG;
    if (!strcmp(s, "warn") || !strcmp(s, "warning"))
        return QS_LOG_WARN;
    if (!strcmp(s, "error"))
        return QS_LOG_ERROR;
    return QS_LOG_INFO;
}

void qs_log_set_level(qs_log_level level) { g_level = (int)level; }

void qs_log(qs_log_level level, const char *fmt, ...)
{
    if (g_level < 0)
        g_level = level_from_env();
    if ((int)level < g_level)
        return;
    static const char *names[] = {"DEBUG", "INFO", "WARN", "ERROR"};
    char msg[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    char ts[32];
    strftime(ts, sizeof ts, "%m-%d %H:%M:%S", &tm);
    if (g_tag[0])
        fprintf(stderr, "%s %s [%s] %s\n", names[level], ts, g_tag, msg);
    else
        fprintf(stderr, "%s %s %s\n", names[level], ts, msg);
}
