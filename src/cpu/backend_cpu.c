/* backend_cpu.c — the CPU backend's description (core/backend.h): always one device, the host,
 * with the RAM sysconf reports; the ops of ops_cpu*.c; no graphs; the reference kernels. */
#include "cpu/backend_cpu.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cpu/reference_kernels.h"

void qs_cpu_device_caps(int threads, qs_device_caps *caps)
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

static int cpu_device_count(void) { return 1; }

static const char *cpu_unavailable_reason(void) { return ""; }

static int cpu_device_caps(int ordinal, qs_device_caps *caps, qs_err *err)
{
    if (ordinal != 0)
        return qs_errf(err, "the CPU backend has one device (0), not %d", ordinal);
    qs_cpu_device_caps(0, caps);
    return 0;
}

static int cpu_mem_info(size_t *free_bytes, size_t *total_bytes, qs_err *err)
{
    long page = sysconf(_SC_PAGESIZE), total = sysconf(_SC_PHYS_PAGES), avail = sysconf(_SC_AVPHYS_PAGES);
    if (page <= 0 || total <= 0 || avail < 0)
        return qs_errf(err, "sysconf cannot say how much memory this machine has");
    *free_bytes = (size_t)avail * (size_t)page;
    *total_bytes = (size_t)total * (size_t)page;
    return 0;
}

static const qs_kernel *const CPU_KERNELS[] = {
    &qs_kernel_reference_linear,
    &qs_kernel_reference_moe,
};

const qs_backend qs_backend_cpu = {
    .name = "cpu",
    .platform = QS_PLATFORM_CPU,
    .device_count = cpu_device_count,
    .unavailable_reason = cpu_unavailable_reason,
    .device_caps = cpu_device_caps,
    .mem_info = cpu_mem_info,
    .ops = qs_ops_cpu,
    .graph = NULL,
    .kernels = CPU_KERNELS,
    .kernel_count = (int)(sizeof CPU_KERNELS / sizeof CPU_KERNELS[0]),
    .device_comm = NULL, /* the host (MPI) communicator works on CPU buffers */
};
