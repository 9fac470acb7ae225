/* device.c — device choice (see device.h). The only CUDA knowledge here is cuda/device_query.h, and
 * only when the binary was built with nvcc; a CUDA build on a machine without a GPU or driver
 * finds 0 devices and runs on the CPU under --device auto. */
#include "device/device.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef QS_HAVE_CUDA
#include "device_query.h"
#endif

void qs_device_cpu(int threads, qs_device_caps *caps)
{
    memset(caps, 0, sizeof *caps);
    caps->platform = QS_PLATFORM_CPU;
    long n = threads > 0 ? threads : sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1)
        n = 1;
    snprintf(caps->name, sizeof caps->name, "CPU (%ld thread%s)", n, n == 1 ? "" : "s");
    caps->sm_count = (int)n;
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    caps->memory_bytes = pages > 0 && page > 0 ? (size_t)pages * (size_t)page : 0;
}

int qs_device_detect(qs_device_choice want, qs_device_caps *caps, qs_err *err)
{
    if (want == QS_DEVICE_CPU) {
        qs_device_cpu(0, caps);
        return 0;
    }
#ifdef QS_HAVE_CUDA
    int n = qs_cuda_device_count();
    if (n > 0)
        return qs_cuda_device_caps(0, caps, err);
    if (want == QS_DEVICE_CUDA)
        return qs_errf(err, "--device cuda: no usable CUDA GPU: %s; use --device cpu or auto",
                       qs_cuda_unavailable_reason()[0] ? qs_cuda_unavailable_reason() : "no devices found");
#else
    if (want == QS_DEVICE_CUDA)
        return qs_errf(err, "--device cuda: this qserve was built without CUDA (nvcc was not found at build "
                            "time); use --device cpu or auto");
#endif
    qs_device_cpu(0, caps);
    return 0;
}

int qs_device_assume(const char *cc, qs_device_caps *caps, qs_err *err)
{
    const char *s = cc ? cc : "";
    if (!strncmp(s, "sm_", 3) || !strncmp(s, "SM_", 3))
        s += 3;
    int major = -1, minor = -1;
    const char *dot = strchr(s, '.');
    char *end;
    if (dot) {
        long a = strtol(s, &end, 10);
        if (end != dot)
            goto bad;
        long b = strtol(dot + 1, &end, 10);
        if (*end || end == dot + 1 || !isdigit((unsigned char)dot[1]))
            goto bad;
        major = (int)a;
        minor = (int)b;
    } else {
        long v = strtol(s, &end, 10);
        if (*end || end == s)
            goto bad;
        major = (int)(v / 10);
        minor = (int)(v % 10);
    }
    if (major < 3 || major > 20 || minor < 0 || minor > 9)
        goto bad;
    memset(caps, 0, sizeof *caps);
    caps->platform = QS_PLATFORM_CUDA;
    caps->cc_major = major;
    caps->cc_minor = minor;
    caps->assumed = true;
    snprintf(caps->name, sizeof caps->name, "CUDA GPU");
    return 0;
bad:
    return qs_errf(err, "--assume-compute-capability: expected X.Y such as 8.0, 8.9, 9.0 or 10.0, got '%s'",
                   cc ? cc : "");
}

void qs_device_describe(const qs_device_caps *caps, char *buf, size_t cap)
{
    if (caps->platform == QS_PLATFORM_CPU) {
        snprintf(buf, cap, "%s", caps->name);
        return;
    }
    if (caps->assumed) {
        snprintf(buf, cap, "%s (compute capability %d.%d, assumed)", caps->name, caps->cc_major, caps->cc_minor);
        return;
    }
    snprintf(buf, cap, "%s (compute capability %d.%d, %d SMs, %.1f GiB)", caps->name, caps->cc_major,
             caps->cc_minor, caps->sm_count, (double)caps->memory_bytes / (1024.0 * 1024 * 1024));
}
