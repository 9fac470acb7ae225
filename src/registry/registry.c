/* registry.c — the selection rules of ../shared/BACKENDS.md for one (layer kind, scheme):
 *  1. the requested backend is the per-scheme override, else --linear-backend (--moe-backend);
 *  2. an explicit backend keeps only its own kernels; with none for the scheme, warn and select
 *     automatically — except on weight-only schemes, where a backend outside the whitelist is an
 *     error ("cublaslt does not support W4A16");
 *  3. an explicit backend whose kernels all refuse fails with every candidate's reason;
 *  4. QSERVE_DISABLED_KERNELS refuses kernels by name;
 *  5. --batch-invariant refuses kernels that are not batch-invariant and beats an explicit backend
 *     that has no batch-invariant kernel (with a warning);
 *  6. unknown names are errors (registry_names.c).
 * Every candidate of the priority list is recorded with its status and a sentence saying why. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "registry/registry.h"
#include "util/names.h"

static void add_warning(qs_selection *sel, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add_warning(qs_selection *sel, const char *fmt, ...)
{
    if (sel->n_warnings >= QS_MAX_WARNINGS)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sel->warnings[sel->n_warnings++], QS_WARNING_MAX, fmt, ap);
    va_end(ap);
}

static const char *backend_flag(qs_layer_kind kind) { return kind == QS_KIND_MOE ? "--moe-backend" : "--linear-backend"; }

static void describe_device(const qs_device_caps *dev, char *buf, size_t cap)
{
    if (dev->platform == QS_PLATFORM_CUDA)
        snprintf(buf, cap, "%s (sm_%d%d%s)", dev->name[0] ? dev->name : "CUDA GPU", dev->cc_major, dev->cc_minor,
                 dev->assumed ? ", assumed" : "");
    else
        snprintf(buf, cap, "%s", dev->name[0] ? dev->name : "CPU");
}

/* Rule 1: which backend this layer type asks for, and who asked. */
static void resolve_requested(const qs_kernel_config *kc, qs_layer_kind kind, qs_scheme scheme, qs_selection *sel)
{
    const char *b = kind == QS_KIND_MOE ? kc->moe_backend : kc->linear_backend;
    snprintf(sel->requested_by, sizeof sel->requested_by, "%s", backend_flag(kind));
    if (kind == QS_KIND_LINEAR && kc->linear_backend_per_quant[scheme][0]) {
        b = kc->linear_backend_per_quant[scheme];
        snprintf(sel->requested_by, sizeof sel->requested_by, "linear_backend_per_quant[%s]", qs_scheme_name(scheme));
    }
    snprintf(sel->requested, sizeof sel->requested, "%s", b[0] ? b : "auto");
    qs_normalize_name(sel->requested);
    if (!strcmp(sel->requested, "auto"))
        snprintf(sel->requested_by, sizeof sel->requested_by, "auto");
    snprintf(sel->used, sizeof sel->used, "%s", sel->requested);
}

/* True if `name` appears in any priority list or descriptor of (platform, kind). */
static bool has_kernels_on_platform(const char *name, qs_platform platform, qs_layer_kind kind)
{
    if (qs_registry_find(name, platform, kind))
        return true;
    for (int s = 0; s < QS_SCHEME_COUNT; s++) {
        int n;
        const char *const *l = qs_registry_priority_list(platform, kind, (qs_scheme)s, &n);
        for (int i = 0; i < n; i++)
            if (!strcmp(l[i], name))
                return true;
    }
    return false;
}

/* Does the list hold a built-in, batch-invariant kernel named `name` for the scheme? */
static bool has_batch_invariant(const char *name, const qs_selection *sel)
{
    const qs_kernel *k = qs_registry_find_for_scheme(name, sel->platform, sel->kind, sel->scheme);
    return k && k->batch_invariant && (k->schemes & (1u << sel->scheme));
}

