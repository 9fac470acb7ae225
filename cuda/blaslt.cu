// blaslt.cu — cuBLASLt handle, workspace and GEMM calls (see blaslt.h).
#include <map>
#include <mutex>
#include <tuple>

#include "blaslt.h"
#include "cublaslt_dyn.h"
#include "cuda_check.h"
#include "cuda_stream.h"

namespace {

constexpr size_t kWorkspaceBytes = 64u << 20;

struct Context {
    cublasLtHandle_t handle = nullptr;
    void *workspace = nullptr;
};

std::mutex g_mu;
Context g_ctx;
const qs_cublaslt_api *g_lt; // set by context() before any other use
// key: (kind, a_mode, b_mode, has_bias, m, n, k) -> algo (or none)
typedef std::tuple<int, int, int, int, int64_t, int64_t, int64_t> AlgoKey;
struct AlgoEntry {
    bool found;
    cublasLtMatmulAlgo_t algo;
};
std::map<AlgoKey, AlgoEntry> g_algos;

int context(Context **out, qs_err *err)
{
    std::lock_guard<std::mutex> lock(g_mu);
    if (!g_ctx.handle || !g_ctx.workspace) {
        // Created by the first GEMM, which a decode graph's warm-up step runs before any capture.
        if (qs_cuda_capturing())
            return qs_errf(err, "cuBLASLt would be initialised during a CUDA graph capture");
        if (!(g_lt = qs_cublaslt(err)))
            return -1;
        if (!g_ctx.handle)
            QS_CUBLAS_TRY(g_lt->Create(&g_ctx.handle), err);
        QS_CUDA_TRY(cudaMalloc(&g_ctx.workspace, kWorkspaceBytes), err);
    }
    *out = &g_ctx;
    return 0;
}

// RAII holders so every early return frees the descriptors.
struct Desc {
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
    cublasLtMatmulPreference_t pref = nullptr;
    ~Desc()
    {
        if (pref) g_lt->MatmulPreferenceDestroy(pref);
        if (c) g_lt->MatrixLayoutDestroy(c);
        if (b) g_lt->MatrixLayoutDestroy(b);
        if (a) g_lt->MatrixLayoutDestroy(a);
        if (op) g_lt->MatmulDescDestroy(op);
    }
};

// Builds descriptors for D[n,m] (col-major) = op(A)[n,k] * B[k,m]: A is w stored [n,k] row-major
// (= col-major [k,n], transposed), B is x stored [m,k] row-major (= col-major [k,m]).
// bias: the BF16 vector the epilogue adds, or NULL.
int build(Desc &d, cudaDataType_t ab_type, int64_t m, int64_t n, int64_t k, const __nv_bfloat16 *bias, qs_err *err)
{
    QS_CUBLAS_TRY(g_lt->MatmulDescCreate(&d.op, CUBLAS_COMPUTE_32F, CUDA_R_32F), err);
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    QS_CUBLAS_TRY(g_lt->MatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta), err);
    QS_CUBLAS_TRY(g_lt->MatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb), err);
    if (bias) {
        cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
        cudaDataType_t bt = CUDA_R_16BF;
        QS_CUBLAS_TRY(g_lt->MatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi), err);
        QS_CUBLAS_TRY(g_lt->MatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt),
                      err);
        QS_CUBLAS_TRY(g_lt->MatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias),
                      err);
    }
    QS_CUBLAS_TRY(g_lt->MatrixLayoutCreate(&d.a, ab_type, k, n, k), err);
    QS_CUBLAS_TRY(g_lt->MatrixLayoutCreate(&d.b, ab_type, k, m, k), err);
    QS_CUBLAS_TRY(g_lt->MatrixLayoutCreate(&d.c, CUDA_R_16BF, n, m, n), err);
    QS_CUBLAS_TRY(g_lt->MatmulPreferenceCreate(&d.pref), err);
    size_t ws = kWorkspaceBytes;
    QS_CUBLAS_TRY(g_lt->MatmulPreferenceSetAttribute(d.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                                       sizeof ws),
                  err);
    return 0;
}

