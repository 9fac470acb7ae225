// marlin_occupancy.cu — how many CTAs of a marlin kernel stay resident per SM (marlin.h), asked
// of the occupancy API once per kernel. Every marlin kernel's host side sizes its grid by it, so it
// sits below them all rather than in any one of them.
#include <algorithm>

#include "cuda_check.h"
#include "marlin.h"

namespace qs_marlin {

int ctas_per_sm(const void *kernel, int threads, size_t smem, qs_err *err)
{
    // One entry per kernel instance (a few dozen), filled once: the occupancy query is host
    // work the eager decode path should not pay per call.
    static struct {
        const void *kernel;
        int ctas;
    } known[64];
    static int n_known = 0;
    for (int i = 0; i < n_known; i++)
        if (known[i].kernel == kernel)
            return known[i].ctas;
    if (smem > 48 * 1024)
        QS_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem), err);
    int ctas = 0;
    QS_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&ctas, kernel, threads, smem), err);
    ctas = std::max(ctas, 1);
    if (n_known < 64)
        known[n_known++] = {kernel, ctas};
    return ctas;
}

} // namespace qs_marlin
