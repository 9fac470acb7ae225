/* test_moe_cuda.c — GPU test (run by scripts/gpu-check.sh) of every CUDA MoE kernel descriptor
 * (marlin, cublaslt BF16 / FP8, emulation: cuda/qs_cuda_kernels.h) against the CPU `reference`
 * MoE kernel, on fresh random experts and routings:
 *  - schemes bf16, fp8_w8a8 per-tensor (static activations) and per-channel (per-token),
 *    fp8_block_w8a8 (128x128, groups of 128), w8a16_fp8, nvfp4_w4a16 and nvfp4_w4a4, each kernel
 *    on the schemes its descriptor lists; a can_implement_moe refusal is a skip with its reason;
 *  - (experts, top-k, hidden, inter) = (8,2,256,128), (16,4,512,384), (8,2,256,160) (inter off
 *    the multiples of 128) and (128,8,2048,768) (Qwen3-30B-A3B's experts), at m = 1, 2, 3, 8,
 *    17, 64, 300 tokens (and 16400 on the first shape) routed to distinct random experts
 *    ("random"), and at m = 8 and 300 also
 *    with every token on the same top-k experts ("same") and with all tokens on top_k + 1
 *    experts, the others getting none ("few"), and with the slots of the upper half's experts
 *    id -1, weight 0 (another rank's under expert parallelism: skipped, "ep");
 *  - marlin runs FP8 / NVFP4 weights only (BF16 activations, activation scales ignored), so for
 *    W8A8 / W4A4 its reference is the same experts declared w8a16_fp8 / nvfp4_w4a16 with
 *    activations unquantized. Its output must also be bit-identical over two applies, and its
 *    "capture" cases record apply_moe at m = 1 and 8 into a CUDA graph on a stream of its own
 *    (after an eager warm-up at that m) and replay it twice on new tokens, experts and weights
 *    written into the same device buffers: a capture that fails is a failure.
 * Weights are random E4M3 / E2M1 codes (BF16 values for bf16) with random scales, so both sides
 * multiply exactly the same weights. Outputs are poisoned with NaN first; a run passes when no
 * output is NaN (unwritten) and ||y - ref|| / ||ref|| <= 2e-2 where activations stay BF16, 1e-1
 * / 1.5e-1 where down's input is quantized to FP8 / FP4 (see TOL_*). Failure lines give the seeds
 * of the case's experts and tokens (all derived from --seed N, default fixed).
 * Options: --quick (the Qwen3 shape at one m), --kernel NAME (that kernel only), --seed N, and
 * --self-check (no GPU: the harness with the reference against the same experts computed in
 * BF16 steps on the host, the grouped CUDA path's rounding; shows what a kernel's BF16
 * intermediates cost). Prints one line per case and "N passed, N failed, N skipped". */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/reference_kernels.h"
#include "cuda_test_util.h"
#include "core/ops.h"
#include "core/tensor.h"
#include "device_query.h"
#include "qs_cuda_kernels.h"
#include "qs_cuda_mem.h"
#include "qs_cuda_ops.h"
#include "core/fp8.h"

/* Tolerances of ||y - ref|| / ||ref||. With BF16 activations throughout (bf16 and weight-only
 * schemes, and marlin on every scheme) the device differs from the reference only by BF16
 * rounding: 2e-2. Where down's input is quantized (W8A8 / W4A4 on cublaslt and emulation) the
 * device quantizes a BF16-rounded silu(gate) * up where the reference quantizes the float one, and
 * that alone flips FP8 / FP4 codes: over ~800 cases per scheme (the three small shapes, m <= 64)
 * the grouped path's BF16 rounding done exactly on the host (--self-check's host-bf16) reached
 * 6.4e-2 with FP8 activations (median 1.5e-2) and 1.0e-1 with NVFP4 ones (median 3e-2), the
 * worst at m = 1. */
#define TOL_BF16_ACTS 2e-2
#define TOL_FP8_ACTS 1e-1
#define TOL_FP4_ACTS 1.5e-1
#define X_MAX 2.0f  /* |x| < X_MAX: gate and up's static FP8 / NVFP4 input scales cover it */
#define H_MAX 32.0f /* down's input scales cover |silu(gate) * up| up to this */

static int g_passed, g_failed, g_skipped;
static uint64_t g_base_seed = 0x6D6F652D74657374ull;
static bool g_quick, g_self_check;
static const char *g_only; /* --kernel */
static qs_device_caps g_caps;
static void *g_stream; /* the capture cases' stream (created on first use) */

static void *xmalloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p) {
        fprintf(stderr, "out of memory (%zu bytes)\n", bytes);
        exit(2);
    }
    return p;
}

/* ---------------- random data ---------------- */

/* splitmix64: every bit usable, so one draw gives eight random bytes. */
static uint64_t mix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static float unif(uint64_t *s) { return (float)(mix64(s) >> 40) * (1.0f / 16777216.0f); } /* [0, 1) */

/* The seed of one case from the base seed and four small indices. */
static uint64_t case_seed(int a, int b, int c, int d)
{
    uint64_t s = g_base_seed ^ ((uint64_t)a << 48) ^ ((uint64_t)b << 32) ^ ((uint64_t)c << 16) ^ (uint64_t)d;
    mix64(&s);
    return mix64(&s);
}

