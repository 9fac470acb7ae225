/* log.h — leveled logging to stderr with a timestamp; QSERVE_LOG_LEVEL=debug|info|warn|error. */
#ifndef QS_UTIL_LOG_H
#define QS_UTIL_LOG_H

typedef enum { QS_LOG_DEBUG, QS_LOG_INFO, QS_LOG_WARN, QS_LOG_ERROR } qs_log_level;

void qs_log(qs_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void qs_log_set_level(qs_log_level level);
/* A tag after the level on every line ("rank 1" under tensor parallelism); "" for none. */
void qs_log_set_tag(const char *tag);

#define qs_debug(...) qs_log(QS_LOG_DEBUG, __VA_ARGS__)
#define qs_info(...) qs_log(QS_LOG_INFO, __VA_ARGS__)
#define qs_warn(...) qs_log(QS_LOG_WARN, __VA_ARGS__)
#define qs_error(...) qs_log(QS_LOG_ERROR, __VA_ARGS__)

#endif
