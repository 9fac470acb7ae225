// cublaslt_dyn.h — cuBLASLt loaded on first use with dlopen instead of at program start.
// Linking libcublasLt (540 MB) into qserve costs 1–2 s on every start, CPU-only runs and every
// CLI test included; only GPU runs need it. Code that calls cuBLASLt includes this header after
// <cublasLt.h>: the macros below route the calls through the table qs_cublaslt() fills.
#ifndef QS_CUDA_CUBLASLT_DYN_H
#define QS_CUDA_CUBLASLT_DYN_H

#include <cublasLt.h>

extern "C" {
#include "util/error.h"
}

struct qs_cublaslt_api {
    decltype(&::cublasLtCreate) Create;
    decltype(&::cublasLtMatmulDescCreate) MatmulDescCreate;
    decltype(&::cublasLtMatmulDescSetAttribute) MatmulDescSetAttribute;
    decltype(&::cublasLtMatmulDescDestroy) MatmulDescDestroy;
    decltype(&::cublasLtMatrixLayoutCreate) MatrixLayoutCreate;
    decltype(&::cublasLtMatrixLayoutDestroy) MatrixLayoutDestroy;
    decltype(&::cublasLtMatmulPreferenceCreate) MatmulPreferenceCreate;
    decltype(&::cublasLtMatmulPreferenceSetAttribute) MatmulPreferenceSetAttribute;
    decltype(&::cublasLtMatmulPreferenceDestroy) MatmulPreferenceDestroy;
    decltype(&::cublasLtMatmulAlgoGetHeuristic) MatmulAlgoGetHeuristic;
    decltype(&::cublasLtMatmul) Matmul;
    decltype(&::cublasLtGetStatusString) GetStatusString;
    decltype(&::cublasLtGetVersion) GetVersion;
};

// The loaded API, or NULL with err filled (library missing, symbol missing).
const qs_cublaslt_api *qs_cublaslt(qs_err *err);
// Status text that works whether or not the library could be loaded.
const char *qs_cublaslt_status_string(cublasStatus_t st);

#endif