static void fill_bytes(uint64_t *s, uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i += 8) {
        uint64_t r = mix64(s);
        memcpy(p + i, &r, n - i < 8 ? n - i : 8);
    }
}

/* Round to nearest even BF16 (finite inputs), inline: the largest shape has 600M weights. */
static inline uint16_t bf16_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    u += 0x7FFFu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static inline float bf16_round(float f)
{
    uint32_t u = (uint32_t)bf16_bits(f) << 16;
    memcpy(&f, &u, 4);
    return f;
}

/* E4M3 codes of 256 values evenly spread over (-448, 448): a random byte through this table is a
 * weight uniform in magnitude, never NaN. */
static uint8_t g_e4m3_codes[256];

static void init_tables(void)
{
    for (int j = 0; j < 256; j++)
        g_e4m3_codes[j] = qs_f32_to_e4m3(((float)j + 0.5f) / 128.f * 448.f - 448.f);
}

/* ---------------- the cases ---------------- */

typedef struct {
    const char *label;
    qs_scheme scheme;
    qs_weight_scale_layout wscale;
    qs_act_quant aquant;
} scheme_case;

static const scheme_case SCHEMES[] = {
    {"bf16", QS_SCHEME_BF16, QS_WSCALE_NONE, QS_AQUANT_NONE},
    {"fp8_w8a8 tensor", QS_SCHEME_FP8_W8A8, QS_WSCALE_TENSOR, QS_AQUANT_STATIC_TENSOR},
    {"fp8_w8a8 channel", QS_SCHEME_FP8_W8A8, QS_WSCALE_CHANNEL, QS_AQUANT_DYNAMIC_TOKEN},
    {"fp8_block_w8a8", QS_SCHEME_FP8_BLOCK_W8A8, QS_WSCALE_BLOCK, QS_AQUANT_DYNAMIC_GROUP},
    {"w8a16_fp8", QS_SCHEME_W8A16_FP8, QS_WSCALE_CHANNEL, QS_AQUANT_NONE},
    {"nvfp4_w4a16", QS_SCHEME_NVFP4_W4A16, QS_WSCALE_NVFP4, QS_AQUANT_NONE},
    {"nvfp4_w4a4", QS_SCHEME_NVFP4_W4A4, QS_WSCALE_NVFP4, QS_AQUANT_NVFP4},
};
#define N_SCHEMES ((int)(sizeof SCHEMES / sizeof SCHEMES[0]))

typedef struct {
    int experts, top_k;
    int64_t hidden, inter;
} moe_shape;

static const moe_shape SHAPES[] = {{8, 2, 256, 128}, {16, 4, 512, 384}, {8, 2, 256, 160}, {128, 8, 2048, 768}};
#define N_SHAPES ((int)(sizeof SHAPES / sizeof SHAPES[0]))
#define BIG_SHAPE 3 /* Qwen3-30B-A3B: one m with --quick */
#define QUICK_BIG_M 17

/* LONG_M: more (token, expert) pairs than marlin sorts in one pass (32767), so it runs as
 * several token chunks; on the smallest shape only, to keep the CPU reference quick */
#define LONG_M 16400
static const int64_t MS[] = {1, 2, 3, 8, 17, 64, 300, LONG_M};
#define N_MS ((int)(sizeof MS / sizeof MS[0]))
static bool m_runs_on(int64_t m, int shi) { return m != LONG_M || shi == 0; }
/* the m at which "same" and "few" routings also run */
static bool extra_routings_at(int64_t m) { return m == 8 || m == 300; }

typedef enum { ROUTE_RANDOM, ROUTE_SAME, ROUTE_FEW, ROUTE_EP, ROUTE_COUNT } route_mode;
static const char *const ROUTE_NAMES[] = {"random", "same", "few", "ep"};

/* The kernels under test. marlin runs W8A8 / W4A4 experts weight-only. */
static const qs_kernel *const KERNELS[] = {&qs_kernel_marlin_moe, &qs_kernel_cublaslt_moe_bf16,
                                           &qs_kernel_cublaslt_moe_fp8, &qs_kernel_emulation_moe};
#define N_KERNELS ((int)(sizeof KERNELS / sizeof KERNELS[0]))
static bool runs_weight_only(const qs_kernel *k) { return k == &qs_kernel_marlin_moe; }

/* ---------------- experts ---------------- */

typedef struct {
    qs_moe_desc md;          /* the experts as the checkpoint declares them */
    qs_moe_desc wo;          /* the same experts weight-only (W8A8 / W4A4 schemes only) */
    bool has_wo;
    qs_linear_desc *lin;     /* [3E]: gate, up, down */
    qs_linear_desc *lin_wo;  /* [3E] */
    qs_tensor *tens;         /* [3E][2]: weight, scale */
    void **bufs;             /* [3E][2] */
    int n_lin;
} moe_data;

/* One expert projection [n, k] of random codes and scales. |w| <= 2 / sqrt(k), so every
 * projection keeps its inputs' magnitude; in_amax sets the static FP8 / NVFP4 input scales. */
