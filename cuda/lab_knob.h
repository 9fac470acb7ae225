// lab_knob.h — lab switches of the CUDA host code (QSERVE_ATTN_GROUPED, QSERVE_ATTN_PREFILL,
// QSERVE_OPS_PDL, marlin's QSERVE_MARLIN_*): the value the product runs is `shipped`; only a dev
// build (`make dev`: -DQS_DEV_KNOBS, dev/README.md) reads the environment variable `name` in its
// place, so the lab can force a kernel or a setting for an A/B measurement or a test of the path
// the product does not take there. The product reads none of these variables.
#ifndef QS_CUDA_LAB_KNOB_H
#define QS_CUDA_LAB_KNOB_H

#include <stdlib.h>

// `name`'s value as a whole number in a dev build when set and not empty, else `shipped`.
static inline int qs_lab_knob(const char *name, int shipped)
{
#ifdef QS_DEV_KNOBS
    const char *e = getenv(name);
    return e && *e ? atoi(e) : shipped;
#else
    (void)name;
    return shipped;
#endif
}

#endif
