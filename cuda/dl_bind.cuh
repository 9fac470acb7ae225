// dl_bind.cuh — one symbol of a library opened with dlopen, bound to a typed function pointer; a
// missing symbol leaves `error` naming the library and the symbol. Shared by the run-time loaders
// of cuBLASLt (cublaslt_dyn.cu) and NCCL (comm_nccl.cu).
#pragma once

#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>

template <typename T>
bool qs_dl_bind(void *lib, const char *lib_name, const char *symbol, T *slot, char *error, size_t cap)
{
    *slot = reinterpret_cast<T>(dlsym(lib, symbol));
    if (!*slot)
        snprintf(error, cap, "%s has no symbol %s", lib_name, symbol);
    return *slot != nullptr;
}