static void make_linear(const scheme_case *sc, const char *name, int64_t n, int64_t k, float in_amax, uint64_t *rng,
                        qs_linear_desc *d, qs_tensor *t, void **bufs)
{
    if (n <= 0 || k <= 0 || n > (1 << 16) || k > (1 << 16))
        abort(); /* the shapes are the test's own; the bound also tells gcc the sizes are sane */
    memset(d, 0, sizeof *d);
    snprintf(d->name, sizeof d->name, "%s", name);
    d->scheme = sc->scheme;
    d->n = n;
    d->k = k;
    d->wscale = sc->wscale;
    d->aquant = sc->aquant;
    d->block_n = d->block_k = 128;
    d->act_group_size = 128;
    d->weight_global_scale = 1.f;
    const float A = 2.f / sqrtf((float)k);
    size_t nk = (size_t)(n * k);
    if (sc->scheme == QS_SCHEME_BF16) {
        uint16_t *w = xmalloc(2 * nk);
        for (size_t i = 0; i < nk; i += 4) {
            uint64_t r = mix64(rng);
            for (size_t j = 0; j < 4 && i + j < nk; j++)
                w[i + j] = bf16_bits(((float)((r >> (16 * j)) & 0xFFFF) + 0.5f) * (A / 32768.f) - A);
        }
        qs_test_set_tensor(&t[0], "test.weight", QS_DT_BF16, 2, n, k, w, 2 * nk);
        bufs[0] = w;
    } else if (sc->wscale == QS_WSCALE_NVFP4) {
        /* every E2M1 code equally likely; block scales about 256, a few zero; global about
         * A / (6 * 256), its own for every projection (as ModelOpt's weight_scale_2) */
        size_t ns = nk / 16;
        uint8_t *w = xmalloc(nk / 2), *s = xmalloc(ns);
        fill_bytes(rng, w, nk / 2);
        for (size_t i = 0; i < ns; i++)
            s[i] = i % 97 == 41 ? 0 : qs_f32_to_e4m3(256.f * (0.5f + unif(rng)));
        qs_test_set_tensor(&t[0], "test.weight", QS_DT_U8, 2, n, k / 2, w, nk / 2);
        qs_test_set_tensor(&t[1], "test.weight_scale", QS_DT_F8_E4M3, 2, n, k / 16, s, ns);
        bufs[0] = w;
        bufs[1] = s;
        d->weight_global_scale = A / (6.f * 256.f) * (0.75f + 0.5f * unif(rng)); /* gate's and up's differ */
        d->input_scale = in_amax / (6.f * 448.f);
    } else {
        uint8_t *w = xmalloc(nk);
        fill_bytes(rng, w, nk);
        for (size_t i = 0; i < nk; i++)
            w[i] = g_e4m3_codes[w[i]];
        int64_t nb = (n + 127) / 128, kb = (k + 127) / 128;
        int64_t ns = sc->wscale == QS_WSCALE_TENSOR ? 1 : sc->wscale == QS_WSCALE_CHANNEL ? n : nb * kb;
        float *s = xmalloc(sizeof(float) * (size_t)ns);
        for (int64_t i = 0; i < ns; i++)
            s[i] = A / 448.f * (0.5f + unif(rng));
        qs_test_set_tensor(&t[0], "test.weight", QS_DT_F8_E4M3, 2, n, k, w, nk);
        if (sc->wscale == QS_WSCALE_TENSOR)
            qs_test_set_tensor(&t[1], "test.weight_scale", QS_DT_F32, 0, 0, 0, s, 4);
        else if (sc->wscale == QS_WSCALE_CHANNEL)
            qs_test_set_tensor(&t[1], "test.weight_scale", QS_DT_F32, 2, n, 1, s, 4 * (size_t)n);
        else
            qs_test_set_tensor(&t[1], "test.weight_scale", QS_DT_F32, 2, nb, kb, s, 4 * (size_t)(nb * kb));
        bufs[0] = w;
        bufs[1] = s;
        d->input_scale = in_amax / 448.f;
    }
    d->weight = &t[0];
    d->weight_scale = sc->scheme == QS_SCHEME_BF16 ? NULL : &t[1];
}

static void make_moe(const scheme_case *sc, const moe_shape *sh, uint64_t seed, moe_data *M)
{
    memset(M, 0, sizeof *M);
    int E = sh->experts;
    M->n_lin = 3 * E;
    M->lin = xmalloc(sizeof *M->lin * (size_t)M->n_lin);
    M->lin_wo = xmalloc(sizeof *M->lin_wo * (size_t)M->n_lin);
    M->tens = calloc((size_t)(2 * M->n_lin), sizeof *M->tens);
    M->bufs = calloc((size_t)(2 * M->n_lin), sizeof *M->bufs);
    if (!M->tens || !M->bufs)
        abort();
    uint64_t rng = seed;
    static const char *const PROJ[3] = {"gate_proj", "up_proj", "down_proj"};
    for (int p = 0; p < 3; p++)
        for (int e = 0; e < E; e++) {
            int i = p * E + e;
            char name[96];
            snprintf(name, sizeof name, "test.mlp.experts.%d.%s", e, PROJ[p]);
            bool down = p == 2;
            make_linear(sc, name, down ? sh->hidden : sh->inter, down ? sh->inter : sh->hidden, down ? H_MAX : X_MAX,
                        &rng, &M->lin[i], &M->tens[2 * i], &M->bufs[2 * i]);
        }
    qs_moe_desc *md = &M->md;
    snprintf(md->name, sizeof md->name, "test.mlp.experts (%s)", sc->label);
    md->scheme = sc->scheme;
    md->num_experts = E;
    md->top_k = sh->top_k;
    md->hidden = sh->hidden;
    md->inter = sh->inter;
    md->gate = M->lin;
    md->up = M->lin + E;
    md->down = M->lin + 2 * E;
    M->has_wo = sc->aquant != QS_AQUANT_NONE;
    if (M->has_wo) {
        qs_scheme wo = qs_scheme_is_nvfp4(sc->scheme) ? QS_SCHEME_NVFP4_W4A16 : QS_SCHEME_W8A16_FP8;
        for (int i = 0; i < M->n_lin; i++) {
            M->lin_wo[i] = M->lin[i];
            M->lin_wo[i].scheme = wo;
            M->lin_wo[i].aquant = QS_AQUANT_NONE;
        }
        M->wo = *md;
        M->wo.scheme = wo;
        M->wo.gate = M->lin_wo;
        M->wo.up = M->lin_wo + E;
        M->wo.down = M->lin_wo + 2 * E;
    }
}

