/* device.c — device choice (see device.h). It asks the backends (device/backends.c) what they
 * see, naming none: a build without the CUDA backend has no CUDA platform to offer, and a CUDA
 * build on a machine without a GPU or driver finds 0 devices and runs on the CPU under
 * --device auto. */
#include "device/device.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/backends.h"

int qs_device_detect(qs_device_choice want, qs_device_caps *caps, qs_err *err)
{
    const qs_backend *cpu = qs_backend_for_platform(QS_PLATFORM_CPU);
    if (want == QS_DEVICE_CPU)
        return cpu->device_caps(0, caps, err);
    const qs_backend *gpu = qs_backend_for_platform(QS_PLATFORM_CUDA);
    if (gpu) {
        if (gpu->device_count() > 0)
            return gpu->device_caps(0, caps, err);
        if (want == QS_DEVICE_CUDA) {
            const char *why = gpu->unavailable_reason();
            return qs_errf(err, "--device cuda: no usable CUDA GPU: %s; use --device cpu or auto",
                           why[0] ? why : "no devices found");
        }
    } else if (want == QS_DEVICE_CUDA) {
        return qs_errf(err, "--device cuda: this qserve was built without CUDA (nvcc was not found at build "
                            "time); use --device cpu or auto");
    }
    return cpu->device_caps(0, caps, err);
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
