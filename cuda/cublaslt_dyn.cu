// cublaslt_dyn.cu — dlopen of libcublasLt on first use (see cublaslt_dyn.h). Looks for the
// soname next to the CUDA runtime the binary was built against, then on the loader's path.
#include <dlfcn.h>
#include <mutex>
#include <stdio.h>

#include "dl_bind.cuh"
#include "cublaslt_dyn.h"

namespace {
std::once_flag g_once;
qs_cublaslt_api g_api;
bool g_ok;
char g_error[512];

template <typename T> bool bind(void *lib, const char *name, T *slot)
{
    return qs_dl_bind(lib, "libcublasLt", name, slot, g_error, sizeof g_error);
}

void load()
{
    char soname[64];
    snprintf(soname, sizeof soname, "libcublasLt.so.%d", CUBLAS_VER_MAJOR);
    const char *candidates[] = {soname, "/usr/local/cuda/lib64/libcublasLt.so", "libcublasLt.so"};
    void *lib = nullptr;
    for (const char *c : candidates)
        if ((lib = dlopen(c, RTLD_NOW | RTLD_LOCAL)))
            break;
    if (!lib) {
        snprintf(g_error, sizeof g_error, "cannot load %s: %s", soname, dlerror());
        return;
    }
    g_ok = bind(lib, "cublasLtCreate", &g_api.Create) && bind(lib, "cublasLtMatmulDescCreate", &g_api.MatmulDescCreate) &&
           bind(lib, "cublasLtMatmulDescSetAttribute", &g_api.MatmulDescSetAttribute) &&
           bind(lib, "cublasLtMatmulDescDestroy", &g_api.MatmulDescDestroy) &&
           bind(lib, "cublasLtMatrixLayoutCreate", &g_api.MatrixLayoutCreate) &&
           bind(lib, "cublasLtMatrixLayoutDestroy", &g_api.MatrixLayoutDestroy) &&
           bind(lib, "cublasLtMatmulPreferenceCreate", &g_api.MatmulPreferenceCreate) &&
           bind(lib, "cublasLtMatmulPreferenceSetAttribute", &g_api.MatmulPreferenceSetAttribute) &&
           bind(lib, "cublasLtMatmulPreferenceDestroy", &g_api.MatmulPreferenceDestroy) &&
           bind(lib, "cublasLtMatmulAlgoGetHeuristic", &g_api.MatmulAlgoGetHeuristic) &&
           bind(lib, "cublasLtMatmul", &g_api.Matmul) && bind(lib, "cublasLtGetStatusString", &g_api.GetStatusString) &&
           bind(lib, "cublasLtGetVersion", &g_api.GetVersion);
}
} // namespace

const qs_cublaslt_api *qs_cublaslt(qs_err *err)
{
    std::call_once(g_once, load);
    if (!g_ok) {
        qs_errf(err, "%s", g_error);
        return nullptr;
    }
    return &g_api;
}

const char *qs_cublaslt_status_string(cublasStatus_t st)
{
    const qs_cublaslt_api *api = qs_cublaslt(nullptr);
    return api ? api->GetStatusString(st) : "cuBLASLt status (library not loaded)";
}