static void free_moe(moe_data *M)
{
    for (int i = 0; i < 2 * M->n_lin; i++)
        free(M->bufs[i]);
    free(M->bufs);
    free(M->tens);
    free(M->lin);
    free(M->lin_wo);
}

/* ---------------- tokens and routing ---------------- */

typedef struct {
    float *x;     /* [m, hidden], BF16 values */
    int32_t *ids; /* [m, top_k], distinct per token */
    float *w;     /* [m, top_k], positive, summing to 1 per token */
} moe_inputs;

/* random: any top_k distinct experts per token; same: every token the same top_k experts (in its
 * own slot order); few: each token top_k of the same top_k + 1 experts, the rest get none. */
static void make_inputs(const moe_shape *sh, int64_t m, route_mode mode, uint64_t seed, moe_inputs *in)
{
    uint64_t rng = seed;
    int E = sh->experts, K = sh->top_k;
    int64_t H = sh->hidden;
    in->x = xmalloc(sizeof(float) * (size_t)(m * H));
    in->ids = xmalloc(sizeof(int32_t) * (size_t)(m * K));
    in->w = xmalloc(sizeof(float) * (size_t)(m * K));
    bool nonzero = false;
    for (int64_t i = 0; i < m * H; i++) {
        in->x[i] = bf16_round((2.f * unif(&rng) - 1.f) * X_MAX);
        nonzero |= in->x[i] != 0.f;
    }
    if (!nonzero)
        in->x[0] = 1.f;
    int *pool = xmalloc(sizeof(int) * (size_t)E), *tmp = xmalloc(sizeof(int) * (size_t)E);
    for (int e = 0; e < E; e++)
        pool[e] = e;
    for (int e = E - 1; e > 0; e--) {
        int r = (int)(mix64(&rng) % (uint64_t)(e + 1)), v = pool[e];
        pool[e] = pool[r];
        pool[r] = v;
    }
    int pool_n = mode == ROUTE_SAME ? K : mode == ROUTE_FEW ? (K + 1 < E ? K + 1 : E) : E;
    for (int64_t t = 0; t < m; t++) {
        memcpy(tmp, pool, sizeof(int) * (size_t)pool_n);
        float sum = 0.f;
        for (int j = 0; j < K; j++) {
            int r = j + (int)(mix64(&rng) % (uint64_t)(pool_n - j)), v = tmp[j];
            tmp[j] = tmp[r];
            tmp[r] = v;
            in->ids[t * K + j] = tmp[j];
            sum += in->w[t * K + j] = 0.05f + unif(&rng);
        }
        for (int j = 0; j < K; j++)
            in->w[t * K + j] /= sum;
        for (int j = 0; mode == ROUTE_EP && j < K; j++) /* the upper half's experts: another rank's */
            if (in->ids[t * K + j] >= E / 2) {
                in->ids[t * K + j] = -1;
                in->w[t * K + j] = 0.f;
            }
    }
    free(pool);
    free(tmp);
}

static void free_inputs(moe_inputs *in)
{
    free(in->x);
    free(in->ids);
    free(in->w);
}

/* ---------------- the two sides ---------------- */

/* The CPU reference over md, prepared on first use into *state. */
static int reference(void **state, const qs_moe_desc *md, const moe_inputs *in, int64_t m, float *ref, qs_err *err)
{
    if (!*state && qs_kernel_reference_moe.prepare_moe(md, state, err))
        return -1;
    return qs_kernel_reference_moe.apply_moe(*state, in->x, in->ids, in->w, ref, m, NULL, err);
}

/* --self-check's stand-in for a GPU kernel: the experts of md through reference linears, with
 * gate, up, silu, h, the expert outputs and y rounded to BF16 where the grouped CUDA path
 * (cuda/moe_grouped.cu) rounds them. */
typedef struct {
    const qs_moe_desc *md;
    void **lin; /* [3E] reference linear states */
} host_moe;

