/* backends.h — the backends built into this binary (core/backend.h), and what the layers above
 * ask of them: the one for a platform, its ops table, every kernel descriptor. */
#ifndef QS_DEVICE_BACKENDS_H
#define QS_DEVICE_BACKENDS_H

#include "core/backend.h"

/* Every backend built in, the CPU first. */
const qs_backend *const *qs_backends(int *count);
/* The backend of a platform, or NULL when this build has none for it. */
const qs_backend *qs_backend_for_platform(qs_platform platform);
/* The ops of a platform, or NULL with err when this build has none for it. */
const qs_ops *qs_ops_for_platform(qs_platform platform, qs_err *err);
/* Every kernel descriptor of every backend, backend by backend in qs_backends' order. */
const qs_kernel *const *qs_backends_kernels(int *count);

#endif
