/* fd_limit.h — raises the open-file soft limit to the hard one and fits the connection cap
 * under it (fd_limit.c). */
#ifndef QS_SERVER_FD_LIMIT_H
#define QS_SERVER_FD_LIMIT_H

/* Raises RLIMIT_NOFILE's soft limit to its hard limit, logs both figures, and returns wanted
 * lowered to what the limit allows. */
int qs_fit_connections_to_fd_limit(int wanted);

#endif