static int host_apply(host_moe *h, const moe_inputs *in, int64_t m, float *y, qs_err *err)
{
    const qs_moe_desc *md = h->md;
    int E = md->num_experts, K = md->top_k;
    int64_t H = md->hidden, I = md->inter;
    if (!h->lin) {
        h->lin = calloc((size_t)(3 * E), sizeof(void *));
        if (!h->lin)
            abort();
        for (int e = 0; e < E; e++)
            if (qs_kernel_reference_linear.prepare_linear(&md->gate[e], &h->lin[e], err) ||
                qs_kernel_reference_linear.prepare_linear(&md->up[e], &h->lin[E + e], err) ||
                qs_kernel_reference_linear.prepare_linear(&md->down[e], &h->lin[2 * E + e], err))
                return -1;
    }
    size_t P = (size_t)(m * K);
    float *slot = xmalloc(sizeof(float) * P * (size_t)H), *xe = xmalloc(sizeof(float) * P * (size_t)H);
    float *g = xmalloc(sizeof(float) * P * (size_t)I), *u = xmalloc(sizeof(float) * P * (size_t)I);
    float *de = xmalloc(sizeof(float) * P * (size_t)H);
    int64_t *rows = xmalloc(sizeof(int64_t) * P);
    int rc = 0;
    for (int e = 0; e < E && !rc; e++) {
        int64_t cnt = 0;
        for (int64_t t = 0; t < m * K; t++)
            if (in->ids[t] == e) {
                rows[cnt] = t;
                memcpy(xe + cnt * H, in->x + (t / K) * H, sizeof(float) * (size_t)H);
                cnt++;
            }
        if (!cnt)
            continue;
        if (qs_kernel_reference_linear.apply_linear(h->lin[e], xe, g, cnt, NULL, err) ||
            qs_kernel_reference_linear.apply_linear(h->lin[E + e], xe, u, cnt, NULL, err)) {
            rc = -1;
            break;
        }
        for (int64_t i = 0; i < cnt * I; i++) {
            float gi = bf16_round(g[i]);
            g[i] = bf16_round(bf16_round(gi / (1.f + expf(-gi))) * bf16_round(u[i]));
        }
        if (qs_kernel_reference_linear.apply_linear(h->lin[2 * E + e], g, de, cnt, NULL, err)) {
            rc = -1;
            break;
        }
        for (int64_t r = 0; r < cnt; r++)
            for (int64_t c = 0; c < H; c++)
                slot[rows[r] * H + c] = bf16_round(de[r * H + c]);
    }
    for (int64_t t = 0; !rc && t < m; t++)
        for (int64_t c = 0; c < H; c++) {
            float acc = 0.f;
            for (int j = 0; j < K; j++)
                if (in->ids[t * K + j] >= 0) /* (-1: another rank's expert, "ep") */
                    acc += in->w[t * K + j] * slot[(t * K + j) * H + c];
            y[t * H + c] = bf16_round(acc);
        }
    free(slot);
    free(xe);
    free(g);
    free(u);
    free(de);
    free(rows);
    return rc;
}

static void host_release(host_moe *h)
{
    if (!h->lin)
        return;
    for (int i = 0; i < 3 * h->md->num_experts; i++)
        if (h->lin[i])
            qs_kernel_reference_linear.release(h->lin[i]);
    free(h->lin);
    h->lin = NULL;
}

/* Device copies of one case's inputs and output. */
typedef struct {
    void *x, *ids, *w, *y;
} dev_bufs;

static int dev_alloc(dev_bufs *b, const moe_shape *sh, int64_t m, qs_err *err)
{
    memset(b, 0, sizeof *b);
    size_t pairs = (size_t)(m * sh->top_k), xy = 2 * (size_t)(m * sh->hidden);
    return qs_cuda_malloc(&b->x, xy, err) || qs_cuda_malloc(&b->y, xy, err) ||
                   qs_cuda_malloc(&b->ids, sizeof(int32_t) * pairs, err) ||
                   qs_cuda_malloc(&b->w, sizeof(float) * pairs, err)
               ? -1
               : 0;
}

static int dev_upload(dev_bufs *b, const moe_inputs *in, const moe_shape *sh, int64_t m, qs_err *err)
{
    size_t pairs = (size_t)(m * sh->top_k);
    return qs_cuda_upload_f32_as_bf16(b->x, in->x, (size_t)(m * sh->hidden), err) ||
                   qs_cuda_memcpy_h2d(b->ids, in->ids, sizeof(int32_t) * pairs, err) ||
                   qs_cuda_memcpy_h2d(b->w, in->w, sizeof(float) * pairs, err)
               ? -1
               : 0;
}

static void dev_free(dev_bufs *b)
{
    qs_cuda_free(b->x);
    qs_cuda_free(b->ids);
    qs_cuda_free(b->w);
    qs_cuda_free(b->y);
}

/* y poisoned (BF16 NaN), one apply on stream, a wait, y's BF16 bits to the host. */
static int gpu_apply(const qs_kernel *k, const void *state, const dev_bufs *b, int64_t m, int64_t hidden, void *stream,
                     uint16_t *bits, qs_err *err)
{
    size_t bytes = 2 * (size_t)(m * hidden);
    return qs_cuda_memset(b->y, 0xFF, bytes, err) || k->apply_moe(state, b->x, b->ids, b->w, b->y, m, stream, err) ||
                   qs_cuda_synchronize(err) || qs_cuda_memcpy_d2h(bits, b->y, bytes, err)
               ? -1
               : 0;
}

