// launch_pdl.cu — whether the decode step's small ops launch with programmatic dependent launch
// (launch_pdl.cuh), decided once for the process. The ops table (ops_cuda.cu), attention and the
// q/k/v split all ask it, so it lives below them.
#include <cuda_runtime.h>

#include "lab_knob.h"
#include "launch_pdl.cuh"

bool qs_ops_pdl()
{
    static const bool on = [] {
        int dev = 0, major = 0;
        return cudaGetDevice(&dev) == cudaSuccess &&
               cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess && major >= 9 &&
               qs_lab_knob("QSERVE_OPS_PDL", 1) != 0;
    }();
    return on;
}