/* Rule 4/5 and the descriptor's own checks. Returns 1 if the kernel can run every given layer. */
static int evaluate(const qs_kernel_config *kc, const qs_device_caps *dev, qs_candidate *c, qs_scheme scheme,
                    const qs_linear_desc *const *linears, int n_linears, const qs_moe_desc *const *moes, int n_moes)
{
    const qs_kernel *k = c->kernel;
    char why[QS_REASON_MAX] = "";
    if (!k) {
        snprintf(c->reason, sizeof c->reason, "not built into this binary.");
        return 0;
    }
    if (!(k->schemes & (1u << scheme))) {
        snprintf(c->reason, sizeof c->reason, "does not implement %s layers.", qs_scheme_name(scheme));
        return 0;
    }
    if (qs_kernel_config_is_disabled(kc, k->name)) {
        snprintf(c->reason, sizeof c->reason, "disabled by QSERVE_DISABLED_KERNELS.");
        return 0;
    }
    if (kc->batch_invariant && !k->batch_invariant) {
        snprintf(c->reason, sizeof c->reason, "is not batch-invariant, and --batch-invariant is set.");
        return 0;
    }
    if (k->is_supported && !k->is_supported(dev, why, sizeof why)) {
        snprintf(c->reason, sizeof c->reason, "%s", why[0] ? why : "is not supported on this device.");
        return 0;
    }
    for (int i = 0; i < n_linears && k->can_implement_linear; i++) {
        if (!linears[i])
            continue;
        why[0] = '\0';
        if (!k->can_implement_linear(linears[i], why, sizeof why)) {
            snprintf(c->reason, sizeof c->reason, "cannot implement %s: %s", linears[i]->name,
                     why[0] ? why : "the layer is not supported.");
            return 0;
        }
    }
    for (int i = 0; i < n_moes && k->can_implement_moe; i++) {
        if (!moes[i])
            continue;
        why[0] = '\0';
        if (!k->can_implement_moe(moes[i], why, sizeof why)) {
            snprintf(c->reason, sizeof c->reason, "cannot implement %s: %s", moes[i]->name,
                     why[0] ? why : "the layer is not supported.");
            return 0;
        }
    }
    return 1;
}

/* Builds the failure message: what was asked, then every candidate's reason. */
static int fail_with_reasons(const qs_selection *sel, const qs_device_caps *dev, qs_err *err)
{
    char devname[160], msg[QS_ERR_MSG_MAX];
    describe_device(dev, devname, sizeof devname);
    size_t len = (size_t)snprintf(msg, sizeof msg, "no %s kernel can run %s layers on %s", qs_layer_kind_name(sel->kind),
                                  qs_scheme_name(sel->scheme), devname);
    if (strcmp(sel->used, "auto") && len < sizeof msg)
        len += (size_t)snprintf(msg + len, sizeof msg - len, " with %s=%s", sel->requested_by, sel->used);
    if (sel->n_candidates == 0 && len < sizeof msg)
        len += (size_t)snprintf(msg + len, sizeof msg - len, ": the %s platform has no kernel for them",
                                qs_platform_name(sel->platform));
    for (int i = 0; i < sel->n_candidates && len < sizeof msg; i++) {
        /* reasons are sentences; drop the final period inside the ';'-separated list */
        const char *r = sel->candidates[i].reason;
        int rl = (int)strlen(r);
        if (rl > 0 && r[rl - 1] == '.')
            rl--;
        len += (size_t)snprintf(msg + len, sizeof msg - len, "%s %s: %.*s", i ? ";" : ". Candidates:",
                                sel->candidates[i].name, rl, r);
    }
    return qs_errf(err, "%s", msg);
}