/* ||y - ref|| / ||ref|| over n outputs given as BF16 bits; *bad counts the NaN / infinite ones. */
static double rel_err(const uint16_t *bits, const float *ref, int64_t n, int64_t *bad)
{
    double num = 0, den = 0;
    *bad = 0;
    for (int64_t i = 0; i < n; i++) {
        float y = qs_bf16_to_f32(bits[i]);
        if (!isfinite(y)) {
            (*bad)++;
            continue;
        }
        double d = (double)y - ref[i];
        num += d * d;
        den += (double)ref[i] * ref[i];
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

/* ---------------- reporting ---------------- */

static double tolerance(const scheme_case *sc, bool weight_only)
{
    if (weight_only || sc->aquant == QS_AQUANT_NONE)
        return TOL_BF16_ACTS;
    return sc->aquant == QS_AQUANT_NVFP4 ? TOL_FP4_ACTS : TOL_FP8_ACTS;
}

typedef struct {
    const char *kernel;
    const scheme_case *sc;
    char shape[40];
} case_label;

static void report_skip(const case_label *c, const char *why)
{
    printf("%-9s %-16s %-19s skipped: %s\n", c->kernel, c->sc->label, c->shape, why);
    g_skipped++;
}

/* One result line: pass when ok, no output NaN and rel <= tol; detail follows the verdict. */
static void report(const case_label *c, const char *what, bool ok, double rel, double tol, int64_t bad,
                   const char *detail, uint64_t wseed, uint64_t xseed)
{
    bool pass = ok && bad == 0 && rel <= tol;
    printf("%-9s %-16s %-19s %-14s ", c->kernel, c->sc->label, c->shape, what);
    if (ok)
        printf("rel %.2e tol %.0e  ", rel, tol);
    printf("%s", pass ? "ok" : "FAIL");
    if (bad)
        printf(": %lld outputs NaN/unwritten", (long long)bad);
    if (detail && *detail)
        printf(pass ? " (%s)" : bad ? "; %s" : ": %s", detail);
    if (!pass)
        printf(" [--seed 0x%llx: experts 0x%016llx, tokens 0x%016llx]", (unsigned long long)g_base_seed,
               (unsigned long long)wseed, (unsigned long long)xseed);
    printf("\n");
    pass ? g_passed++ : g_failed++;
}

/* ---------------- one scheme at one shape ---------------- */

typedef struct {
    const qs_kernel *k; /* NULL: --self-check's host stand-in */
    const char *name;
    void *state;
    host_moe host;
    bool weight_only; /* compared with the weight-only reference */
} active_kernel;

/* The reference of the case's function for kernel a, into ref. */
static int reference_for(const active_kernel *a, moe_data *M, void **ref_full, void **ref_wo, const moe_inputs *in,
                         int64_t m, float *ref, qs_err *err)
{
    if (a->weight_only && M->has_wo)
        return reference(ref_wo, &M->wo, in, m, ref, err);
    return reference(ref_full, &M->md, in, m, ref, err);
}

/* marlin's capture case: an eager warm-up at m, apply_moe recorded into a graph on a stream of
 * its own, then two replays on new inputs copied into the same buffers (one random routing, one
 * with every token on the same experts), each checked against the reference. */
static void run_capture(const active_kernel *a, const case_label *c, moe_data *M, const moe_shape *sh, int si, int shi,
                        int64_t m, void **ref_full, void **ref_wo)
{
    const qs_graph_ops *G = qs_ops_cuda()->graph;
    void *stream = g_stream;
    qs_err err = {{0}};
    char what[32], detail[QS_REASON_MAX + 64] = "";
    snprintf(what, sizeof what, "capture m %lld", (long long)m);
    uint64_t wseed = case_seed(si, shi, 0, 0), xseed = case_seed(si, shi, (int)m, 16);
    if (!G || (!stream && !(stream = g_stream = G->stream_create(&err)))) {
        report(c, what, false, 0, 0, 0, G ? err.msg : "the CUDA ops have no graph support", wseed, xseed);
        return;
    }
    void *prev = G->set_stream(stream);
    int64_t H = sh->hidden;
    dev_bufs b;
    void *graph = NULL;
    uint16_t *bits = xmalloc(2 * (size_t)(m * H));
    float *ref = xmalloc(sizeof(float) * (size_t)(m * H));
    moe_inputs in;
    make_inputs(sh, m, ROUTE_RANDOM, xseed, &in);
    bool ok = true;
    double worst = 0;
    int64_t bad = 0;
    if (dev_alloc(&b, sh, m, &err) || dev_upload(&b, &in, sh, m, &err) ||
        gpu_apply(a->k, a->state, &b, m, H, stream, bits, &err)) {
        snprintf(detail, sizeof detail, "eager warm-up: %s", err.msg);
        ok = false;
    } else if (G->capture_begin(&err)) {
        snprintf(detail, sizeof detail, "capture_begin: %s", err.msg);
        ok = false;
    } else {
        int rc = a->k->apply_moe(a->state, b.x, b.ids, b.w, b.y, m, stream, &err);
        qs_err e2 = {{0}};
        int end = G->capture_end(&graph, NULL, &e2);
        if (rc || end) {
            snprintf(detail, sizeof detail, "%s: %s", rc ? "apply_moe while capturing" : "capture_end",
                     rc ? err.msg : e2.msg);
            ok = false;
        }
    }
    free_inputs(&in);
    for (int r = 0; ok && r < 2; r++) {
        make_inputs(sh, m, r ? ROUTE_SAME : ROUTE_RANDOM, case_seed(si, shi, (int)m, 17 + r), &in);
        int64_t nbad = 0;
        if (dev_upload(&b, &in, sh, m, &err) || qs_cuda_memset(b.y, 0xFF, 2 * (size_t)(m * H), &err) ||
            G->graph_launch(graph, &err) || qs_cuda_synchronize(&err) ||
            qs_cuda_memcpy_d2h(bits, b.y, 2 * (size_t)(m * H), &err)) {
            snprintf(detail, sizeof detail, "replay %d: %s", r + 1, err.msg);
            ok = false;
        } else if (reference_for(a, M, ref_full, ref_wo, &in, m, ref, &err)) {
            snprintf(detail, sizeof detail, "reference: %s", err.msg);
            ok = false;
        } else {
            double rel = rel_err(bits, ref, m * H, &nbad);
            worst = rel > worst ? rel : worst;
            bad += nbad;
            size_t len = strlen(detail);
            snprintf(detail + len, sizeof detail - len, "%sreplay %d (%s) %.2e", r ? ", " : "", r + 1,
                     r ? "same" : "random", rel);
        }
        free_inputs(&in);
    }
    report(c, what, ok, worst, tolerance(c->sc, a->weight_only), bad, detail, wseed, xseed);
    if (graph)
        G->graph_destroy(graph);
    dev_free(&b);
    G->set_stream(prev);
    free(bits);
    free(ref);
}

static void run_scheme_shape(int si, int shi)
{
    const scheme_case *sc = &SCHEMES[si];
    const moe_shape *sh = &SHAPES[shi];
    int64_t H = sh->hidden;
    uint64_t wseed = case_seed(si, shi, 0, 0);
    moe_data M;
    make_moe(sc, sh, wseed, &M);
    case_label c = {.sc = sc};
    snprintf(c.shape, sizeof c.shape, "E%d k%d %lldx%lld", sh->experts, sh->top_k, (long long)H,
             (long long)sh->inter);
    active_kernel act[N_KERNELS + 1];
    int n_act = 0;
    qs_err err = {{0}};
    if (g_self_check) {
        act[n_act++] = (active_kernel){.name = "host-bf16", .host = {.md = &M.md}};
        if (M.has_wo)
            act[n_act++] = (active_kernel){.name = "host-wo", .host = {.md = &M.wo}, .weight_only = true};
    } else {
        for (int ki = 0; ki < N_KERNELS; ki++) {
            const qs_kernel *k = KERNELS[ki];
            if (!(k->schemes & (1u << sc->scheme)) || (g_only && strcmp(g_only, k->name)))
                continue;
            c.kernel = k->name;
            char why[QS_REASON_MAX] = "";
            if (!k->is_supported(&g_caps, why, sizeof why) || !k->can_implement_moe(&M.md, why, sizeof why)) {
                report_skip(&c, why);
                continue;
            }
            void *state = NULL;
            if (k->prepare_moe(&M.md, &state, &err)) {
                report(&c, "prepare", false, 0, 0, 0, err.msg, wseed, 0);
                continue;
            }
            act[n_act++] = (active_kernel){.k = k, .name = k->name, .state = state, .weight_only = runs_weight_only(k)};
        }
    }
    void *ref_full = NULL, *ref_wo = NULL;
    float *ref = NULL, *ref2 = NULL, *y = NULL;
    uint16_t *bits = NULL, *bits2 = NULL;
    for (int mi = 0; mi < N_MS && n_act; mi++) {
        int64_t m = MS[mi];
        if ((g_quick && shi == BIG_SHAPE && m != QUICK_BIG_M) || !m_runs_on(m, shi))
            continue;
        bool extras = extra_routings_at(m) && !(g_quick && shi == BIG_SHAPE);
        size_t n_out = (size_t)(m * H);
        ref = realloc(ref, sizeof(float) * n_out);
        ref2 = realloc(ref2, sizeof(float) * n_out);
        y = realloc(y, sizeof(float) * n_out);
        bits = realloc(bits, 2 * n_out);
        bits2 = realloc(bits2, 2 * n_out);
        if (!ref || !ref2 || !y || !bits || !bits2)
            abort();
        for (int route = 0; route < (extras ? ROUTE_COUNT : 1); route++) {
            uint64_t xseed = case_seed(si, shi, (int)m, route + 1);
            moe_inputs in;
            make_inputs(sh, m, (route_mode)route, xseed, &in);
            char what[32];
            snprintf(what, sizeof what, "m %lld %s", (long long)m, ROUTE_NAMES[route]);
            /* the references this case needs: [0] the scheme's function, [1] weight-only */
            bool need[2] = {false, false}, have[2] = {false, false};
            for (int i = 0; i < n_act; i++)
                need[act[i].weight_only && M.has_wo] = true;
            char ref_msg[2][QS_REASON_MAX] = {"", ""};
            for (int r = 0; r < 2; r++)
                if (need[r]) {
                    qs_err e = {{0}};
                    have[r] = reference(r ? &ref_wo : &ref_full, r ? &M.wo : &M.md, &in, m, r ? ref2 : ref, &e) == 0;
                    snprintf(ref_msg[r], sizeof ref_msg[r], "reference: %s", e.msg);
                }
            dev_bufs b = {0};
            bool dev_ok = true;
            char dev_msg[QS_REASON_MAX] = "";
            if (!g_self_check && (dev_alloc(&b, sh, m, &err) || dev_upload(&b, &in, sh, m, &err))) {
                dev_ok = false;
                snprintf(dev_msg, sizeof dev_msg, "device buffers: %s", err.msg);
            }
            for (int i = 0; i < n_act; i++) {
                active_kernel *a = &act[i];
                int r = a->weight_only && M.has_wo;
                const float *want = r ? ref2 : ref;
                c.kernel = a->name;
                if (!have[r]) {
                    report(&c, what, false, 0, 0, 0, ref_msg[r], wseed, xseed);
                    continue;
                }
                char detail[QS_REASON_MAX + 64] = "";
                bool ok = true;
                double rel = 0;
                int64_t bad = 0;
                if (!a->k) {
                    ok = host_apply(&a->host, &in, m, y, &err) == 0;
                    for (size_t j = 0; ok && j < n_out; j++)
                        bits[j] = bf16_bits(y[j]);
                } else {
                    ok = dev_ok && gpu_apply(a->k, a->state, &b, m, H, NULL, bits, &err) == 0;
                }
                if (!ok) {
                    snprintf(detail, sizeof detail, "%s", dev_ok ? err.msg : dev_msg);
                } else {
                    rel = rel_err(bits, want, (int64_t)n_out, &bad);
                    if (r)
                        snprintf(detail, sizeof detail, "vs %s", qs_scheme_name(M.wo.scheme));
                    if (a->k == &qs_kernel_marlin_moe) {
                        /* a second apply of the same inputs: the same bits */
                        size_t len = strlen(detail);
                        if (gpu_apply(a->k, a->state, &b, m, H, NULL, bits2, &err)) {
                            ok = false;
                            snprintf(detail + len, sizeof detail - len, "%ssecond apply: %s", len ? "; " : "",
                                     err.msg);
                        } else {
                            size_t diff = 0;
                            while (diff < n_out && bits[diff] == bits2[diff])
                                diff++;
                            if (diff < n_out) {
                                ok = false;
                                snprintf(detail + len, sizeof detail - len,
                                         "%snot deterministic: output %zu is 0x%04x, then 0x%04x", len ? "; " : "",
                                         diff, bits[diff], bits2[diff]);
                            } else {
                                snprintf(detail + len, sizeof detail - len, "%sdeterministic", len ? ", " : "");
                            }
                        }
                    }
                }
                report(&c, what, ok, rel, tolerance(sc, a->weight_only), bad, detail, wseed, xseed);
            }
            if (!g_self_check)
                dev_free(&b);
            free_inputs(&in);
        }
        fflush(stdout);
    }
    for (int i = 0; i < n_act; i++)
        if (act[i].k == &qs_kernel_marlin_moe) {
            c.kernel = act[i].name;
            run_capture(&act[i], &c, &M, sh, si, shi, 1, &ref_full, &ref_wo);
            run_capture(&act[i], &c, &M, sh, si, shi, 8, &ref_full, &ref_wo);
        }
    for (int i = 0; i < n_act; i++) {
        if (act[i].k)
            act[i].k->release(act[i].state);
        else
            host_release(&act[i].host);
    }
    if (ref_full)
        qs_kernel_reference_moe.release(ref_full);
    if (ref_wo)
        qs_kernel_reference_moe.release(ref_wo);
    free(ref);
    free(ref2);
    free(y);
    free(bits);
    free(bits2);
    free_moe(&M);
}

static int usage(const char *prog)
{
    fprintf(stderr, "usage: %s [--quick] [--kernel marlin|cublaslt|emulation] [--seed N] [--self-check]\n", prog);
    return 2;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick"))
            g_quick = true;
        else if (!strcmp(argv[i], "--self-check"))
            g_self_check = true;
        else if (!strcmp(argv[i], "--kernel") && i + 1 < argc)
            g_only = argv[++i];
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            g_base_seed = strtoull(argv[++i], NULL, 0);
        else
            return usage(argv[0]);
    }
    if (!g_self_check) {
        if (qs_cuda_device_count() == 0) {
            printf("skip: no CUDA device (%s)\n0 passed, 0 failed, 1 skipped\n", qs_cuda_unavailable_reason());
            return 0;
        }
        qs_err err;
        if (qs_cuda_device_caps(0, &g_caps, &err)) {
            printf("error: %s\n", err.msg);
            return 1;
        }
        printf("device: %s (sm_%d%d, %d SMs)\n", g_caps.name, g_caps.cc_major, g_caps.cc_minor, g_caps.sm_count);
    }
    init_tables();
    for (int shi = 0; shi < N_SHAPES; shi++)
        for (int si = 0; si < N_SCHEMES; si++)
            run_scheme_shape(si, shi);
    if (g_stream)
        qs_ops_cuda()->graph->stream_destroy(g_stream);
    printf("%d passed, %d failed, %d skipped\n", g_passed, g_failed, g_skipped);
    return g_failed ? 1 : 0;
}