// Finds (and caches) the heuristic's first algorithm. Returns 1 if there is none.
int find_algo(Context *ctx, Desc &d, const AlgoKey &key, cublasLtMatmulAlgo_t *algo, qs_err *err)
{
    {
        std::lock_guard<std::mutex> lock(g_mu);
        auto it = g_algos.find(key);
        if (it != g_algos.end()) {
            if (!it->second.found)
                return 1;
            *algo = it->second.algo;
            return 0;
        }
    }
    cublasLtMatmulHeuristicResult_t res;
    int found = 0;
    cublasStatus_t st = g_lt->MatmulAlgoGetHeuristic(ctx->handle, d.op, d.a, d.b, d.c, d.c, d.pref, 1, &res,
                                                       &found);
    AlgoEntry e;
    e.found = st == CUBLAS_STATUS_SUCCESS && found > 0;
    if (e.found)
        e.algo = res.algo;
    else if (st != CUBLAS_STATUS_SUCCESS && st != CUBLAS_STATUS_NOT_SUPPORTED)
        return qs_errf(err, "cublasLtMatmulAlgoGetHeuristic failed: %s", g_lt->GetStatusString(st));
    std::lock_guard<std::mutex> lock(g_mu);
    g_algos[key] = e;
    if (!e.found)
        return 1;
    *algo = e.algo;
    return 0;
}

int set_fp8_scales(Desc &d, const float *w_scale, int a_mode, const float *x_scale, int b_mode, qs_err *err)
{
    QS_CUBLAS_TRY(g_lt->MatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &w_scale,
                                                 sizeof w_scale),
                  err);
    QS_CUBLAS_TRY(g_lt->MatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &x_scale,
                                                 sizeof x_scale),
                  err);
    cublasLtMatmulMatrixScale_t am = (cublasLtMatmulMatrixScale_t)a_mode, bm = (cublasLtMatmulMatrixScale_t)b_mode;
    QS_CUBLAS_TRY(g_lt->MatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &am, sizeof am), err);
    QS_CUBLAS_TRY(g_lt->MatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &bm, sizeof bm), err);
    return 0;
}

} // namespace

int qs_blaslt_gemm_bf16(const __nv_bfloat16 *w, const __nv_bfloat16 *x, const __nv_bfloat16 *bias,
                        __nv_bfloat16 *y, int64_t m, int64_t n, int64_t k, cudaStream_t s, qs_err *err)
{
    if (m == 0)
        return 0;
    Context *ctx;
    if (context(&ctx, err))
        return -1;
    Desc d;
    if (build(d, CUDA_R_16BF, m, n, k, bias, err))
        return -1;
    cublasLtMatmulAlgo_t algo;
    int rc = find_algo(ctx, d, AlgoKey(0, 0, 0, bias != nullptr, m, n, k), &algo, err);
    if (rc < 0)
        return -1;
    if (rc == 1)
        return qs_errf(err, "cuBLASLt has no BF16 GEMM algorithm for m=%lld n=%lld k=%lld", (long long)m,
                       (long long)n, (long long)k);
    float alpha = 1.f, beta = 0.f;
    QS_CUBLAS_TRY(g_lt->Matmul(ctx->handle, d.op, &alpha, w, d.a, x, d.b, &beta, y, d.c, y, d.c, &algo,
                                 ctx->workspace, kWorkspaceBytes, s),
                  err);
    return 0;
}

int qs_blaslt_gemm_fp8(const uint8_t *w, const float *w_scale, int a_mode, const uint8_t *x, const float *x_scale,
                       int b_mode, const __nv_bfloat16 *bias, __nv_bfloat16 *y, int64_t m, int64_t n, int64_t k,
                       cudaStream_t s, qs_err *err)
{
    if (m == 0)
        return 0;
    Context *ctx;
    if (context(&ctx, err))
        return -1;
    Desc d;
    if (build(d, CUDA_R_8F_E4M3, m, n, k, bias, err) || set_fp8_scales(d, w_scale, a_mode, x_scale, b_mode, err))
        return -1;
    cublasLtMatmulAlgo_t algo;
    int rc = find_algo(ctx, d, AlgoKey(1, a_mode, b_mode, bias != nullptr, m, n, k), &algo, err);
    if (rc != 0)
        return rc;
    float alpha = 1.f, beta = 0.f;
    QS_CUBLAS_TRY(g_lt->Matmul(ctx->handle, d.op, &alpha, w, d.a, x, d.b, &beta, y, d.c, y, d.c, &algo,
                                 ctx->workspace, kWorkspaceBytes, s),
                  err);
    return 0;
}

int qs_blaslt_fp8_supported(int a_mode, int b_mode, int64_t m, int64_t n, int64_t k)
{
    qs_err err;
    Context *ctx;
    if (context(&ctx, &err))
        return 0;
    Desc d;
    if (build(d, CUDA_R_8F_E4M3, m, n, k, nullptr, &err))
        return 0;
    // Any non-null pointers do for the heuristic query.
    const float *dummy = reinterpret_cast<const float *>(ctx->workspace);
    if (set_fp8_scales(d, dummy, a_mode, dummy, b_mode, &err))
        return 0;
    cublasLtMatmulAlgo_t algo;
    return find_algo(ctx, d, AlgoKey(1, a_mode, b_mode, 0, m, n, k), &algo, &err) == 0;
}