int qs_registry_select_for_layers(const qs_kernel_config *kc, const qs_device_caps *dev, qs_layer_kind kind,
                                  qs_scheme scheme, const qs_linear_desc *const *linears, int n_linears,
                                  const qs_moe_desc *const *moes, int n_moes, qs_selection *sel, qs_err *err)
{
    memset(sel, 0, sizeof *sel);
    sel->kind = kind;
    sel->scheme = scheme;
    sel->platform = dev ? dev->platform : QS_PLATFORM_CPU;
    if (!kc || !dev)
        return qs_errf(err, "kernel selection: missing kernel config or device");
    if ((int)scheme < 0 || scheme >= QS_SCHEME_COUNT)
        return qs_errf(err, "kernel selection: unknown scheme %d", (int)scheme);
    resolve_requested(kc, kind, scheme, sel);
    if (qs_registry_check_backend_name(sel->requested, kind, sel->requested_by, err))
        return -1;

    int n_list;
    const char *const *list = qs_registry_priority_list(sel->platform, kind, scheme, &n_list);
    bool explicit_backend = strcmp(sel->used, "auto") != 0;

    /* Rule 2 exception: weight-only layers only run on weight-only kernels. */
    if (explicit_backend && qs_scheme_is_weight_only(scheme) && !qs_registry_is_weight_only_kernel(sel->used) &&
        has_kernels_on_platform(sel->used, sel->platform, kind))
        return qs_errf(err, "%s=%s: %s does not support %s (%s layers are weight-only; use one of: marlin, emulation)",
                       sel->requested_by, sel->used, sel->used, scheme == QS_SCHEME_NVFP4_W4A16 ? "W4A16" : "W8A16",
                       qs_scheme_name(scheme));

    bool in_list = false;
    for (int i = 0; i < n_list; i++)
        in_list |= !strcmp(list[i], sel->used);

    /* Rule 5: batch invariance beats an explicit backend that cannot provide it. */
    if (explicit_backend && kc->batch_invariant && in_list && !has_batch_invariant(sel->used, sel)) {
        add_warning(sel,
                    "--batch-invariant overrides %s=%s for %s %s layers: %s is not batch-invariant; choosing among "
                    "batch-invariant kernels instead.",
                    sel->requested_by, sel->used, qs_scheme_name(scheme), qs_layer_kind_name(kind), sel->used);
        snprintf(sel->used, sizeof sel->used, "auto");
        explicit_backend = false;
    }
    /* Rule 2: a backend with no kernel for this layer type leaves it to automatic selection. */
    if (explicit_backend && !in_list) {
        add_warning(sel, "%s=%s has no kernel for %s %s layers on %s; using automatic selection for that layer type.",
                    sel->requested_by, sel->used, qs_scheme_name(scheme), qs_layer_kind_name(kind),
                    qs_platform_name(sel->platform));
        snprintf(sel->used, sizeof sel->used, "auto");
        explicit_backend = false;
    }

    for (int i = 0; i < n_list && sel->n_candidates < QS_MAX_CANDIDATES; i++) {
        qs_candidate *c = &sel->candidates[sel->n_candidates++];
        c->name = list[i];
        c->kernel = qs_registry_find_for_scheme(list[i], sel->platform, kind, scheme);
        if (explicit_backend && strcmp(list[i], sel->used)) {
            c->status = QS_CAND_FILTERED;
            snprintf(c->reason, sizeof c->reason, "not the requested backend (%s=%s).", sel->requested_by, sel->used);
            continue;
        }
        if (!evaluate(kc, dev, c, scheme, linears, n_linears, moes, n_moes)) {
            c->status = QS_CAND_REFUSED;
            continue;
        }
        c->status = sel->kernel ? QS_CAND_PASSED : QS_CAND_CHOSEN;
        if (!sel->kernel)
            sel->kernel = c->kernel;
    }
    if (!sel->kernel)
        return fail_with_reasons(sel, dev, err);
    return 0;
}

int qs_registry_select(const qs_kernel_config *kc, const qs_device_caps *dev, qs_layer_kind kind, qs_scheme scheme,
                       const qs_linear_desc *example, const qs_moe_desc *moe_example, qs_selection *out, qs_err *err)
{
    const qs_linear_desc *lin[1] = {example};
    const qs_moe_desc *moe[1] = {moe_example};
    return qs_registry_select_for_layers(kc, dev, kind, scheme, lin, example ? 1 : 0, moe, moe_example ? 1 : 0, out,
                                         err);
}
